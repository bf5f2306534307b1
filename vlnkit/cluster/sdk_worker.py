"""`vlnkit-sdk-worker`: the Python SDK worker a Flink TaskManager starts beside itself for a job whose
environment is `--environment_type=PROCESS --environment_config='{"command": "vlnkit-sdk-worker"}'`.

What the Beam SDK container's `boot` does, without a container: ask the TaskManager's provision service
for the pipeline options, then become `sdk_worker_main` with the control and logging endpoints. The
worker runs the project as installed in the Python environment of this command (the cluster's); the
job's staged files are not installed (a PROCESS environment has no container to install them into).

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="vlnkit-sdk-worker")
    for name in ("id", "logging_endpoint", "artifact_endpoint", "provision_endpoint", "control_endpoint"):
        parser.add_argument(f"--{name}", default="")
    parser.add_argument("--semi_persist_dir", default="")
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)

    import grpc
    from apache_beam.portability.api import beam_provision_api_pb2, beam_provision_api_pb2_grpc, endpoints_pb2
    from google.protobuf import json_format, text_format

    with grpc.insecure_channel(args.provision_endpoint) as channel:
        info = (
            beam_provision_api_pb2_grpc.ProvisionServiceStub(channel)
            .GetProvisionInfo(
                beam_provision_api_pb2.GetProvisionInfoRequest(), metadata=[("worker_id", args.id)], timeout=60
            )
            .info
        )

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
