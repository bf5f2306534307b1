"""Dataflow Flex Templates of the jobs: each job's template metadata, made from the job's own flags, and the
entry point Dataflow's Flex Template launcher runs.

A Flex Template is a container image (the repository's `Dockerfile`, built once per job with
`--build-arg JOB=<job>`) and a spec file naming the image and the template's parameters. The parameters are
the job's flags, as `python -m pipelines.<job> --help` lists them: `metadata(job)` builds them from the job's
parser, and `flex_template/<job>.json` holds them as shipped (`python -m pipelines.flex_template` writes them
again; a test checks that they equal what the jobs declare). docs/cloud.md has the build, run and Cloud
Scheduler commands.

What the launcher hands a job, and how `launch` takes it: Dataflow passes every parameter given as
`--name=value`, once. A switch (`--skip_if_unchanged`) comes as `--name=true` or `--name=false` and becomes
the switch or nothing; a repeatable flag (`--predictions`, `--config`) can be given once, so several agents go
in one value (comma-separated files or a glob, each file its own agent).

    >>> params = {p["name"]: p for p in metadata("score")["parameters"]}
    >>> params["output_dir"]["isOptional"], params["output_dir"]["paramType"]
    (False, 'GCS_WRITE_FOLDER')
    >>> params["keep_repeats"]["regexes"], params["spl_reference"]["regexes"]
    (['^(true|false)$'], ['^(shortest|path)$'])
    >>> switches_as_flags("score", ["--keep_repeats=true", "--skip_if_unchanged=false", "--seed=3"])
    ['--keep_repeats', '--seed=3']
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys

from pipelines.cli import JOBS, first_line
from pipelines.verdict import JobError

FOLDER = "flex_template"  # beside setup.py: <job>.json per job, and main.py, the launcher's Python file
JOB_VARIABLE = "VLNKIT_JOB"  # set by the Dockerfile (--build-arg JOB=...): which job the image launches

# Values the job's own parsing accepts (Python's int() and float(): spaces around, "_" between digits), as
# whole-string patterns the Dataflow service checks at launch time; no flag means an infinity or NaN. Ranges (a
# fraction from 0 to 1, at least one) are the job's to check: it refuses them in one line.
_DIGITS = r"[0-9](_?[0-9])*"
INTEGER = rf"^\s*[+-]?{_DIGITS}\s*$"
NUMBER = rf"^\s*[+-]?({_DIGITS}([.]({_DIGITS})?)?|[.]{_DIGITS})([eE][+-]?{_DIGITS})?\s*$"
_NUMBERS = {
    "int": INTEGER,
    "non_negative_int": rf"^\s*([+]?{_DIGITS}|-0(_?0)*)\s*$",
    "at_least_one": r"^\s*[+]?(0(_?0)*_?)?[1-9](_?[0-9])*\s*$",
    "float": NUMBER,
    "fraction": NUMBER,
    "positive_number": NUMBER,
}
SWITCH = "^(true|false)$"
# On Dataflow the output folder must outlive the launcher's container: a bucket, never a local folder.
OUTPUT_FOLDER = r"^gs://[^\n\r]+$"


def _flags(job: str) -> list[argparse.Action]:
    """The job's flags as --help lists them: not --help itself, not the hidden spellings kept for one release."""
    parser = importlib.import_module(f"pipelines.{job}").JOB.parser()
    return [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS and a.option_strings
    ]


def flag_name(action: argparse.Action) -> str:
    """The name a flag goes by on the command line (its first long spelling), without the dashes."""
    return next(s for s in action.option_strings if s.startswith("--"))[2:]


