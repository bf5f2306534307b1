"""Which runner a job runs on: `--runner=DirectRunner` (the default) is Beam's Python runner on every machine.

`local_runner` builds it (with a shorter state-sampling period, `shorter_state_sampling`);
`one_worker_process` tells a job whether every step runs in one process (work that only pays with
parallel workers can then be skipped); `runs_here` whether the job ends with the launching process;
`job_failure` says in one line why a job run elsewhere failed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from vlnkit.cluster.sdk_worker import IMPORT_FAILED

if TYPE_CHECKING:  # Beam is imported only to run
    from apache_beam.options.pipeline_options import PipelineOptions


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

    shorter_state_sampling()
    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    info = fn_runner.ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded))
    return fn_runner.FnApiRunner(provision_info=info)


SAMPLING_PERIOD_MS = 20  # the period of Beam's state sampler in a job's in-process runner (Beam's: 200 ms)


def shorter_state_sampling() -> None:
    """Make the in-process runner's bundles end without waiting up to 200 ms each.

    Why: Beam times every step of a bundle with a sampler thread (`statesampler_fast.pyx`) that sleeps
    in periods growing from 2 ms to `DEFAULT_SAMPLING_PERIOD_MS` (200 ms), and a bundle's end joins
    that thread, so it waits out the current sleep: a million-prediction score run waited 0.3-0.8 s in
    all (its main thread idle, measured). Beam creates the sampler with the default period, so the
    default is made `SAMPLING_PERIOD_MS`: a bundle's end then waits at most 20 ms. The sampler only
    feeds Beam's step timings (msecs counters, lull logs); it wakes ten times as often, a lock and an
    addition outside the GIL each time. A Beam whose sampler takes other arguments is left as it is.

    >>> from apache_beam.runners.worker import statesampler
    >>> shorter_state_sampling()
    >>> statesampler.StateSampler.__init__.__defaults__
    (20,)
    """
    from apache_beam.runners.worker import statesampler

    init = statesampler.StateSampler.__init__
    if init.__defaults__ == (statesampler.DEFAULT_SAMPLING_PERIOD_MS,):
        init.__defaults__ = (SAMPLING_PERIOD_MS,)


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


def runs_here(options: PipelineOptions) -> bool:
    """Whether the job ends when the launching process ends: Beam's in-process runner (any
    --direct_running_mode), or a portable runner whose job service is embedded in this process
    (--job_endpoint=embed). Any other job (Dataflow, Flink, a job service elsewhere) outlives its launcher.

    >>> from apache_beam.options.pipeline_options import PipelineOptions
    >>> runs_here(PipelineOptions(["--runner=DirectRunner"])), runs_here(PipelineOptions(["--runner=DataflowRunner"]))
    (True, False)
    >>> runs_here(PipelineOptions(["--runner=PortableRunner", "--job_endpoint=embed"]))
    True
    """
    from apache_beam.options.pipeline_options import PortableOptions

    if _runner_name(options) in _DIRECT_RUNNERS:
        return True
    return options.view_as(PortableOptions).job_endpoint == "embed"


class JobFailed(Exception):
    """A job its runner ran elsewhere ended failed or cancelled; the message is one line saying why."""


# The line of a worker's traceback that names the exception (`ModuleNotFoundError: No module named 'x'`).
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning)\b.*")


def job_failure(exc: BaseException) -> JobFailed:
    """One line for a job a remote runner reports as ended without success, from the runner's report.

    Dataflow's runner raises with the job's state and the service's last error message, whose text is a
    worker's whole traceback ("Error message from worker: Traceback ... ValueError: ..."); a user needs
    the state and the exception the worker raised, which is the last line naming an exception. The
    traceback stays in the launcher's log.

    >>> report = "Dataflow pipeline failed. State: FAILED, Error:\\nError message from worker: Traceback ...\\n"
    >>> str(job_failure(RuntimeError(report + "  File 'x.py'\\nModuleNotFoundError: No module named 'vlnkit'\\n")))
    "the job ended in state FAILED: ModuleNotFoundError: No module named 'vlnkit'"
    >>> str(job_failure(RuntimeError("Dataflow pipeline failed. State: CANCELLED, Error:\\nNone")))
    'the job ended in state CANCELLED'

    Beam's portable runner reports in one line, the runner's last error after the state; Beam's Flink job
    server reports a job cancelled in Flink (its REST API, say) as FAILED, with Flink's cancellation
    exception, which is what the user did, so the line says CANCELLED:

    >>> str(job_failure(RuntimeError("Pipeline j1 failed in state FAILED: java.io.IOException: disk full")))
    'the job ended in state FAILED: java.io.IOException: disk full'
    >>> str(job_failure(RuntimeError("Pipeline j1 failed in state FAILED: "
    ...     "org.apache.flink.runtime.client.JobCancellationException: Job was cancelled.")))
    'the job ended in state CANCELLED: org.apache.flink.runtime.client.JobCancellationException: Job was cancelled.'

    A TaskManager's SDK worker process that ended before it connected is reported by its exit status;
    `vlnkit-sdk-worker`'s status for a Python that cannot import the project is named:

    >>> str(job_failure(RuntimeError("Pipeline j1 failed in state FAILED: java.lang.RuntimeException: "
    ...     "java.lang.IllegalStateException: Process died with exit code 97")))
    "the job ended in state FAILED: an SDK worker's Python cannot import this project (vlnkit-sdk-worker exited 97; the TaskManager's log names the import error)"
    """
    text = str(exc)
    state = re.search(r"\bState: (\w+)|\bin state (\w+)", text)
    name = (state.group(1) or state.group(2)) if state else "FAILED"
    if "JobCancellationException" in text:
        name = "CANCELLED"
    where = f"the job ended in state {name}"
    lines = [line.strip() for line in text.splitlines() if line.strip() and line.strip() != "None"]
    named = [line for line in lines if _EXCEPTION_LINE.match(line)]
    detail = named[-1] if named else (lines[-1] if len(lines) > 1 else "")
    portable = re.match(r"Pipeline \S+ failed in state \w+: (.+)", lines[0]) if lines else None
    if not detail and portable:
        detail = portable.group(1).strip()
    died = re.search(r"Process died with exit code (\d+)", text)
    if died and int(died.group(1)) == IMPORT_FAILED:
        detail = (
            f"an SDK worker's Python cannot import this project (vlnkit-sdk-worker exited {IMPORT_FAILED}; "
            "the TaskManager's log names the import error)"
        )
    return JobFailed(f"{where}: {detail}" if detail else where)
