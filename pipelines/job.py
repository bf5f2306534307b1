"""What every job shares, declared once: its command line, its checks, its run and its ending.

A job module declares a `Job` (name, docstring, its flags) and a `run(ctx)` function that checks
its inputs through the `Run` context and calls `ctx.execute(build, ...)`. The context owns
everything else, the same way for every job:

- the output folder is checked before anything runs (not a file, writable), and a previous
  `_SUCCESS` there is removed before the first thing that can fail, so a failed rerun never leaves
  an older run looking complete;
- every named input must exist (`ctx.inputs`), graphs are listed once (`ctx.graphs`);
- `--skip_if_unchanged` compares a fingerprint of settings, code and input checksums;
- stale outputs of an earlier run and Beam's temporary folders are removed before the pipeline runs;
- after the pipeline: the run is judged (something usable was read, the dead-lettered fraction is at
  most `--max_failure_fraction`); a failed run gets a manifest saying so and no `_SUCCESS`, exit 3;
  a good one gets `manifest.json` and, last, `_SUCCESS`;
- the Beam counters table and the job's own summary table are printed.

Exit codes: 0 done (or skipped, unchanged), 2 the job cannot run as asked (bad flag, missing
input, unusable output folder), 3 the run finished but failed (see the message and the manifest).
"""

from __future__ import annotations

import argparse
import datetime
import glob
import hashlib
import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineState

import vlnkit
from pipelines.command import Job, run_as_command  # noqa: F401 -- moved there; still importable from here
from pipelines.options import JobError, local_runner, settings
from vlnkit.io import fileio
from vlnkit.io.redact import redact
from vlnkit.navigation.graph import CONNECTIVITY_SUFFIX

SUCCESS = "_SUCCESS"
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
DEAD_LETTER_PREFIX = "dead_letter"
log = logging.getLogger("vlnkit")


class RunFailed(RuntimeError):
    """The pipeline finished, but its result does not count as a successful run (exit code 3)."""


# ---------------------------------------------------------------------------- small shared pieces
def format_table(rows: list[tuple[str, object]], title: str) -> str:
    width = max((len(k) for k, _ in rows), default=0)
    lines = [title, "-" * len(title)]
    for k, v in rows:
        if isinstance(v, float):
            v = f"{v:.4f}"
        lines.append(f"  {k.ljust(width)}  {v}")
    return "\n".join(lines)


def connectivity_files(connectivity_dir: str | None) -> list[tuple[str, int]]:
    """The graph files a run depends on (inputs of the manifest and of --skip_if_unchanged)."""
    if not connectivity_dir:
        return []
    return fileio.match(fileio.join(connectivity_dir, "*" + CONNECTIVITY_SUFFIX))


