"""What a launch must have before anything is listed, locked or staged, the same way in every job: no classic
Dataflow template (`refuse_classic_template`), and Google credentials when the run asks Google for anything
in its own name (`refuse_without_credentials`). `pipelines.command.Job.main` calls `check_launch` right after
parsing, so a launch that cannot work ends in one line (exit 2) instead of a traceback or half a minute of
retries.

    >>> from apache_beam.options.pipeline_options import PipelineOptions
    >>> needs_google(PipelineOptions(["--runner=DirectRunner"]), "output/score")
    []
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from pipelines.verdict import JobError

if TYPE_CHECKING:
    from apache_beam.options.pipeline_options import PipelineOptions

# Set (to 1) by the Flex Template entry point (`pipelines.flex_template.launch`) in the process it runs the job
# in: Dataflow's Flex Template launcher runs that process with a --template_location of its own (where the job
# description goes), on a fresh launch each time, so the job's graph, and its version folder, are made then.
FLEX_TEMPLATE_LAUNCH = "VLNKIT_FLEX_TEMPLATE_LAUNCH"
_LOOPBACK = ("localhost", "127.0.0.1", "::1")


def flex_template_launch() -> bool:
    """Whether this process is a job run by the Flex Template entry point."""
    return os.environ.get(FLEX_TEMPLATE_LAUNCH) == "1"


def refuse_classic_template(options: PipelineOptions) -> None:
    """--template_location outside a Flex Template launch: a classic template holds the job's graph as made
    when the template is made, and a job's graph names the version folder it writes (chosen as the run
    starts) and the files it stages; every run of such a template would write into that one folder."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    location = options.view_as(GoogleCloudOptions).template_location
    if location and not flex_template_launch():
        raise JobError(
            "--template_location: classic Dataflow templates are not supported (the template would fix the "
            "version folder every run writes); schedule a Flex Template instead (docs/cloud.md, "
            '"Scheduled runs: a Flex Template")'
        )


def _dataflow(options: PipelineOptions) -> bool:
    from apache_beam.options.pipeline_options import StandardOptions

    runner = options.view_as(StandardOptions).runner  # a name, or a class's dotted path
    name = runner.rsplit(".", 1)[-1].lower() if isinstance(runner, str) else ""
    return name in ("dataflowrunner", "dataflow", "testdataflowrunner")


def needs_google(options: PipelineOptions, output_dir: str) -> list[str]:
    """What this launch asks Google for in its own name: the Dataflow service (the Dataflow runner at a
    Google endpoint, unless --no_auth) and Cloud Storage (--output_dir, and a Dataflow run's temp and staging
    locations, on gs:// while no emulator stands in for it: `STORAGE_EMULATOR_HOST`). Inputs alone on gs:// ask
    for nothing: a public object is read anonymously, as Beam does when no credentials are found.

    >>> from apache_beam.options.pipeline_options import PipelineOptions
    >>> dataflow = ["--runner=DataflowRunner", "--temp_location=gs://b/tmp"]
    >>> needs_google(PipelineOptions(dataflow), "gs://b/out")
    ['the Dataflow service', 'Cloud Storage (gs://b/out)']
    >>> needs_google(PipelineOptions([*dataflow, "--dataflow_endpoint=http://localhost:8080"]), "gs://b/out")
    ['Cloud Storage (gs://b/out)']
    """
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    cloud = options.view_as(GoogleCloudOptions)
    wanted = []
    dataflow = _dataflow(options)
    if dataflow and not cloud.no_auth and urlparse(cloud.dataflow_endpoint or "").hostname not in _LOOPBACK:
        wanted.append("the Dataflow service")
    paths = [output_dir, *([cloud.temp_location, cloud.staging_location] if dataflow else [])]
    on_gcs = [p for p in paths if isinstance(p, str) and p.startswith("gs://")]
    if on_gcs and not os.environ.get("STORAGE_EMULATOR_HOST"):
        wanted.append(f"Cloud Storage ({on_gcs[0]})")
    return wanted


def refuse_without_credentials(options: PipelineOptions, output_dir: str) -> None:
    """Stop in one line when the launch asks Google for something (`needs_google`) and Google's auth chain
    (Application Default Credentials) finds no credentials: Beam would otherwise retry the same search with
    backoff for about 25 s, in warnings, then go on anonymously and fail at the first request."""
    wanted = needs_google(options, output_dir)
    if not wanted:
        return
    import logging

    import google.auth
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    search = logging.getLogger("google.auth._default")  # it warns once per place it looked: the line below says it
    level, search.level = search.level, logging.ERROR
    try:
        google.auth.default(scopes=options.view_as(GoogleCloudOptions).gcp_oauth_scopes)
    except google.auth.exceptions.DefaultCredentialsError:
        raise JobError(
            f"no Google credentials found, and this run needs them for {' and '.join(wanted)}: run "
            "`gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service "
            "account's key file (on Google Cloud, the machine's service account is found by itself)"
        ) from None
    finally:
        search.setLevel(level)


JOB_SERVICE_WAIT_S = 5.0  # how long a launch waits for a job service (a Flink job server) to answer


def refuse_unreachable_job_service(options: PipelineOptions, seconds: float = JOB_SERVICE_WAIT_S) -> None:
    """A portable run whose --job_endpoint (a Flink job server, say) does not answer within `seconds`: stop in
    one line before anything is listed, locked or staged. Beam itself would wait a minute for the channel
    and end in a `grpc.FutureTimeoutError` traceback, after the job had staged its version folder."""
    from apache_beam.options.pipeline_options import PortableOptions, StandardOptions

    runner = options.view_as(StandardOptions).runner
    endpoint = options.view_as(PortableOptions).job_endpoint
    if not isinstance(runner, str) or runner.lower() not in ("portablerunner", "flinkrunner"):
        return
    if not endpoint or endpoint == "embed":
        return
    import grpc

    channel = grpc.insecure_channel(endpoint)
    try:
        grpc.channel_ready_future(channel).result(timeout=seconds)
    except grpc.FutureTimeoutError:
        raise JobError(
            f"no job service answers at --job_endpoint={endpoint} (waited {seconds:.0f} s); for Flink, start "
            "the cluster and its job server first (vlnkit flink-cluster start; docs/cloud.md, Flink)"
        ) from None
    finally:
        channel.close()


def check_launch(options: PipelineOptions, output_dir: str) -> None:
    """Every launch-side check, in order: the cheap flag check first, then the credential search (none
    with --no_auth), then whether a job service the run names answers."""
    refuse_classic_template(options)
    without_credentials(options)
    refuse_without_credentials(options, output_dir)
    refuse_unreachable_job_service(options)


def without_credentials(options: PipelineOptions) -> None:
    """--no_auth: nothing in this process looks for Google credentials. Beam's Dataflow client honours the
    flag, but its Cloud Storage filesystem searches for credentials whatever the options say (about 20 s
    of retries, then anonymous access); so Beam is told, where it keeps the result of that search, that
    none was found: its Cloud Storage clients are then anonymous from the start."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    if not options.view_as(GoogleCloudOptions).no_auth:
        return
    from apache_beam.internal.gcp import auth

    found = getattr(auth, "_Credentials", None)
    if found is not None and hasattr(found, "_credentials_init"):
        with found._credentials_lock:
            found._credentials, found._credentials_init = None, True