def _parameter(action: argparse.Action) -> dict:
    name = flag_name(action)
    switch = isinstance(action, argparse._StoreTrueAction)
    parts = [" ".join((action.help or "").split()).rstrip(".")]
    if isinstance(action, argparse._AppendAction):
        parts.append("In a Flex Template given once (several files: one comma-separated value or a glob)")
    default = "false" if switch else action.default
    if default is not None and name != "output_dir":  # its default is a local folder, lost with the launcher
        parts.append(f"Default: {default}")
    param: dict = {
        "name": name,
        "label": name.replace("_", " ").capitalize(),
        "helpText": ". ".join(parts) + ".",
        "isOptional": name != "output_dir",
    }
    type_name = getattr(action.type, "__name__", None)
    if name == "output_dir":
        param.update(paramType="GCS_WRITE_FOLDER", regexes=[OUTPUT_FOLDER])
    elif switch:
        param.update(paramType="BOOLEAN", regexes=[SWITCH])
    elif action.choices:
        values = [str(c) for c in action.choices]
        param.update(
            paramType="ENUM",
            regexes=["^(" + "|".join(re.escape(v) for v in values) + ")$"],
            enumOptions=[{"value": v} for v in values],
        )
    elif type_name in _NUMBERS:
        param.update(paramType="NUMBER", regexes=[_NUMBERS[type_name]])
    else:
        param.update(paramType="TEXT")
    if default is not None and name != "output_dir":
        param["defaultValue"] = str(default)
    return param


def metadata(job: str) -> dict:
    """The Flex Template metadata of one job: its name, description and one parameter per flag."""
    return {
        "name": f"vlnkit {job}",
        "description": first_line(job),
        "parameters": [_parameter(a) for a in _flags(job)],
    }


def metadata_text(job: str) -> str:
    return json.dumps(metadata(job), indent=2, ensure_ascii=False) + "\n"


def metadata_path(job: str, root: str = ".") -> str:
    return os.path.join(root, FOLDER, f"{job}.json")


def switches_as_flags(job: str, argv: list[str]) -> list[str]:
    """The launcher's `--switch=true|false` as the job's parser takes a switch: the bare flag, or nothing."""
    switches = {flag_name(a) for a in _flags(job) if isinstance(a, argparse._StoreTrueAction)}
    out = []
    for arg in argv:
        name, sep, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if sep and name in switches:
            if value.lower() not in ("true", "false"):
                raise JobError(f"--{name}={value}: a switch takes true or false")
            if value.lower() == "true":
                out.append(f"--{name}")
        else:
            out.append(arg)
    return out


def launch(argv: list[str] | None = None) -> None:
    """The Flex Template entry point (`flex_template/main.py`): run the image's job on the launcher's flags.

    Marks the process as a Flex Template launch (`pipelines.launch_checks.FLEX_TEMPLATE_LAUNCH`): the
    launcher's own --template_location is then where the job description goes, made afresh at every launch."""
    from pipelines.cli import run_job
    from pipelines.command import _refuse, run_as_command
    from pipelines.launch_checks import FLEX_TEMPLATE_LAUNCH

    job = os.environ.get(JOB_VARIABLE, "")
    if job not in JOBS:
        raise SystemExit(f"error: {JOB_VARIABLE}={job!r} names no job; jobs: {', '.join(JOBS)}")
    given = list(sys.argv[1:] if argv is None else argv)
    try:
        flags = switches_as_flags(job, given)
    except JobError as exc:
        _refuse(job, exc)
    os.environ[FLEX_TEMPLATE_LAUNCH] = "1"
    run_as_command(lambda: run_job(job, flags))


def main(argv: list[str] | None = None) -> int:
    """`python -m pipelines.flex_template [--check]`: write flex_template/<job>.json for every job from its
    flags (run from the project root), or with --check only say which differ (exit 1)."""
    parser = argparse.ArgumentParser(prog="python -m pipelines.flex_template", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="Change nothing; exit 1 if a file differs")
    parser.add_argument("--root", default=".", help="The project root (the folder holding setup.py)")
    args = parser.parse_args(argv)
    stale = []
    for job in JOBS:
        path, text = metadata_path(job, args.root), metadata_text(job)
        try:
            with open(path, encoding="utf-8") as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        if same:
            continue
        stale.append(path)
        if not args.check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    for path in stale:
        print(f"{'differs from its job' if args.check else 'written'}: {path}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
