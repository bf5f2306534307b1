"""What every job shares, declared once: its checks, its run and its ending (`Run`).

A job module declares a `Job` (name, docstring, its flags) and a `run(ctx)` function that checks
its inputs through the `Run` context and calls `ctx.execute(build, ...)`. The context wires the
concepts every job shares, each in a module of its own:

- checks before anything runs: the output folder (not a file, writable), every named input exists
  (`ctx.inputs`, through `vlnkit.io.inputs`: a published output folder stands for its current
  version's data files; `ctx.agents` for `--predictions`), graphs are listed once (`ctx.graphs`);
- provenance (`pipelines.provenance`, `vlnkit.provenance`): input checksums, the code fingerprint,
  `--skip_if_unchanged`, `manifest.json`;
- publishing (`pipelines.publishing`): the lock, the run's own version folder, and the one-step
  publication of a complete run; a failed, refused or killed run leaves the published output as it was;
- the outputs read back (`vlnkit.io.integrity`): every file the run wrote is described (size, rows,
  crc32c) and compared with what the job declares from its own tallies (`declared`); a missing, short
  or extra output fails the run;
- the verdict (`pipelines.verdict`): the outputs hold what was counted, something usable was read, the
  dead-lettered fraction is at most `--max_failure_fraction`; a failed run gets a manifest saying so
  and no `_SUCCESS`, exit 3;
- the Beam counters table and the job's own summary table are printed.

Exit codes: 0 done (or skipped, unchanged), 2 the job cannot run as asked (bad flag, missing
input, unusable output folder, another run holds the output), 3 the run finished but failed (see
the message and the manifest).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import time
from collections.abc import Callable

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.collector import resume_collection
from pipelines.provenance import (
    connectivity_files,
    describe_inputs,
    describe_outputs,
    fingerprint,
    fingerprinted_settings,
    in_background,
    manifest,
    metrics_table,
)
from pipelines.publishing import DEFAULT_KEEP_VERSIONS, Publication, remove_fragments
from pipelines.runners import local_runner
from pipelines.verdict import BEFORE_READ, JobError, Outcome, RunFailed, default_outcome, judge, with_stages, written
from vlnkit.datasets.rxr import FOLLOWER_AS_DATASET, RXR_FOLLOWER_FORMAT
from vlnkit.io import fileio, inputs, integrity, layout
from vlnkit.io.lock import DEFAULT_LEASE_SECONDS
from vlnkit.io.redact import redact, redact_text
from vlnkit.navigation.graph import CONNECTIVITY_SUFFIX

__all__ = [
    "file_agent_name",
    "BEFORE_READ",
    "JobError",
    "Outcome",
    "Run",
    "RunFailed",
    "default_outcome",
    "format_table",
    "print_outputs",
    "with_stages",
]

SUCCESS = layout.SUCCESS
MANIFEST = layout.MANIFEST
SUMMARY = "summary.json"
DEAD_LETTER_PREFIX = "dead_letter"
log = logging.getLogger("vlnkit")
# `--predictions NAME=PATTERNS`: the agent's name (any text but "=" and the characters that separate an
# agent from an id in the job's outputs: tab, line breaks, and the summary keys' unit separator), then its files.
AGENT_NAME = re.compile(r"([^=\t\n\r\x1f]*[^=\s\x1f][^=\t\n\r\x1f]*)=(.+)", re.S)
COMPRESSED = (".gz", ".bz2")


def file_agent_name(path: str) -> str:
    """The name of an agent given as a file without NAME=: the file's stem (its name without its extension,
    and without a compression suffix before that).

    >>> file_agent_name("runs/dagger/val_unseen_preds.jsonl.gz"), file_agent_name("gs://b/rl.json")
    ('val_unseen_preds', 'rl')
    """
    name = path.rstrip("/").rsplit("/", 1)[-1]
    for suffix in COMPRESSED:
        name = name.removesuffix(suffix) if len(name) > len(suffix) else name
    stem = name.rsplit(".", 1)[0]
    return stem or name


# An OSError with one of these numbers means the output's storage is full (or a file size limit).
OUT_OF_SPACE = {28: "no space left on the device", 27: "file too large for the file size limit", 122: "disk quota"}


def format_table(rows: list[tuple[str, object]], title: str) -> str:
    width = max((len(k) for k, _ in rows), default=0)
    lines = [title, "-" * len(title)]
    for k, v in rows:
        if isinstance(v, float):
            v = f"{v:.4f}"
        lines.append(f"  {k.ljust(width)}  {v}")
    return "\n".join(lines)


def _writable_folder(folder: str, flag: str, name: str) -> None:
    """Create a local folder if needed and check it can be written; `flag` and `name` word the error."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise JobError(f"{flag}: cannot create {name} ({exc.strerror or exc})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise JobError(f"{flag}: {name} is not writable")


