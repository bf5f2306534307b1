"""The parts `pip install` cannot bring, fetched once at install time and checked: `python -m vlnkit.parts`.

The README's install command is `python -m pip install -e ".[test]" && python -m vlnkit.parts`. Every part
here is pinned (a version and a sha256, or a version range on PyPI) and lands in a cache folder of this
machine; a part already there and matching is kept, so a second run costs seconds. Nothing is fetched
while a job or a test runs: each user of a part checks it and, when it is missing, names this command.

- `caption`: METEOR 1.5's and SPICE 1.0's jars from the sha256-pinned pycocoevalcap wheel, and Stanford
  CoreNLP 3.6.0 with its models from Maven Central, for the score_instructions job (`vlnkit.captioning.jars`);
- `flink`: Beam 2.62.0's Flink job server, the unshaded runner and every jar it depends on, resolved from
  Maven Central by Maven and checked against a committed sha256 list (`vlnkit.cluster.java_parts`);
- `hf-datasets` (with pytest installed, the `test` extra): Hugging Face's `datasets`, installed apart from
  the project (pip's `--target`), for the dataset-card test; every `datasets` release needs a dill newer
  than Beam 2.62 allows, so one environment cannot hold both.

Written here rather than as a shell script so that the one list of parts is Python the tests can read,
and the same command works in any virtual environment.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

PARTS = ("caption", "flink", "hf-datasets")
HF_DATASETS_REQUIREMENT = "datasets>=4,<6"


def hf_datasets_dir() -> Path:
    """Where the dataset-card test finds Hugging Face's `datasets` ($VLNKIT_HF_DATASETS or the cache)."""
    return Path(os.environ.get("VLNKIT_HF_DATASETS") or os.path.expanduser("~/.cache/vlnkit/hf-datasets"))


def fetch_hf_datasets() -> Path:
    folder = hf_datasets_dir()
    if not (folder / "datasets").is_dir():
        pip = [sys.executable, "-m", "pip", "install", "-q", "--target", str(folder), HF_DATASETS_REQUIREMENT]
        subprocess.run(pip, check=True)
    return folder


def fetch(part: str) -> Path:
    if part == "caption":
        from vlnkit.captioning.jars import fetch as fetch_caption_jars

        return fetch_caption_jars(spice=True)
    if part == "flink":
        from vlnkit.cluster.java_parts import fetch_job_server_jars

        return fetch_job_server_jars()
    if part == "hf-datasets":
        return fetch_hf_datasets()
    raise ValueError(f"unknown part {part!r}; the parts are {', '.join(PARTS)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlnkit.parts", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "parts",
        nargs="*",
        metavar="PART",
        help=f"which parts (default: {', '.join(PARTS[:2])}, and hf-datasets where pytest is installed)",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part {unknown[0]!r}; the parts are {', '.join(PARTS)}")
    wanted = args.parts or [p for p in PARTS if p != "hf-datasets" or importlib.util.find_spec("pytest")]
    for part in wanted:
        print(f"{part}: {fetch(part)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