def file_digest(path: str) -> str:
    h = hashlib.sha256()
    with fileio.open_read(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def describe_inputs(inputs: list[tuple[str, int]]) -> list[dict]:
    """(path, size) pairs -> the manifest's input entries: path, bytes and sha256 of the content."""
    return [{"path": p, "bytes": size, "sha256": file_digest(p)} for p, size in inputs]


def in_background(fn: Callable, *args) -> Future:
    """Run fn(*args) in a daemon thread (a failed run does not wait for it at exit); its Future."""
    future: Future = Future()

    def work() -> None:
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to whoever asks for the result
            future.set_exception(exc)

    threading.Thread(target=work, name="vlnkit-background", daemon=True).start()
    return future


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


def fingerprint(job: str, job_settings: dict, described_inputs: list[dict]) -> str:
    blob = json.dumps(
        {
            "job": job,
            "code": code_version(),
            "settings": job_settings,
            "inputs": [(i["path"], i["sha256"]) for i in described_inputs],
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _delete(patterns: list[str]) -> None:
    for pattern in patterns:
        existing = [p for p, _ in fileio.match(pattern)]
        if existing:
            FileSystems.delete(existing)


def _remove_temporaries(output_dir: str, extra_outputs=()) -> None:
    """What an interrupted or failed run may leave behind: Beam's `beam-temp-*` folders in the output
    folder, and the JSON writer's `<file>.fragments-*` folders beside each file it writes
    (`transforms.write.WriteJsonFile`). Only documented outputs may stay in an output location."""
    patterns = [fileio.join(output_dir, "beam-temp-*")] + [f"{path}.fragments-*" for path in extra_outputs]
    for pattern in patterns:
        if "://" in pattern:
            for r in FileSystems.match([pattern + "/**"]):
                if r.metadata_list:
                    FileSystems.delete([m.path for m in r.metadata_list])
        else:
            for folder in glob.glob(os.path.join(glob.escape(os.path.dirname(pattern)), os.path.basename(pattern))):
                fileio.remove_tree(folder)


def _writable_folder(folder: str, flag: str, name: str) -> None:
    """Create a local folder if needed and check it can be written; `flag` and `name` word the error."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise JobError(f"{flag}: cannot create {name} ({exc.strerror or exc})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise JobError(f"{flag}: {name} is not writable")


# ---------------------------------------------------------------------------- the run of one job
@dataclass
class Outcome:
    """How a finished run is judged: records it read, records it could not use (dead letters)."""

    read: int
    failed: int
    reason: str | None = None  # set by a job's own rule; None means judge by the two counts
    failed_before_read: int | None = None  # dead letters not among `read` (refused while reading); None: all
    # Other parts of the work judged by the same --max_failure_fraction: (failed, total, what failed), e.g.
    # (30, 30, "translations failed") for a paraphrase run whose translation calls all failed.
    shares: tuple[tuple[int, int, str], ...] = ()


BEFORE_READ = ("read", "dedupe")  # dead-letter stages whose records a job's "records read" never counts


def default_outcome(summary: dict) -> Outcome:
    return with_stages(
        Outcome(int(summary.get("records_read", 0) or 0), int(summary.get("dead_letters", 0) or 0)), summary
    )


def with_stages(outcome: Outcome, summary: dict) -> Outcome:
    """Tell apart the dead letters refused while reading or as duplicates (never counted as read) from
    later ones (already among the records read), so each record offered counts once."""
    stages = summary.get("dead_letters_by_stage")
    if stages is not None and outcome.failed_before_read is None:
        outcome.failed_before_read = sum(int(stages.get(s, 0)) for s in BEFORE_READ)
    return outcome


class Run:
    """One invocation of a job: its options, the inputs it depends on, and the way it ends."""

    def __init__(self, job: str, options: PipelineOptions, args: argparse.Namespace):
        self.job = job
        self.options = options
        self.args = args
        self.output_dir = args.output_dir
        self._inputs: list[tuple[str, int]] = []

    # ---------------------------------------------------------------- checks
    def check_output_dir(self) -> None:
        out = self.output_dir
        if not out:
            raise JobError("--output_dir is empty")
        if "://" in out:
            return
        if os.path.exists(out) and not os.path.isdir(out):
            raise JobError(f"--output_dir={out}: is a file, not a folder")
        _writable_folder(out, f"--output_dir={out}", "the folder")

    def check_output_file(self, flag: str, path: str | None) -> None:
        """An output file named by a flag (e.g. --json_output): not a folder, its folder writable."""
        if not path or "://" in path:
            return
        if os.path.isdir(path):
            raise JobError(f"--{flag}={path}: is a folder; name a file")
        parent = os.path.dirname(os.path.abspath(path))
        _writable_folder(parent, f"--{flag}={path}", parent)

    def remove_success(self) -> None:
        """Forget that a previous run here was complete (called before anything that can fail)."""
        try:
            _delete([fileio.join(self.output_dir, SUCCESS)])
        except Exception:  # the output folder may not exist or be reachable yet; then there is nothing to remove
            pass

    def inputs(self, flag: str, patterns: str | list[str] | None, required: bool = True) -> list[str]:
        """The files a flag names (all must exist; a glob must match); recorded as inputs of the run."""
        if not patterns:
            if required:
                raise JobError(f"--{flag} is required")
            return []
        try:
            found = fileio.expand_inputs(f"--{flag}", patterns)
        except FileNotFoundError as exc:
            raise JobError(str(exc).strip("'\"")) from None
        except Exception as exc:  # an unreachable filesystem, a malformed URL
            raise JobError(f"--{flag}={patterns}: cannot list ({type(exc).__name__}: {exc})") from None
        self._inputs.extend(found)
        return [p for p, _ in found]

    def graphs(self, connectivity_dir: str | None, flag: str = "connectivity_dir") -> str:
        """The connectivity folder, which must hold graph files; they become inputs of the run."""
        if not connectivity_dir:
            raise JobError(f"--{flag} is required")
        found = connectivity_files(connectivity_dir)
        if not found:
            raise JobError(f"--{flag}={connectivity_dir}: no *{CONNECTIVITY_SUFFIX} files found")
        self._inputs.extend(found)
        return connectivity_dir

    # ---------------------------------------------------------------- running
    def _previous_run(self) -> dict | None:
        if not fileio.exists(fileio.join(self.output_dir, SUCCESS)):
            return None
        try:
            with fileio.open_read(fileio.join(self.output_dir, MANIFEST)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def execute(
        self,
        build: Callable[[beam.Pipeline], None],
        output_prefixes: list[str],
        extra_outputs: tuple[str, ...] = (),
        outcome: Callable[[dict], Outcome] = default_outcome,
        extra_settings: dict | None = None,
    ) -> dict:
        """Run `build(pipeline)` (which writes summary.json into --output_dir) and end the run.

        `output_prefixes` name the sharded outputs (`<prefix>-SSSSS-of-NNNNN.*`) an earlier run may have
        left; `extra_outputs` are files or globs written elsewhere (e.g. --json_output) or unsharded.
        Returns the summary, with `"skipped": True` when --skip_if_unchanged found nothing to do.
        """
        started = time.time()
        job_settings = redact({**settings(self.args), **(extra_settings or {})})
        inputs = sorted(set(self._inputs))
        # The digests are needed for the manifest only (and first by --skip_if_unchanged): inputs are hashed
        # while the pipeline runs (hashlib and file reads release the GIL: the other core, ~0.7 s per GB).
        digests = in_background(describe_inputs, inputs)
        if self.args.skip_if_unchanged:
            this_run = fingerprint(self.job, job_settings, digests.result())
            previous = self._previous_run()
            if (
                previous
                and previous.get("fingerprint") == this_run
                and all(fileio.exists(o["path"]) for o in previous.get("outputs", []))
            ):
                print(f"{self.job}: inputs, options and code unchanged since the complete run in {self.output_dir}")
                return {**previous["summary"], "skipped": True}
        self.remove_success()
        prefixes = list(dict.fromkeys([*output_prefixes, DEAD_LETTER_PREFIX]))
        _delete(
            [fileio.join(self.output_dir, n) for n in (MANIFEST, SUMMARY)]
            + [fileio.join(self.output_dir, f"{p}-*-of-*") for p in prefixes]
            + list(extra_outputs)
        )
        _remove_temporaries(self.output_dir, extra_outputs)
        log.info("%s: running on %d input file(s), writing to %s", self.job, len(inputs), self.output_dir)
        pipeline = beam.Pipeline(runner=local_runner(self.options), options=self.options)
        build(pipeline)
        try:
            result = pipeline.run()
            state = result.wait_until_finish()
            if state not in (PipelineState.DONE, None):
                raise RunFailed(f"pipeline ended in state {state}; the output in {self.output_dir} is incomplete")
        except BaseException:
            # A failed run leaves no temporary folders either (a killed one leaves them to the next run,
            # which removes them above); a failure to remove them must not hide the run's own error.
            try:
                _remove_temporaries(self.output_dir, extra_outputs)
            except Exception as exc:  # noqa: BLE001 -- reported, then the run's error goes on
                log.warning("%s: could not remove temporary folders (%s: %s)", self.job, type(exc).__name__, exc)
            raise
        _remove_temporaries(self.output_dir, extra_outputs)
        described = digests.result()
        this_run = fingerprint(self.job, job_settings, described)
        with fileio.open_read(fileio.join(self.output_dir, SUMMARY)) as f:
            summary = json.load(f)
        outputs = [
            describe_output(path, size)
            for prefix in prefixes
            for path, size in fileio.match(fileio.join(self.output_dir, f"{prefix}-*-of-*"))
        ]
        outputs += [describe_output(path, size) for path, size in fileio.match(list(extra_outputs))]
        counters = metrics_table(result)
        if counters:
            print(format_table([(f"{c['namespace']}/{c['name']}", c["value"]) for c in counters], "Beam counters"))
        verdict = self.judge(with_stages(outcome(summary), summary))
        manifest = {
            "job": self.job,
            "status": "failed" if verdict else "complete",
            "failure": verdict,
            "fingerprint": this_run,
            "settings": job_settings,
            "code_version": code_version(),
            "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "wall_seconds": round(time.time() - started, 3),
            "options": redact(self.options.get_all_options(drop_default=False, retain_unknown_options=True)),
            "inputs": described,
            "outputs": outputs,
            "counters": counters,
            "summary": summary,
        }
        with fileio.open_write(fileio.join(self.output_dir, MANIFEST)) as f:
            f.write(json.dumps(manifest, indent=2, sort_keys=True, default=str).encode())
        if verdict:
            raise RunFailed(verdict)
        with fileio.open_write(fileio.join(self.output_dir, SUCCESS)) as f:
            f.write(b"")
        return summary

    def judge(self, outcome: Outcome) -> str | None:
        """Why the run does not count as successful, or None when it does."""
        if outcome.reason:
            return outcome.reason
        before = outcome.failed if outcome.failed_before_read is None else outcome.failed_before_read
        total = outcome.read + before
        if outcome.read <= 0:
            return (
                f"nothing usable was read ({outcome.failed} record(s) dead-lettered)"
                if outcome.failed
                else "nothing was read: the inputs hold no records"
            )
        for failed, of, what in outcome.shares:
            if of and failed / of > self.args.max_failure_fraction:
                return f"{failed} of {of} {what}"
        fraction = min(1.0, outcome.failed / total)
        if fraction > self.args.max_failure_fraction:
            return (
                f"{outcome.failed} of the {total} records offered ({fraction:.1%}) were dead-lettered, more than "
                f"--max_failure_fraction={self.args.max_failure_fraction}"
            )
        return None


def print_outputs(output_dir: str, dead_letters: int, extra: str = "") -> None:
    """The closing lines of every job: where the outputs are and, if any, where the dead letters are."""
    print(f"Output: {output_dir}{extra}")
    if dead_letters:
        print(f"{dead_letters} record(s) could not be used: see {fileio.join(output_dir, 'dead_letter-*.jsonl')}")
