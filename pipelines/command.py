"""A job's command line, kept free of Beam: its name, description and flags, and its entry point.

`--help` (of `vlnkit`, of `vlnkit <job>`, of `python -m pipelines.<job>`) only needs the flags, so
this module and every job module's top import nothing that imports Apache Beam (about 2,500 modules,
seconds per command): a job's pipeline, its transforms and the `Run` context are imported when the
job actually runs.

    >>> def declare(parser):
    ...     parser.add_argument("--size", type=int, default=3, help="How many")
    >>> job = Job("demo", "A demo job.", declare)
    >>> _, args = job.parse(["--size=5"])
    >>> args.size, args.output_dir
    (5, 'output/demo')
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from pipelines.beam_import import job_command
from pipelines.collector import command_collection
from pipelines.flags import job_parser, parse
from pipelines.verdict import JobError
from vlnkit.io.redact import redact_text

if TYPE_CHECKING:
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.job import Run


class Job:
    """A job's name, description and flags; `Job.main(run)` makes its command-line entry point.

    JOB = Job("build_r4r", __doc__, declare_flags)

    def run(ctx: Run) -> dict:
        files = ctx.inputs("dataset", ctx.args.dataset)
        return ctx.execute(lambda p, out: build(p, out, files, ctx.args), ["paths"])

    main = JOB.main(run, print_summary)
    """

    def __init__(
        self,
        name: str,
        doc: str | None,
        declare: Callable[[argparse.ArgumentParser], None],
        warm_up: Callable[[], object] | None = None,
    ):
        self.name = name
        self.doc = doc
        self.declare = declare
        self.warm_up = warm_up  # started on a thread while the job imports Beam (not for --help)

    def parser(self) -> argparse.ArgumentParser:
        parser = job_parser(self.name, self.doc)
        self.declare(parser)
        return parser

    def parse(self, argv: list[str] | None = None) -> tuple[PipelineOptions, argparse.Namespace]:
        return parse(self.parser(), argv)

    def main(self, run: Callable[[Run], dict], print_summary: Callable[[dict, Run], None] | None = None):
        """The entry point: parse, check, run, print; plain user mistakes end in one line, not a traceback."""
        job = self.name

        def main(argv: list[str] | None = None) -> dict:
            given = sys.argv[1:] if argv is None else argv
            if self.warm_up is not None and not {"-h", "--help"} & set(given):
                self.warm_up()
            try:
                options, args = self.parse(argv)  # --help ends here, before anything imports Beam
            except JobError as exc:
                _refuse(job, exc)
            from pipelines.job import SUCCESS, Run
            from pipelines.launch_checks import check_launch
            from pipelines.verdict import RunFailed

            logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
            logging.getLogger("apache_beam").setLevel(logging.WARNING)
            ctx = Run(job, options, args)
            try:
                check_launch(options, args.output_dir)  # before anything is listed, locked or staged
                ctx.check_output_dir()
                summary = run(ctx)
            except JobError as exc:  # refused before publishing: the published output is as it was
                _refuse(job, exc)
            except RunFailed as exc:
                print(redact_text(f"error: {job}: run failed: {exc}; no {SUCCESS} written"), file=sys.stderr)
                raise SystemExit(3) from None
            if summary.get("skipped") or summary.get("detached"):
                return summary
            if print_summary is not None:
                print_summary(summary, ctx)
            return summary

        main.__doc__ = self.doc
        return main


def _refuse(job: str, exc: JobError) -> NoReturn:
    """The job cannot run as asked: one line naming the reason (never a secret it quotes), exit code 2."""
    print(redact_text(f"error: {job}: {exc}"), file=sys.stderr)
    raise SystemExit(2) from None


def run_as_command(main: Callable[[], object]) -> None:
    """Run a job's `main` as a command, the cycle collector paused through start-up
    (`pipelines.collector`) and Beam imported for this one job (`pipelines.beam_import.job_command`).
    By the time `main` returns every output is closed."""
    try:
        with command_collection(), job_command():
            main()
    except SystemExit as exc:
        if exc.code and _own_daemon_threads_running():
            # A refusal can come while the kernels' warm-up (or a checksum thread) is still inside numba or
            # a native read; the interpreter's shutdown would then abort with "Fatal Python error:
            # PyGILState_Release" in place of the exit code (seen under load). Nothing of the run is left
            # to finish by then: the streams are flushed and the process ends with its code.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(exc.code if isinstance(exc.code, int) else 1)
        raise


def _own_daemon_threads_running() -> bool:
    """Whether a daemon thread this package started (named vlnkit-...) is still running."""
    return any(t.daemon and t.is_alive() and t.name.startswith("vlnkit-") for t in threading.enumerate())
