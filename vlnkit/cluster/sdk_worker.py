"""`vlnkit-sdk-worker`: the Python SDK worker a Flink TaskManager starts beside itself for a job whose
environment is `--environment_type=PROCESS --environment_config='{"command": "vlnkit-sdk-worker"}'`.

What the Beam SDK container's `boot` does, without a container: ask the TaskManager's provision service
for the pipeline options, then become `sdk_worker_main` with the control and logging endpoints. The
worker runs the project as installed in the Python environment of this command (the cluster's); the
job's staged files are not installed (a PROCESS environment has no container to install them into).

Before it becomes the worker, it imports the project's packages. A Python that cannot exits with
`IMPORT_FAILED`, the import error sent to the TaskManager's log through Beam's logging service. Why not
let the worker fail on its first bundle: the Beam 2.77 worker then answers the bundle with the import
error, but Beam 2.62's Flink runner, waiting on the bundle's data, does not see the answer and fails
the job only after a 3-minute timeout, naming the timeout. A worker process that ends before it connects is
seen within 5 s ("Process died with exit code N"), and `pipelines.runners.job_failure` turns this
status into a line that says why.

    vlnkit-sdk-worker --id=ID --provision_endpoint=HOST:PORT --control_endpoint=HOST:PORT ...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile


def _whole(value):
    """Struct numbers are doubles; as the Go boot's JSON does, whole ones are written as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


IMPORT_FAILED = 97  # the exit status of a worker whose Python cannot import the project
PROJECT_PACKAGES = ("vlnkit", "pipelines", "transforms")  # what a job's pickled steps import


def project_import_error() -> str | None:
    """Why this Python cannot import the project's packages (one line), or None when it can."""
    import importlib

    for name in PROJECT_PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return f"vlnkit-sdk-worker: {sys.executable} cannot import {name}: {exc!r}"
    return None


def _report(message: str, logging_url: str) -> None:
    """`message` on stderr and, when known, through the TaskManager's Fn API logging service into its log:
    Beam's runner sends a PROCESS worker's own output to /dev/null."""
    print(message, file=sys.stderr, flush=True)
    if not logging_url:
        return
    import logging

    from apache_beam.portability.api import endpoints_pb2
    from apache_beam.runners.worker.log_handler import FnApiLogRecordHandler

    handler = FnApiLogRecordHandler(endpoints_pb2.ApiServiceDescriptor(url=logging_url))
    handler.emit(logging.LogRecord("vlnkit-sdk-worker", logging.ERROR, __file__, 0, message, None, None))
    handler.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="vlnkit-sdk-worker")
    for name in ("id", "logging_endpoint", "artifact_endpoint", "provision_endpoint", "control_endpoint"):
        parser.add_argument(f"--{name}", default="")
    parser.add_argument("--semi_persist_dir", default="")
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    failure = project_import_error()

    import grpc
    from apache_beam.portability.api import beam_provision_api_pb2, beam_provision_api_pb2_grpc, endpoints_pb2
    from google.protobuf import json_format, text_format

    try:
        with grpc.insecure_channel(args.provision_endpoint) as channel:
            info = (
                beam_provision_api_pb2_grpc.ProvisionServiceStub(channel)
                .GetProvisionInfo(
                    beam_provision_api_pb2.GetProvisionInfoRequest(),
                    metadata=[("worker_id", args.id)],
                    timeout=10 if failure else 60,
                )
                .info
            )
    except grpc.RpcError:
        if not failure:
            raise
        info = None
    if failure:
        _report(failure, info.logging_endpoint.url if info is not None else args.logging_endpoint)
        sys.exit(IMPORT_FAILED)

    def descriptor(url: str) -> str:
        return text_format.MessageToString(endpoints_pb2.ApiServiceDescriptor(url=url))

    semi = args.semi_persist_dir or tempfile.mkdtemp(prefix=f"sdk-worker-{args.id}-")
    env = {
        **os.environ,
        "WORKER_ID": args.id,
        "PIPELINE_OPTIONS": json.dumps(_whole(json_format.MessageToDict(info.pipeline_options))),
        "CONTROL_API_SERVICE_DESCRIPTOR": descriptor(info.control_endpoint.url or args.control_endpoint),
        "LOGGING_API_SERVICE_DESCRIPTOR": descriptor(info.logging_endpoint.url or args.logging_endpoint),
        "SEMI_PERSISTENT_DIRECTORY": semi,
        "RUNNER_CAPABILITIES": " ".join(info.runner_capabilities),
    }
    os.execve(sys.executable, [sys.executable, "-m", "apache_beam.runners.worker.sdk_worker_main"], env)


if __name__ == "__main__":
    main()
