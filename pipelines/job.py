"""What every job shares, declared once: its checks, its run and its ending (`Run`).

A job module declares a `Job` (name, docstring, its flags) and a `run(ctx)` function that checks
its inputs through the `Run` context and calls `ctx.execute(build, ...)`. The context wires the
concepts every job shares, each in a module of its own:

- checks before anything runs: the output folder (not a file, writable), every named input exists
  (`ctx.inputs`, through `vlnkit.io.inputs`: a published output folder stands for its current
  version's data files; `ctx.agents` for `--predictions`), graphs are listed once (`ctx.graphs`);
- provenance (`pipelines.provenance`, `vlnkit.provenance`): input checksums, the code fingerprint,
  `--skip_if_unchanged`, `manifest.json`;
- how the run ends (`vlnkit.runs`, in the pipeline's last step on any runner): the lock and the one-step
  publication of a complete run, the outputs read back and compared with what the job declares from its
  tallies (`declared`), the verdict; a failed, refused or killed run leaves the published output as it was;
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
import time
from collections.abc import Callable

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.collector import resume_collection
from pipelines.console import format_table
from pipelines.input_checks import (
    DATASET_FLAGS,
    DATASET_REFUSED,
    agents_of,
    check_output_file,
    check_output_folder,
    refuse_credentials,
    refuse_kinds,
    refuse_own_output,
    same_file,
)
from pipelines.provenance import (
    connectivity_files,
    describe_inputs,
    fingerprint,
    fingerprinted_settings,
    in_background,
    intact,
    metrics_table,
)
from pipelines.runners import job_failure, local_runner, runs_here
from pipelines.verdict import JobError, RunFailed, failure_of, refused
from vlnkit.io import fileio, inputs, layout
from vlnkit.io.lock import DEFAULT_LEASE_SECONDS
from vlnkit.io.redact import redact
from vlnkit.navigation.graph import CONNECTIVITY_SUFFIX
from vlnkit.provenance import code_identity, file_set
from vlnkit.runs.ending import DEAD_LETTER_PREFIX, Ending, digests_file, hand_digests, read_ending
from vlnkit.runs.publication import DEFAULT_KEEP_VERSIONS, Publication, remove_fragments
from vlnkit.runs.staging import Staging
from vlnkit.runs.verdict import Outcome, default_outcome

SUCCESS = layout.SUCCESS
MANIFEST = layout.MANIFEST
log = logging.getLogger("vlnkit")


# ---------------------------------------------------------------------------- the run of one job
class Run:
    """One invocation of a job: its options, the inputs it depends on, and the way it ends."""

    def __init__(self, job: str, options: PipelineOptions, args: argparse.Namespace):
        self.job = job
        self.options = options
        self.args = args
        fileio.use_options(options)  # every gs:// access of the run (locks, listings) under its options
        self.output_dir = args.output_dir
        self._inputs: list[tuple[str, int | None]] = []  # (path, bytes; None for a file set: counted as hashed)
        self.kinds: dict[str, str | None] = {}  # the continuous layout of each checked input file (else None)

    # ---------------------------------------------------------------- checks
    def check_output_dir(self) -> None:
        check_output_folder(self.output_dir)

    def check_output_file(self, flag: str, path: str | None) -> None:
        """An output file named by a flag (e.g. --json_output): not a folder, its folder writable."""
        check_output_file(flag, path)

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
            refuse_own_output(self.output_dir, flag, path)
        if flag in DATASET_FLAGS or refuse or accept:
            refused = {**(DATASET_REFUSED if flag in DATASET_FLAGS else {}), **(refuse or {})}
            self.kinds.update(refuse_kinds(flag, [p for p, _ in found], refused, self.job, accept))
        self._inputs.extend(found)
        return [p for p, _ in found]

    def check_names(self, flag: str, patterns: str | list[str] | None) -> None:
        """What can be told from the names a flag gives before anything is listed: no URL with credentials."""
        for pattern in [patterns] if isinstance(patterns, str) else patterns or []:
            refuse_credentials(flag, pattern)

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
        return agents_of(values, flag, lambda f, patterns: self.inputs(f, patterns, refuse=refuse, accept=accept))

    def input_set(self, flag: str, pattern: str) -> None:
        """Record the files a glob matches as one input of the run (`vlnkit.provenance.file_set`): a folder
        of many small files, such as REVERIE's visibility folder."""
        refuse_credentials(flag, pattern)
        self._inputs.append(file_set(pattern))

    def graphs(self, connectivity_dir: str | None, flag: str = "connectivity_dir") -> str:
        """The connectivity folder, which must hold graph files; they become inputs of the run."""
        if not connectivity_dir:
            raise JobError(f"--{flag} is required")
        refuse_credentials(flag, connectivity_dir)
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
        """Build the pipeline with `build(pipeline, out)`, end it with the publishing step, run it.

        `out` (`vlnkit.runs.staging.Staging`) says where this run writes: `out.join(name)` inside its own
        version folder, `out.staged(path)` for each of `extra_outputs` (files or globs the job writes
        besides its shards, inside --output_dir or named by another flag, e.g. --json_output); the job
        writes summary.json as `out.join("summary.json")`. `ctx.output_dir` and `ctx.args` keep naming
        what the user gave. `output_prefixes` name the sharded outputs (`<prefix>-SSSSS-of-NNNNN.*`).
        `declared(summary)` says, from the run's own tallies, what it wrote: {a prefix or an extra output
        (or a name inside --output_dir): the rows its files hold together, or None for a file without
        rows that must exist}; the dead letters and summary.json are declared for every job. The
        pipeline's last step reads every file back, judges, writes the manifest and publishes
        (`vlnkit.runs.ending`); waiting for the job, this reads its verdict from the manifest.
        Returns the summary, with `"skipped": True` when --skip_if_unchanged found nothing to do, and
        with `"detached": True` when --no_wait left the job to publish by itself.
        """
        started = time.time()
        job_settings = redact({**fingerprinted_settings(self.args), **(extra_settings or {})})
        inputs = sorted(set(self._inputs))
        for output in extra_outputs:
            if any(same_file(output, path) for path, _ in inputs):
                raise JobError(f"{output} is both an input and an output of this run; name another output file")
        runner, in_process = local_runner(self.options), runs_here(self.options)
        # The inputs' checksums reach the last step one way per kind of runner: on the local runner, this
        # process hashes them on a thread while the pipeline runs and hands them over through a locked file
        # (`hand_digests`); on any other, a branch of the pipeline hashes them on its workers.
        local = runner is not None
        digests = in_background(describe_inputs, inputs) if local or self.args.skip_if_unchanged else None
        if self.args.skip_if_unchanged:
            unchanged = self._unchanged(fingerprint(self.job, job_settings, redact(digests.result())), extra_outputs)
            if unchanged is not None:
                return unchanged
        wait = in_process or not (getattr(self.args, "no_wait", False) or described_only(self.options))
        publication = self._publication(in_process)
        handed = digests_file(publication.version)
        try:
            with refused():
                out = publication.staging(extra_outputs)
            remove_fragments(extra_outputs)
            ending = Ending(
                job=self.job,
                publication=publication,
                prefixes=list(dict.fromkeys([*output_prefixes, DEAD_LETTER_PREFIX])),
                staged={path: out.staged(path) for path in extra_outputs},
                max_failure_fraction=self.args.max_failure_fraction,
                settings=job_settings,
                options=redact(self.options.get_all_options(drop_default=False, retain_unknown_options=True)),
                inputs=inputs,
                code=code_identity(),
                outcome=outcome,
                declared=declared,
                digests_file=handed if local else None,
                waited=wait,
                started=started,
            )
            if local:
                hand_digests(digests, handed)
            return self._run_pipeline(build, out, ending, runner, in_process, wait)
        except RunFailed:
            raise
        except BaseException as exc:
            publication.abandon()
            failure = failure_of(exc)
            if failure is exc:
                raise
            raise failure from None
        finally:
            publication.end()  # a run handed over to its job (--no_wait) holds on to its lock
            if os.path.exists(handed):  # the last step never took them
                os.remove(handed)

    def _unchanged(self, this_run: str, extra_outputs: tuple[str, ...]) -> dict | None:
        """--skip_if_unchanged: the summary of the complete run in the output folder when it has this run's
        fingerprint, its files are intact and the outputs named elsewhere are still there; else None."""
        previous = self._previous_run()
        inside = self.output_dir.rstrip("/") + "/"
        placed = [p for p in extra_outputs if not p.startswith(inside) and not fileio.is_glob(p)]
        if (
            previous
            and previous[1].get("fingerprint") == this_run
            and intact(*previous)
            and all(fileio.exists(p) for p in placed)  # e.g. --json_output, which a user may have removed
        ):
            print(f"{self.job}: inputs, options and code unchanged since the complete run in {self.output_dir}")
            return {**previous[1]["summary"], "skipped": True}
        return None

    def _publication(self, in_process: bool) -> Publication:
        """The run's publication, begun: its lock taken and its version folder made (JobError when refused)."""
        with refused():
            publication = Publication(
                self.output_dir,
                getattr(self.args, "keep_versions", DEFAULT_KEEP_VERSIONS),
                getattr(self.args, "lock_lease_seconds", DEFAULT_LEASE_SECONDS),
                in_process=in_process,
            )
            publication.begin()
        return publication

    def _run_pipeline(self, build, out: Staging, ending: Ending, runner, in_process: bool, wait: bool) -> dict:
        """Build and run the pipeline into `out`; the summary its last step recorded (or, not waiting, what
        was submitted)."""
        import apache_beam as beam
        from apache_beam.options.pipeline_options import SetupOptions
        from apache_beam.runners.runner import PipelineState

        from pipelines.package_build import one_package_build
        from transforms.publish import hold_lock, publish

        log.info("%s: running on %d input file(s), writing to %s", self.job, len(self._inputs), out.folder)
        pipeline = beam.Pipeline(runner=runner, options=self.options)
        if not in_process:
            hold_lock(pipeline, ending)  # first, so the job renews its lock from its start
        build(pipeline, out)
        publish(pipeline, ending, keep_lock=not in_process, hash_inputs=ending.digests_file is None)
        layout.fault_point("pipeline")
        resume_collection()
        # Staging builds the project's package in its folder: one launch at a time there (pipelines.package_build).
        setup_file = None if in_process else self.options.view_as(SetupOptions).setup_file
        with one_package_build(setup_file):
            result = pipeline.run()
        if not wait:
            ending.publication.hand_over()
            print(
                f"{self.job}: submitted without waiting; the job publishes {out.folder} into {self.output_dir} "
                f"when it finishes (check it with: vlnkit verify {self.output_dir})",
                flush=True,
            )
            return {"detached": True, "version": out.version, "folder": out.folder}
        try:
            state = result.wait_until_finish()
        except Exception as exc:  # the runner has logged the job's messages (a worker's traceback among them)
            if in_process:
                raise
            raise job_failure(exc) from None
        if state not in (PipelineState.DONE, None):
            raise RunFailed(f"pipeline ended in state {state}; nothing was published")
        counters = metrics_table(result)
        if counters:
            print(format_table([(f"{c['namespace']}/{c['name']}", c["value"]) for c in counters], "Beam counters"))
        record = read_ending(out.folder)
        if record is None:
            raise RunFailed(f"the pipeline ended without its publishing step; nothing was published ({out.folder})")
        if record["status"] != "complete":
            raise RunFailed(f"{record['failure']} (the published output is unchanged; this run's files: {out.folder})")
        return record["summary"]


def described_only(options: PipelineOptions) -> bool:
    """Whether the runner only writes the job's description (--template_location, which a Flex Template
    launch sets): the job runs afterwards with nobody waiting for it, as with --no_wait."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    return bool(options.view_as(GoogleCloudOptions).template_location)