def out_of_space(exc: BaseException) -> str | None:
    """One line when an error (or an error it wraps, or Beam's text of a worker's error) says the
    output's storage is full; None for any other error."""
    seen = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in OUT_OF_SPACE:
            return f"{OUT_OF_SPACE[seen.errno]} ({seen.filename or seen})"
        seen = seen.__cause__ or seen.__context__
    text = str(exc)
    for errno, what in OUT_OF_SPACE.items():
        if f"[Errno {errno}]" in text:
            return what
    return None


def _intact(folder: str, previous: dict) -> bool:
    """Whether a published version still holds what its manifest records (sizes, checksums, rows), so a
    run may be skipped as unchanged; a manifest of an older vlnkit (no checksums) only needs its files."""
    if all("crc32c" in o for o in previous.get("outputs", [])):
        return not integrity.verify_version(folder)
    return all(fileio.exists(o["path"]) for o in previous.get("outputs", []))


# Flags whose files are datasets (R2R-format records or RxR guide lines, or build_r4r's Parquet), in every
# job; what is refused among them, by the format `vlnkit.datasets.rxr.file_format` tells from content.
DATASET_FLAGS = frozenset({"dataset", "steps_from", "compose_from"})
DATASET_REFUSED = {RXR_FOLLOWER_FORMAT: FOLLOWER_AS_DATASET}
# Continuous-environment (VLN-CE) files, told by content (`vlnkit.continuous.documents.sniff_kind`, described by
# its DESCRIPTIONS): refused by every dataset flag and by the --predictions of jobs on graphs, unless a job takes
# a kind (`accept`).
CONTINUOUS_SCORED = (
    "continuous environments (VLN-CE) are scored by the score job, whose output folder the report draws "
    '(docs/jobs/score.md, "Continuous environments (VLN-CE)")'
)


def refuse_continuous(job: str) -> dict[str, str]:
    """{continuous layout: why} for a flag of `job` that takes none of them (`inputs(..., refuse=)`)."""
    from vlnkit.continuous.documents import DESCRIPTIONS

    return {kind: continuous_refusal(kind, job) for kind in DESCRIPTIONS}


def continuous_refusal(kind: str, job: str) -> str:
    """The one wording of a continuous file given where `job` does not take it."""
    from vlnkit.continuous.documents import DESCRIPTIONS

    return f"{DESCRIPTIONS[kind]}, which {job} does not read: {CONTINUOUS_SCORED}"


def _refuse_kinds(flag: str, files: list[str], refused: dict[str, str], job: str, accept=()) -> dict[str, str | None]:
    """Stop before the pipeline when a file is of a kind the flag does not take (one line naming it):
    every record would otherwise be dead-lettered one by one, or the run would fail late. Returns each
    file's continuous layout (None for every other file)."""
    from vlnkit.continuous.documents import DESCRIPTIONS, sniff_kind
    from vlnkit.datasets.rxr import file_format
    from vlnkit.datasets.trajectories import is_parquet

    kinds = {}
    for path in files:
        kind = None if is_parquet(path) else sniff_kind(path)
        if kind is not None and kind not in accept:
            why = refused.get(kind) or continuous_refusal(kind, job)
        elif kind is None and not is_parquet(path) and set(refused) - set(DESCRIPTIONS):
            why = refused.get(file_format(path))  # an R2R-format file: RxR guide or follower, or R2R
        else:
            why = None
        if why:
            raise JobError(f"--{flag}: {path} is {why}")
        kinds[path] = kind
    return kinds


