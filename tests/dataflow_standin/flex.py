"""Flex Template launches on the stand-in: `FlexTemplatesService.LaunchFlexTemplate`, as the service runs one.

The service reads the template spec (`containerSpecGcsPath`: the image and the template's metadata), checks
the parameters against the metadata (a name it does not declare, or a value its patterns refuse, is
INVALID_ARGUMENT), answers at once with the job's id, and meanwhile runs the image's launcher program on a
machine of its own: the Python file of the image's `FLEX_TEMPLATE_PYTHON_PY_FILE`, with every parameter as
`--name=value` and the launch's environment as Beam flags, among them a `--template_location` of the
service's where the program leaves its job description. Once the program has exited, the service submits
that description under the launch's job id and runs the job like any other. Nobody waits for the program.

The stand-in cannot run a container image: `DataflowStandin.flex_images[image]` says what the image would
run (`FlexImage`, read from the project's Dockerfile by the tests).
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.cloud import dataflow_v1beta3 as dataflow
from google.protobuf import json_format


@dataclass
class FlexImage:
    """What a template image runs: its launcher's Python file (FLEX_TEMPLATE_PYTHON_PY_FILE), the folder
    the file's project is in (the image's WORKDIR), and the image's other environment variables."""

    py_file: Path
    workdir: Path
    env: dict[str, str] = field(default_factory=dict)


def image_from_dockerfile(dockerfile: Path, workdir: Path, build_args: dict[str, str]) -> FlexImage:
    """The ENV lines of `dockerfile` with its ARGs (defaults, then `build_args`) and WORKDIR as `workdir`."""
    args: dict[str, str] = {}
    env: dict[str, str] = {}

    def expand(text: str) -> str:
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: {**args, **env}.get(m.group(1) or m.group(2), ""), text)

    for line in dockerfile.read_text().splitlines():
        words = line.split(None, 1)
        if len(words) != 2:
            continue
        if words[0] == "ARG":
            name, _, default = words[1].partition("=")
            args[name] = build_args.get(name, default)
            if name == "WORKDIR":
                args[name] = str(workdir)
        elif words[0] == "ENV":
            name, _, value = words[1].partition("=")
            env[name] = expand(value.strip().strip('"'))
    py_file = Path(env.pop("FLEX_TEMPLATE_PYTHON_PY_FILE"))
    return FlexImage(py_file=py_file, workdir=workdir, env=env)


def _check_parameters(metadata: dict, parameters: dict[str, str], context) -> None:
    declared = {p["name"]: p for p in metadata.get("parameters", [])}
    for name, value in parameters.items():
        if name not in declared:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"The template parameters are invalid: {name}")
        for pattern in declared[name].get("regexes", []):
            if not re.fullmatch(pattern, value):
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"The template parameter {name}={value!r} fails {pattern}"
                )
    missing = [n for n, p in declared.items() if not p.get("isOptional") and n not in parameters]
    if missing:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Missing required template parameters: {missing}")


def launch(service, request: dataflow.LaunchFlexTemplateRequest, context) -> dataflow.LaunchFlexTemplateResponse:
    from tests.dataflow_standin.service import _download

    param = request.launch_parameter
    spec_file = service.workdir / f"spec-{len(service.jobs) + 1}.json"
    _download(param.container_spec_gcs_path, spec_file)
    spec = json.loads(spec_file.read_text())
    image = service.flex_images.get(spec.get("image", ""))
    if image is None:
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"no such image: {spec.get('image')}")
    parameters = dict(param.parameters)
    _check_parameters(spec.get("metadata", {}), parameters, context)
    environment = dataflow.FlexTemplateRuntimeEnvironment.pb(param.environment)
    env_options = json_format.MessageToDict(environment, preserving_proto_field_name=True)

    job = dataflow.Job(name=param.job_name, project_id=request.project_id, location=request.location)
    run = service.new_job(job)
    description = f"{env_options.get('staging_location', '').rstrip('/')}/template_launches/{run.id}/job_object"
    flags = [f"--{name}={value}" for name, value in parameters.items()]
    flags += [
        "--runner=DataflowRunner",
        f"--project={request.project_id}",
        f"--region={request.location}",
        f"--job_name={param.job_name}",
        f"--template_location={description}",
        f"--dataflow_endpoint={service.endpoint}",
        *(f"--{name}={env_options[name]}" for name in ("temp_location", "staging_location") if name in env_options),
        *(
            [f"--sdk_container_image={env_options['sdk_container_image']}"]
            if "sdk_container_image" in env_options
            else []
        ),
    ]
    env = {**service.launcher_env(), **image.env, "PYTHONPATH": str(image.workdir)}
    log = open(run.folder / "logs" / "launcher.log", "wb")  # noqa: SIM115 -- kept by the child
    proc = subprocess.Popen(
        [sys.executable, str(image.py_file), *flags],
        cwd=image.workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    service.launched.append(proc)
    run.launcher = proc
    run.say(f"Flex Template launcher started: {image.py_file.name} {' '.join(flags[: len(parameters)])}")

    def submit() -> None:
        code = proc.wait()
        if code != 0 or not service.exists(description):
            tail = (run.folder / "logs" / "launcher.log").read_text(errors="replace").strip().splitlines()[-1:]
            run.say(
                f"Error occurred in the launcher container: Template launch failed (exit {code}): {' '.join(tail)}",
                dataflow.JobMessageImportance.JOB_MESSAGE_ERROR,
            )
            run.set_state(dataflow.JobState.JOB_STATE_FAILED)
            return
        submitted = dataflow.Job.from_json(service.read(description), ignore_unknown_fields=True)
        submitted.id, submitted.project_id, submitted.location = run.id, request.project_id, request.location
        submitted.current_state = run.job.current_state
        submitted.create_time = run.job.create_time
        submitted.current_state_time = datetime.datetime.now(datetime.UTC)
        with run.lock:
            run.job = submitted
        service.start_job(run)

    threading.Thread(target=submit, name=f"flex-launch-{run.id}", daemon=True).start()
    return dataflow.LaunchFlexTemplateResponse(job=service.public(run))
