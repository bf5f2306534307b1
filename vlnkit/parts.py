"""The parts `pip install` cannot bring, fetched once at install time and checked: `python -m vlnkit.parts`.

The README's install command is `python -m pip install -e ".[test]" && python -m vlnkit.parts`. Every part
here is pinned by version and sha256 and lands in a cache folder of this
machine; a part already there and matching is kept, so a second run costs seconds. Nothing is fetched
while a job or a test runs: each user of a part checks it and, when it is missing, names this command.

- `caption`: METEOR 1.5's and SPICE 1.0's jars from the sha256-pinned pycocoevalcap wheel, and Stanford
  CoreNLP 3.6.0 with its models from Maven Central, for the score_instructions job (`vlnkit.captioning.jars`);
- `flink`: Beam 2.62.0's Flink job server, the unshaded runner and every jar it depends on, resolved from
  Maven Central by Maven and checked against a committed sha256 list, and the job server's class loader, compiled
  from the project's own Java source with the JDK's javac (`vlnkit.cluster.java_parts`).

Written here rather than as a shell script so that the one list of parts is Python the tests can read,
and the same command works in any virtual environment.
"""

from __future__ import annotations

import argparse
from pathlib import Path

PARTS = ("caption", "flink")


def fetch(part: str) -> Path:
    if part == "caption":
        from vlnkit.captioning.jars import fetch as fetch_caption_jars

        return fetch_caption_jars(spice=True)
    if part == "flink":
        from vlnkit.cluster.java_parts import build_unlisted_loader, fetch_job_server_jars

        folder = fetch_job_server_jars()
        build_unlisted_loader()
        return folder
    raise ValueError(f"unknown part {part!r}; the parts are {', '.join(PARTS)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlnkit.parts", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "parts",
        nargs="*",
        metavar="PART",
        help=f"which parts (default: all of {', '.join(PARTS)})",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part {unknown[0]!r}; the parts are {', '.join(PARTS)}")
    wanted = args.parts or list(PARTS)
    for part in wanted:
        print(f"{part}: {fetch(part)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
