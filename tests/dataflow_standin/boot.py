"""The SDK worker's boot, run by the worker pool for every worker it starts (its `--container_executable`).

What the Beam SDK container's `boot` does once the staged files are installed: ask the runner's
provision service for the pipeline options, then start `sdk_worker_main` with the control and logging
endpoints, the options and the semi-persistent folder (whose `staged/` holds the staged files, among
them the pickled main session when the launcher saved one). A standalone script: it runs in the
workers' environment, which holds Beam and the staged project only.

    boot.py --job_dir=DIR --id=ID --provision_endpoint=HOST:PORT --control_endpoint=HOST:PORT ...
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _whole(value):
    """Struct numbers are doubles; as the Go boot's JSON does, whole ones are written as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    for name in ("job_dir", "id", "logging_endpoint", "artifact_endpoint", "provision_endpoint", "control_endpoint"):
        parser.add_argument(f"--{name}", default="")
    args = parser.parse_args(argv)
    log = open(os.path.join(args.job_dir, "logs", f"worker-{args.id}.log"), "ab", buffering=0)  # noqa: SIM115
    os.dup2(log.fileno(), 1)  # the pool never reads a worker's pipes
    os.dup2(log.fileno(), 2)

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

    env = {
        **os.environ,
        "WORKER_ID": args.id,
        "PIPELINE_OPTIONS": json.dumps(_whole(json_format.MessageToDict(info.pipeline_options))),
        "CONTROL_API_SERVICE_DESCRIPTOR": descriptor(args.control_endpoint),
        "LOGGING_API_SERVICE_DESCRIPTOR": descriptor(args.logging_endpoint),
        "SEMI_PERSISTENT_DIRECTORY": os.path.join(args.job_dir, "semi"),
        "RUNNER_CAPABILITIES": " ".join(info.runner_capabilities),
    }
    os.execve(sys.executable, [sys.executable, "-m", "apache_beam.runners.worker.sdk_worker_main"], env)


if __name__ == "__main__":
    main(sys.argv[1:])