def _refuse_credentials(flag: str, value: str) -> None:
    """A URL with a user name (and password) in it: credentials come from the standard auth chain of the
    filesystem, never from a flag, and a path that holds one must not travel into logs and manifests."""
    for part in value.split(","):
        scheme, sep, rest = part.partition("://")
        if sep and "@" in rest.split("/", 1)[0]:
            raise JobError(
                f"--{flag}={redact_text(part.strip())}: a URL with credentials in it; name the file without them "
                "(access comes from the filesystem's own credentials, e.g. Google's auth chain for gs://)"
            )


def _same_file(a: str, b: str) -> bool:
    if fileio.is_remote(a) or fileio.is_remote(b):
        return a == b
    return os.path.realpath(a) == os.path.realpath(b)


# ---------------------------------------------------------------------------- the run of one job
class Run:
    """One invocation of a job: its options, the inputs it depends on, and the way it ends."""

    def __init__(self, job: str, options: PipelineOptions, args: argparse.Namespace):
        self.job = job
        self.options = options
        self.args = args
        self.output_dir = args.output_dir
        self._inputs: list[tuple[str, int]] = []
        self.kinds: dict[str, str | None] = {}  # the continuous layout of each checked input file (else None)

    # ---------------------------------------------------------------- checks
    def check_output_dir(self) -> None:
        out = self.output_dir
        if not out:
            raise JobError("--output_dir is empty")
        _refuse_credentials("output_dir", out)
        root = layout.holding_versions(out)
        if root is not None:
            raise JobError(
                f"--output_dir={out}: inside the versions of the output folder {root} (what its readers see, "
                "and its own runs prune); choose a folder outside it"
            )
        if fileio.is_remote(out):
            return
        if os.path.exists(out) and not os.path.isdir(out):
            raise JobError(f"--output_dir={out}: is a file, not a folder")
        _writable_folder(out, f"--output_dir={out}", "the folder")

    def check_output_file(self, flag: str, path: str | None) -> None:
        """An output file named by a flag (e.g. --json_output): not a folder, its folder writable."""
        if not path or fileio.is_remote(path):
            return
        if os.path.isdir(path):
            raise JobError(f"--{flag}={path}: is a folder; name a file")
        parent = os.path.dirname(os.path.abspath(path))
        _writable_folder(parent, f"--{flag}={path}", parent)

    def inputs(
        self,
        flag: str,
        patterns: str | list[str] | None,
        required: bool = True,
        refuse: dict[str, str] | None = None,
        accept: tuple[str, ...] = (),
    ) -> list[str]:
        """The files a flag names (all must exist; a glob must match; a published output folder names its
        current version's data files); recorded as inputs of the run.

        A file of a kind the flag does not take (told by content) is refused here, before the pipeline,
        the same way in every job: an RxR follower file or a continuous-environment (VLN-CE) file given
        as a dataset (`DATASET_FLAGS`); `refuse` {format: why} narrows what one job takes (build_r4r:
        R2R-format records only; a job on graphs: no continuous file among --predictions, `refuse_continuous`),
        and `accept` names the continuous layouts a flag does take (the score job's --dataset: "episodes").
        Each checked file's continuous layout is kept in `self.kinds`."""
        if not patterns:
            if required:
                raise JobError(f"--{flag} is required")
            return []
        self.check_names(flag, patterns)
        try:
            found = inputs.expand_inputs(f"--{flag}", patterns)
        except FileNotFoundError as exc:
            raise JobError(str(exc).strip("'\"")) from None
        except Exception as exc:  # an unreachable filesystem, a malformed URL
            raise JobError(f"--{flag}={patterns}: cannot list ({type(exc).__name__}: {exc})") from None
        for path, _ in found:
            self._refuse_own_output(flag, path)
        if flag in DATASET_FLAGS or refuse or accept:
            refused = {**(DATASET_REFUSED if flag in DATASET_FLAGS else {}), **(refuse or {})}
            self.kinds.update(_refuse_kinds(flag, [p for p, _ in found], refused, self.job, accept))
        self._inputs.extend(found)
        return [p for p, _ in found]

    def check_names(self, flag: str, patterns: str | list[str] | None) -> None:
        """What can be told from the names a flag gives before anything is listed: no URL with credentials."""
        for pattern in [patterns] if isinstance(patterns, str) else patterns or []:
            _refuse_credentials(flag, pattern)

    def _refuse_own_output(self, flag: str, path: str) -> None:
        """An input inside this run's own output folder (a file of its published version) would be replaced
        by what the run publishes, and the same command would then read its own output."""
        out = self.output_dir.rstrip("/")
        if fileio.is_remote(out):
            inside = path.startswith(fileio.join(out, layout.VERSIONS) + "/")
        else:
            inside = os.path.realpath(path).startswith(os.path.realpath(fileio.join(out, layout.VERSIONS)) + os.sep)
        if inside:
            raise JobError(
                f"--output_dir={self.output_dir} holds {path}, an input of this run (--{flag}): publishing there "
                "would replace what the run reads; write elsewhere"
            )

    def agents(
        self,
        values: str | list[str] | None,
        flag: str = "predictions",
        refuse: dict[str, str] | None = None,
        accept: tuple[str, ...] = (),
    ) -> dict[str, list[str]]:
        """--predictions values -> {agent: [files]} in flag order, the same way in every job.

        `NAME=PATTERNS` names an agent (its files in pattern order); any other value is patterns whose
        every file is an agent named by the file's stem (`file_agent_name`; the
        summary keeps the full paths). A name is given once: two values naming one agent, or two files
        that would get one name, are a JobError (an agent's files go in one value, comma-separated or as
        a glob). The files are listed and recorded as `inputs`; a value that matches no file is a JobError.
        `refuse` and `accept` are those of `inputs` (kinds of file the flag does not, or does, take).

            ctx.agents(["dagger=runs/d/*.json", "rl.json"]) -> {"dagger": [...], "rl": ["rl.json"]}
        """
        values = [values] if isinstance(values, str) else list(values or [])
        agents: dict[str, list[str]] = {}
        given: dict[str, str] = {}  # agent -> the value that named it

        def add(name: str, files: list[str], value: str) -> None:
            if name in agents:
                raise JobError(
                    f"--{flag}: two values name the agent {name!r} ({given[name]!r} and {value!r}); give each "
                    f"agent once, with all its files in one value (comma-separated or a glob), or name them "
                    f"apart with --{flag}=NAME=FILES"
                )
            agents[name], given[name] = files, value

        for value in values:
            m = AGENT_NAME.fullmatch(value)
            if m and not fileio.exists(value):
                files = self.inputs(f"{flag}={m.group(1)}", m.group(2), refuse=refuse, accept=accept)
                add(m.group(1), list(dict.fromkeys(files)), value)
            else:
                for path in self.inputs(flag, value, refuse=refuse, accept=accept):
                    add(file_agent_name(path), [path], path)
        return agents

    def graphs(self, connectivity_dir: str | None, flag: str = "connectivity_dir") -> str:
        """The connectivity folder, which must hold graph files; they become inputs of the run."""
        if not connectivity_dir:
            raise JobError(f"--{flag} is required")
        _refuse_credentials(flag, connectivity_dir)
        found = connectivity_files(connectivity_dir)
        if not found:
            raise JobError(f"--{flag}={connectivity_dir}: no *{CONNECTIVITY_SUFFIX} files found")
        self._inputs.extend(found)
        return connectivity_dir

    # ---------------------------------------------------------------- running
    def _previous_run(self) -> tuple[str, dict] | None:
        """The folder and manifest of the published version, if there is one."""
        try:
            files = layout.published(self.output_dir)
        except (OSError, ValueError):
            return None
        manifests = [p for p in files if p.rsplit("/", 1)[-1] == MANIFEST]
        if not manifests or not any(p.rsplit("/", 1)[-1] == SUCCESS for p in files):
            return None
        try:
            with fileio.open_read(manifests[0]) as f:
                return manifests[0][: -len(MANIFEST)].rstrip("/"), json.load(f)
        except (OSError, ValueError):
            return None

    def execute(
        self,
        build: Callable[..., None],
        output_prefixes: list[str],
        extra_outputs: tuple[str, ...] = (),
        outcome: Callable[[dict], Outcome] = default_outcome,
        extra_settings: dict | None = None,
        declared: Callable[[dict], dict[str, int | None]] | None = None,
    ) -> dict:
        """Run `build(pipeline)` (which writes summary.json into --output_dir) and end the run.

        While `build` runs, `ctx.args.output_dir` (and any flag naming one of `extra_outputs` outside
        it, e.g. --json_output) name this run's own version folder; they are restored afterwards.
        `output_prefixes` name the sharded outputs (`<prefix>-SSSSS-of-NNNNN.*`); `extra_outputs` are
        other files or globs the job writes. `declared(summary)` says, from the run's own tallies, what
        it wrote: {a prefix or an extra output (or a name inside --output_dir): the rows its files hold
        together, or None for a file without rows that must exist}; the dead letters and summary.json
        are declared here for every job. Before `_SUCCESS` every file is read back (`vlnkit.io.integrity`):
        a declared output missing, holding other rows, or a file nobody declared fails the run.
        Returns the summary, with `"skipped": True` when --skip_if_unchanged found nothing to do.
        """
        started = time.time()
        job_settings = redact({**fingerprinted_settings(self.args), **(extra_settings or {})})
        inputs = sorted(set(self._inputs))
        for output in extra_outputs:
            if any(_same_file(output, path) for path, _ in inputs):
                raise JobError(f"{output} is both an input and an output of this run; name another output file")
        # The digests are needed for the manifest only (and first by --skip_if_unchanged): inputs are hashed
        # while the pipeline runs (hashlib and file reads release the GIL: the other core, ~0.7 s per GB).
        digests = in_background(describe_inputs, inputs)
        if self.args.skip_if_unchanged:
            this_run = fingerprint(self.job, job_settings, redact(digests.result()))
            previous = self._previous_run()
            inside = self.output_dir.rstrip("/") + "/"
            placed = [p for p in extra_outputs if not p.startswith(inside) and not fileio.is_glob(p)]
            if (
                previous
                and previous[1].get("fingerprint") == this_run
                and _intact(*previous)
                and all(fileio.exists(p) for p in placed)  # e.g. --json_output, which a user may have removed
            ):
                print(f"{self.job}: inputs, options and code unchanged since the complete run in {self.output_dir}")
                return {**previous[1]["summary"], "skipped": True}
        publication = Publication(
            self.output_dir,
            getattr(self.args, "keep_versions", DEFAULT_KEEP_VERSIONS),
            getattr(self.args, "lock_lease_seconds", DEFAULT_LEASE_SECONDS),
        )
        publication.begin()
        saved = vars(self.args).copy()
        try:
            staged = [publication.stage(p) for p in extra_outputs]
            for key, value in saved.items():
                if isinstance(value, str) and value in extra_outputs:
                    setattr(self.args, key, staged[extra_outputs.index(value)])
            self.args.output_dir = publication.folder
            remove_fragments(extra_outputs)
            prefixes = list(dict.fromkeys([*output_prefixes, DEAD_LETTER_PREFIX]))
            summary, counters = self._run_pipeline(build, publication.folder)
            outputs = describe_outputs(publication.folder)
            expected = self._expected(summary, declared, prefixes, dict(zip(extra_outputs, staged)))
            problems = integrity.check(publication.folder, expected, outputs)
            verdict = written(problems) or judge(with_stages(outcome(summary), summary), self.args.max_failure_fraction)
            facts = {
                "settings": job_settings,
                "wall_seconds": round(time.time() - started, 3),
                "options": redact(self.options.get_all_options(drop_default=False, retain_unknown_options=True)),
                "inputs": redact(digests.result()),
                "outputs": outputs,
                "counters": counters,
                "summary": summary,
            }
            if problems:
                facts["output_problems"] = [p.to_dict() for p in problems]
            run_fingerprint = fingerprint(self.job, job_settings, facts["inputs"])
            record = manifest(
                job=self.job, verdict=verdict, run_fingerprint=run_fingerprint, version=publication.version, **facts
            )
            with fileio.open_write(fileio.join(publication.folder, MANIFEST)) as f:
                f.write(json.dumps(record, indent=2, sort_keys=True, default=str).encode())
            layout.fault_point("manifest")
            if verdict:
                where = publication.fail()
                raise RunFailed(f"{verdict} (the published output is unchanged; this run's files: {where})")
            with fileio.open_write(fileio.join(publication.folder, SUCCESS)) as f:
                f.write(b"")
            layout.fault_point("success")
            owned = [f"{p}-*-of-*" for p in prefixes] + [SUMMARY, MANIFEST, SUCCESS, "beam-temp-*"]
            publication.publish(owned)
            return summary
        except RunFailed:
            raise
        except BaseException as exc:
            publication.abandon()
            full = out_of_space(exc)
            if full:
                raise RunFailed(f"the output ran out of space: {full}; the published output is unchanged") from None
            raise
        finally:
            publication.end()
            for key, value in saved.items():
                setattr(self.args, key, value)

    def _expected(self, summary: dict, declared, prefixes: list[str], staged: dict[str, str]) -> dict:
        """The job's declaration as names inside its version folder, with what every job writes."""
        folder = self.args.output_dir
        expected: dict[str, int | None] = {
            f"{DEAD_LETTER_PREFIX}-*-of-*": int(summary.get("dead_letters", 0) or 0),
            SUMMARY: None,
        }
        where = {**staged, **{p: p for p in staged.values()}}
        for key, rows in (declared(summary) if declared else {}).items():
            if key in prefixes:
                name = f"{key}-*-of-*"
            elif key in where or key.startswith(folder.rstrip("/") + "/"):
                name = integrity.relative(folder, where.get(key, key))
            elif key.startswith(self.output_dir.rstrip("/") + "/"):
                name = integrity.relative(self.output_dir, key)
            else:
                name = key  # a name inside the output folder
            expected[name] = rows
        return expected

    def _run_pipeline(self, build, folder: str):
        """Build and run the pipeline into `folder`; its summary and Beam's counters."""
        import apache_beam as beam
        from apache_beam.runners.runner import PipelineState

        log.info("%s: running on %d input file(s), writing to %s", self.job, len(self._inputs), folder)
        pipeline = beam.Pipeline(runner=local_runner(self.options), options=self.options)
        build(pipeline)
        layout.fault_point("pipeline")
        resume_collection()
        result = pipeline.run()
        state = result.wait_until_finish()
        if state not in (PipelineState.DONE, None):
            raise RunFailed(f"pipeline ended in state {state}; nothing was published")
        layout.fault_point("written")
        with fileio.open_read(fileio.join(folder, SUMMARY)) as f:
            summary = json.load(f)
        counters = metrics_table(result)
        if counters:
            print(format_table([(f"{c['namespace']}/{c['name']}", c["value"]) for c in counters], "Beam counters"))
        return summary, counters


def print_outputs(output_dir: str, dead_letters: int, extra: str = "") -> None:
    """The closing lines of every job: where the outputs are and, if any, where the dead letters are."""
    print(f"Output: {output_dir}{extra}")
    if dead_letters:
        print(f"{dead_letters} record(s) could not be used: see {fileio.join(output_dir, 'dead_letter-*.jsonl')}")
