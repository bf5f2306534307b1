"""What every job shares: config profiles, output-folder hygiene, running, the manifest and `_SUCCESS`.

A run is complete only when `_SUCCESS` exists in its output folder: it is removed first and
written last, after the pipeline finished and the manifest was written, so a failed or
interrupted run never looks complete.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import subprocess
import sys
import time

import apache_beam as beam
import yaml
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineState

import vlnkit
from vlnkit.io import fileio

SUCCESS = "_SUCCESS"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
log = logging.getLogger("vlnkit")


class JobError(RuntimeError):
    """Something structural is wrong (no input, no graphs, bad flags): the job cannot run at all."""


class JobOptions(PipelineOptions):
    """Flags every job shares (defined once here; a job's own options class adds the rest)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        # Beam parses the flags of every PipelineOptions subclass with one parser, so two jobs
        # imported in one process (tests, a scheduler) may declare the same flag: let the later
        # declaration win instead of failing. Shared flags must therefore not carry differing
        # argparse defaults; jobs resolve such defaults in code (see `default_output_dir`).
        for container in (parser, getattr(parser, "_optionals", None), getattr(parser, "_positionals", None)):
            if container is not None:  # argparse's groups keep their own copy of the handler
                container.conflict_handler = "resolve"
        parser.add_argument(
            "--config", action="append", help="YAML profile of flags (see configs/); repeatable; explicit flags win"
        )
        parser.add_argument(
            "--skip_if_unchanged",
            action="store_true",
            help="Exit early when --output_dir already holds a complete run with the same inputs, options and code",
        )


def default_output_dir(job: str) -> str:
    """Jobs leave `--output_dir` without an argparse default (Beam merges every job's flags into one
    parser, so one job's default would leak into another's) and resolve it here instead."""
    return os.path.join("output", job)


# ---------------------------------------------------------------------------- options
def config_to_argv(path: str) -> list[str]:
    """A YAML profile of `flag: value` pairs as command-line arguments (lists become repeated flags)."""
    try:
        with open(path) as f:
            data = yaml.safe_load(f) or {}
    except OSError as exc:
        raise JobError(f"--config {path}: cannot read ({exc})") from exc
    except yaml.YAMLError as exc:
        raise JobError(f"--config {path}: not valid YAML ({exc})") from exc
    if not isinstance(data, dict):
        raise JobError(f"--config {path}: expected a mapping of flag names to values")
    argv = []
    for key, value in data.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
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
    packaged = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs", os.path.basename(path)
    )
    try:
        import configs as _configs

        packaged = os.path.join(os.path.dirname(_configs.__file__), os.path.basename(path))
    except ImportError:
        pass
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


def parse_options(options_cls: type[PipelineOptions], argv: list[str] | None):
    argv = expand_config(list(sys.argv[1:] if argv is None else argv))
    options = PipelineOptions(argv)
    return options, options.view_as(options_cls)


# ---------------------------------------------------------------------------- files
def require_flags(opts, *names: str) -> None:
    """Flags without which a job cannot run at all."""
    for name in names:
        if not getattr(opts, name, None):
            raise JobError(f"--{name} is required")


def require_inputs(flag: str, patterns: str) -> list[tuple[str, int]]:
    files = fileio.match(patterns)
    if not files:
        raise JobError(f"{flag}={patterns}: no file matches")
    return files


def connectivity_files(connectivity_dir: str | None) -> list[tuple[str, int]]:
    """The graph files a run depends on (inputs of the manifest and of --skip_if_unchanged)."""
    if not connectivity_dir:
        return []
    from vlnkit.navigation.graph import CONNECTIVITY_SUFFIX

    return fileio.match(fileio.join(connectivity_dir, "*" + CONNECTIVITY_SUFFIX))


def require_graphs(connectivity_dir: str) -> list[tuple[str, int]]:
    """The folder's graph files; none at all is structural (the job cannot run)."""
    graphs = connectivity_files(connectivity_dir)
    if not graphs:
        raise JobError(f"--connectivity_dir={connectivity_dir}: no *_connectivity.json files found")
    return graphs


