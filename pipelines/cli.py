"""Console commands: `vlnkit <job> [flags]` and `vlnkit-<job> [flags]`, for every job; `vlnkit published D`
and `vlnkit verify D` for an output folder.

Installed as entry points, they import the jobs from the installed package whatever the current
folder holds (`python -m pipelines.score` run inside a repository that has its own `transforms.py`
would import that file instead: Python puts the current folder first on the module path).

    $ vlnkit build_r4r --runner=DirectRunner
    $ vlnkit-score --predictions=preds.json --dataset=R2R_val_unseen.json --connectivity_dir=connectivity/
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys

JOBS = (
    "build_r4r",
    "score",
    "random_baseline",
    "perturb",
    "build_compat",
    "paraphrase",
    "build_probes",
    "score_probes",
    "build_crafty",
    "score_instructions",
    "report",
)


def run_job(job: str, argv: list[str] | None = None) -> dict:
    """Run one job by name with command-line flags (the same as `python -m pipelines.<job>`)."""
    if job not in JOBS:
        raise SystemExit(f"error: unknown job {job!r}; jobs: {', '.join(JOBS)}")
    return importlib.import_module(f"pipelines.{job}").main(argv)


def first_line(job: str) -> str:
    """The first line of a job's docstring, read from its source: listing the jobs imports none of them."""
    with open(importlib.util.find_spec(f"pipelines.{job}").origin, encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def main(argv: list[str] | None = None) -> None:
    """`vlnkit <job> [flags]`; `vlnkit --help` lists the jobs."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: vlnkit <job> [flags]   (vlnkit <job> --help lists a job's flags)\n\njobs:")
        for job in JOBS:
            print(f"  {job:<16} {first_line(job)}")
        print(f"  {'published':<16} Print the files of an output folder's published version (vlnkit published D)")
        print(f"  {'verify':<16} Re-check a published version against its manifest (vlnkit verify D [--all])")
        print(f"  {'flink-cluster':<16} Start, stop or show a Flink session cluster here (vlnkit flink-cluster start)")
        print(
            "\nEach job is also its own command: vlnkit-build-r4r, vlnkit-score, ... (and python -m pipelines.<job>)."
        )
        return
    if argv[0] == "published":  # not a job: reads an output folder (Beam-free for local folders)
        from vlnkit.io.layout import main as published_main

        raise SystemExit(_to_a_pipe(published_main, argv[1:]))
    if argv[0] == "flink-cluster":  # not a job: a Flink session cluster on this machine (docs/cloud.md)
        from vlnkit.cluster.flink import main as cluster_main

        raise SystemExit(cluster_main(argv[1:]))
    if argv[0] == "verify":  # not a job: files, sizes, checksums and rows against the manifest
        from vlnkit.io.integrity import main as verify_main

        raise SystemExit(_to_a_pipe(verify_main, argv[1:]))
    _as_command(lambda: run_job(argv[0].replace("-", "_"), argv[1:]))


def _to_a_pipe(main, argv: list[str]) -> int:
    """Run a listing command; a reader that stops reading (`vlnkit published D | head -1`) ends it quietly
    with its exit code, not a BrokenPipeError traceback (later writes go to /dev/null)."""
    import os

    try:
        code = main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return code


def _as_command(main) -> None:
    from pipelines.command import run_as_command  # not at import time: setup.py reads JOBS with no Beam installed

    run_as_command(main)


def _entry(job: str):
    def entry() -> None:
        _as_command(lambda: run_job(job, sys.argv[1:]))

    entry.__name__ = f"{job}_main"
    return entry


# One function per job for the `vlnkit-<job>` console scripts declared in setup.py.
for _job in JOBS:
    globals()[f"{_job}_main"] = _entry(_job)
