"""Runs nobody waits for, on the Dataflow stand-in (tests/dataflow_standin): a launcher killed while its job
runs, and a Flex Template launch (the way Cloud Scheduler runs a job), each publish a complete version by
the job alone: rows equal to an in-process run's, and `vlnkit verify` passes. Launches the service
refuses before anything is staged end in one line and never reach it.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.cloud.test_dataflow_jobs import comparable, finish, launch
from tests.cloud.test_gcs_jobs import check_outputs, inputs, run_job  # noqa: F401 -- `inputs` is a fixture
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def reference(gcs_emulator, inputs):  # noqa: F811
    """build_r4r's flags for the small inputs, and its rows and summary from an in-process run."""
    b = gcs_emulator
    flags = [f"--dataset={inputs['r2r']}", f"--connectivity_dir={inputs['connectivity']}"]
    run_job("build_r4r", [*flags, f"--output_dir={b.url('unattended/in_process')}"])
    return flags, comparable(b, "unattended/in_process", ["paths"])


def assert_published_alone(b, prefix: str, reference_rows: dict, capsys) -> None:
    from vlnkit.io.integrity import main as verify_main

    check_outputs(b, prefix, "build_r4r")
    capsys.readouterr()
    assert verify_main([b.url(prefix)]) == 0, capsys.readouterr().err
    assert comparable(b, prefix, ["paths"]) == reference_rows


def test_a_launcher_killed_while_its_job_runs_still_gets_a_complete_verified_version(
    gcs_emulator, dataflow_standin, reference, capsys
):
    b = gcs_emulator
    flags, rows = reference
    prefix = "unattended/killed_launcher"
    proc = launch(dataflow_standin, b, "build_r4r", [*flags, f"--output_dir={b.url(prefix)}"])

    def kill_launcher(run):  # the job's workers are up and its pipeline about to run: the launcher dies
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    dataflow_standin.before_run = kill_launcher
    try:
        run = dataflow_standin.wait_for_job(len(dataflow_standin.jobs) + 1)
        finished = dataflow_standin.wait(run.id)
    finally:
        dataflow_standin.before_run = None
    code, _, _ = finish(proc)
    assert code == -signal.SIGKILL
    assert finished.state.name == "JOB_STATE_DONE", finished.errors
    assert_published_alone(b, prefix, rows, capsys)


def test_a_flex_template_launch_publishes_by_the_pipeline_alone(gcs_emulator, dataflow_standin, reference, capsys):
    """The launch request Cloud Scheduler sends (docs/cloud.md): the stand-in answers at once, runs the image's
    launcher program (FLEX_TEMPLATE_PYTHON_PY_FILE of the Dockerfile) without waiting for it, and runs the job
    it describes."""
    import grpc
    from google.cloud import dataflow_v1beta3 as dataflow
    from google.cloud.dataflow_v1beta3.services.flex_templates_service.transports import (
        FlexTemplatesServiceGrpcTransport,
    )

    from tests.dataflow_standin.flex import image_from_dockerfile

    b = gcs_emulator
    flags, rows = reference
    prefix = "unattended/flex_template"
    image = "us-central1-docker.pkg.dev/standin-project/vlnkit/vlnkit-build_r4r:test"
    dataflow_standin.flex_images[image] = image_from_dockerfile(ROOT / "Dockerfile", ROOT, {"JOB": "build_r4r"})
    metadata = json.loads((ROOT / "flex_template" / "build_r4r.json").read_text())
    spec = b.put(
        "templates/build_r4r.json",
        json.dumps({"image": image, "sdkInfo": {"language": "PYTHON"}, "metadata": metadata}).encode(),
    )
    parameters = dict(f[2:].split("=", 1) for f in flags)
    channel = grpc.secure_channel(
        f"{dataflow_standin.host}:443", grpc.ssl_channel_credentials(dataflow_standin.ca_file.read_bytes())
    )
    client = dataflow.FlexTemplatesServiceClient(transport=FlexTemplatesServiceGrpcTransport(channel=channel))
    started = time.time()
    response = client.launch_flex_template(
        request=dataflow.LaunchFlexTemplateRequest(
            project_id="standin-project",
            location="us-central1",
            launch_parameter=dataflow.LaunchFlexTemplateParameter(
                job_name="vlnkit-build-r4r-nightly",
                container_spec_gcs_path=spec,
                parameters={**parameters, "output_dir": b.url(prefix)},
                environment=dataflow.FlexTemplateRuntimeEnvironment(
                    temp_location=b.url("dataflow/tmp"),
                    staging_location=b.url("dataflow/staging"),
                    sdk_container_image=image,
                ),
            ),
        )
    )
    answered = time.time() - started
    run = dataflow_standin.jobs[response.job.id]
    assert run.launcher is not None and run.launcher.poll() is None, "the launch waited for the launcher program"
    assert answered < 5, answered
    finished = dataflow_standin.wait(run.id)
    launcher_log = (run.folder / "logs" / "launcher.log").read_text()
    assert finished.state.name == "JOB_STATE_DONE", (finished.errors, launcher_log[-3000:])
    assert run.launcher.returncode == 0, launcher_log[-3000:]
    assert_published_alone(b, prefix, rows, capsys)
    # The template's metadata is checked as the service checks it: an undeclared parameter is refused.
    with pytest.raises(Exception, match="invalid"):
        client.launch_flex_template(
            request=dataflow.LaunchFlexTemplateRequest(
                project_id="standin-project",
                location="us-central1",
                launch_parameter=dataflow.LaunchFlexTemplateParameter(
                    job_name="x",
                    container_spec_gcs_path=spec,
                    parameters={"no_such_flag": "1", "output_dir": b.url("x")},
                ),
            )
        )
    channel.close()


def test_launches_refused_before_anything_is_staged_end_in_one_line(
    gcs_emulator, dataflow_standin, reference, tmp_path
):
    """A classic template, and a launch without credentials: one line each, exit 2, no request to the service,
    nothing staged."""
    b = gcs_emulator
    flags, _ = reference
    jobs = len(dataflow_standin.jobs)
    staged = b.list("dataflow/staging")
    classic = launch(
        dataflow_standin,
        b,
        "build_r4r",
        [
            *flags,
            f"--output_dir={b.url('unattended/classic')}",
            f"--template_location={b.url('templates/classic.json')}",
        ],
    )
    code, out, err = finish(classic)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Flex Template" in err, err
    started = time.time()
    env_without = {"GOOGLE_APPLICATION_CREDENTIALS": "", "CLOUDSDK_CONFIG": str(tmp_path)}
    proc = launch(
        dataflow_standin,
        b,
        "build_r4r",
        [*flags, f"--output_dir={b.url('unattended/no_credentials')}"],
        env=env_without,
    )
    code, out, err = finish(proc)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "credentials" in err, err
    assert time.time() - started < 20
    assert len(dataflow_standin.jobs) == jobs
    assert b.list("dataflow/staging") == staged
    assert not b.list("unattended/classic") and not b.list("unattended/no_credentials")