def file_digest(path: str) -> str:
    h = hashlib.sha256()
    with fileio.open_read(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def describe_inputs(files: list[tuple[str, int]]) -> list[dict]:
    return [{"path": p, "bytes": size, "sha256": file_digest(p)} for p, size in files]


def clear_outputs(output_dir: str, prefixes: list[str]) -> None:
    """Remove `_SUCCESS` first, then what a previous run of this job left (stale shards would mix in)."""
    names = [SUCCESS, MANIFEST, SUMMARY]
    patterns = [fileio.join(output_dir, n) for n in names]
    patterns += [fileio.join(output_dir, f"{p}-*-of-*") for p in prefixes]
    for pattern in patterns:
        existing = [p for p, _ in fileio.match(pattern)]
        if existing:
            FileSystems.delete(existing)


def code_version() -> str:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        rev = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return f"vlnkit {vlnkit.__version__} ({rev}{'-dirty' if dirty else ''})"
    except (OSError, subprocess.SubprocessError):
        return f"vlnkit {vlnkit.__version__}"


def describe_output(path: str, size: int) -> dict:
    """Path, size, row count and (for Parquet) the declared schema name and version."""
    out = {"path": path, "bytes": size, "rows": None}
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        with fileio.open_read(path) as f:
            meta = pq.ParquetFile(f).metadata
        out["rows"] = meta.num_rows
        kv = meta.metadata or {}
        out["schema"] = kv.get(b"vlnkit.schema", b"").decode() or None
        out["schema_version"] = kv.get(b"vlnkit.schema_version", b"").decode() or None
    elif path.endswith(".jsonl"):
        with fileio.open_read(path) as f:
            out["rows"] = sum(1 for line in f if line.strip())
    return out


def _redacted_options(options: PipelineOptions) -> dict:
    secret_words = ("credential", "token", "secret", "password", "key_file", "api_key")
    out = {}
    for k, v in sorted(options.get_all_options(drop_default=False).items()):
        out[k] = "<redacted>" if v is not None and any(w in k.lower() for w in secret_words) else v
    return out


def metrics_table(result) -> list[dict]:
    """Beam counters of a finished pipeline as rows (namespace, name, value)."""
    try:
        counters = result.metrics().query()["counters"]
    except Exception:  # some runners do not support metric queries
        return []
    totals: dict[tuple[str, str], int] = {}
    for c in counters:
        key = (c.key.metric.namespace, c.key.metric.name)
        value = c.committed if c.committed is not None else c.attempted
        totals[key] = totals.get(key, 0) + (value or 0)
    return [{"namespace": ns, "name": name, "value": v} for (ns, name), v in sorted(totals.items())]


def format_table(rows: list[tuple[str, object]], title: str) -> str:
    width = max((len(k) for k, _ in rows), default=0)
    lines = [title, "-" * len(title)]
    for k, v in rows:
        if isinstance(v, float):
            v = f"{v:.4f}"
        lines.append(f"  {k.ljust(width)}  {v}")
    return "\n".join(lines)


def print_outputs(output_dir: str, dead_letters: int, extra: str = "") -> None:
    """The closing lines of every job: where the outputs are and, if any, where the dead letters are."""
    print(f"Output: {output_dir}{extra}")
    if dead_letters:
        print(f"{dead_letters} record(s) could not be used: see {fileio.join(output_dir, 'dead_letter-*.jsonl')}")


# ---------------------------------------------------------------------------- running
_NOT_FINGERPRINTED = {"config", "skip_if_unchanged"}


def job_settings(job_options: PipelineOptions | None) -> dict:
    """The values of a job's own flags (its options class), which together with the inputs decide its output."""
    if job_options is None:
        return {}
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    type(job_options)._add_argparse_args(parser)
    dests = sorted({a.dest for a in parser._actions} - _NOT_FINGERPRINTED)
    return {d: getattr(job_options, d, None) for d in dests}


def fingerprint(job: str, settings: dict, described_inputs: list[dict]) -> str:
    blob = json.dumps(
        {
            "job": job,
            "code": code_version(),
            "settings": settings,
            "inputs": [(i["path"], i["sha256"]) for i in described_inputs],
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _previous_run(output_dir: str) -> dict | None:
    """The manifest of a complete previous run in output_dir, or None."""
    if not fileio.exists(fileio.join(output_dir, SUCCESS)):
        return None
    try:
        with fileio.open_read(fileio.join(output_dir, MANIFEST)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run_job(
    job: str,
    options: PipelineOptions,
    output_dir: str,
    output_prefixes: list[str],
    inputs: list[tuple[str, int]],
    build,
    job_options: PipelineOptions | None = None,
    extra_outputs: tuple[str, ...] = (),
    settings: dict | None = None,
) -> dict:
    """Build and run a pipeline, then write the manifest and, last, `_SUCCESS`. Returns the summary.

    `build(pipeline)` wires the job; it must write `summary.json` into `output_dir`. `inputs` are
    every file the output depends on; with `job_options` (the job's own options view) or `settings`
    (the job's own flags as a dict, for jobs that parse their flags themselves) a rerun with
    `--skip_if_unchanged`, identical inputs, settings and code exits early (if its outputs, and
    `extra_outputs` written outside output_dir, are all still there).
    """
    started = time.time()
    described = describe_inputs(inputs)
    known_settings = job_options is not None or settings is not None
    if settings is None:
        settings = job_settings(job_options)
    settings = {k: v for k, v in sorted(settings.items()) if k not in _NOT_FINGERPRINTED}
    shared = options.view_as(JobOptions)
    this_run = fingerprint(job, settings, described)
    if shared.skip_if_unchanged and not known_settings:
        log.warning("%s: --skip_if_unchanged needs the job's settings to compare; running anyway", job)
    elif shared.skip_if_unchanged:
        previous = _previous_run(output_dir)
        if (
            previous
            and previous.get("fingerprint") == this_run
            and all(fileio.exists(o["path"]) for o in previous.get("outputs", []))
        ):
            print(f"{job}: inputs, options and code unchanged since the complete run in {output_dir}; skipping")
            return {**previous["summary"], "skipped": True}
    log.info("%s: running on %d input file(s), writing to %s", job, len(inputs), output_dir)
    clear_outputs(output_dir, output_prefixes)
    pipeline = beam.Pipeline(options=options)
    build(pipeline)
    result = pipeline.run()
    state = result.wait_until_finish()
    if state not in (PipelineState.DONE, None):
        raise JobError(f"{job}: pipeline ended in state {state}; output in {output_dir} is incomplete")
    summary_path = fileio.join(output_dir, SUMMARY)
    with fileio.open_read(summary_path) as f:
        summary = json.load(f)
    outputs = []
    for prefix in output_prefixes:
        for path, size in fileio.match(fileio.join(output_dir, f"{prefix}-*-of-*")):
            outputs.append(describe_output(path, size))
    for path, size in fileio.match(list(extra_outputs)):
        outputs.append(describe_output(path, size))
    counters = metrics_table(result)
    if counters:
        print(format_table([(f"{c['namespace']}/{c['name']}", c["value"]) for c in counters], "Beam counters"))
    manifest = {
        "job": job,
        "fingerprint": this_run,
        "settings": settings,
        "code_version": code_version(),
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(time.time() - started, 3),
        "options": _redacted_options(options),
        "inputs": described,
        "outputs": outputs,
        "counters": counters,
        "summary": summary,
    }
    with fileio.open_write(fileio.join(output_dir, MANIFEST)) as f:
        f.write(json.dumps(manifest, indent=2, sort_keys=True, default=str).encode())
    with fileio.open_write(fileio.join(output_dir, SUCCESS)) as f:
        f.write(b"")
    return summary


def main_wrapper(main):
    """Run a job's main; structural errors end the process with one clear line, not a traceback."""

    def wrapped(argv=None):
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("apache_beam").setLevel(logging.WARNING)
        try:
            return main(argv)
        except JobError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapped
