"""The Dataflow and Flink run profiles parse for every job: every key is a flag Beam 2.77 or the job
knows, with an accepted value (a profile naming a Flink version Beam publishes no job server for,
or a flag that was renamed, fails here rather than on a cluster)."""

from __future__ import annotations

import importlib
import json

import pytest
from apache_beam.options.pipeline_options import (
    FlinkRunnerOptions,
    GoogleCloudOptions,
    PortableOptions,
    SetupOptions,
    StandardOptions,
    WorkerOptions,
)

from pipelines.cli import JOBS  # noqa: E402  (every job)
from tests.conftest import ROOT


@pytest.mark.parametrize("job", JOBS)
def test_dataflow_profile_parses_for_every_job(job):
    options, _ = importlib.import_module(f"pipelines.{job}").JOB.parse([f"--config={ROOT}/configs/dataflow.yaml"])
    assert options.view_as(StandardOptions).runner == "DataflowRunner"
    gcp = options.view_as(GoogleCloudOptions)
    assert gcp.temp_location.startswith("gs://") and gcp.staging_location.startswith("gs://")
    assert options.view_as(SetupOptions).setup_file == "./setup.py"
    assert options.view_as(WorkerOptions).machine_type
    assert options.view_as(WorkerOptions).sdk_container_image.endswith("2.77.0")


@pytest.mark.parametrize("job", JOBS)
def test_flink_profile_parses_for_every_job(job):
    """The job server `vlnkit flink-cluster start` runs (Beam's FlinkRunner, which downloads a jar, is not
    used), SDK workers the TaskManagers start (PROCESS), Flink's parallelism."""
    options, _ = importlib.import_module(f"pipelines.{job}").JOB.parse([f"--config={ROOT}/configs/flink.yaml"])
    assert options.view_as(StandardOptions).runner == "PortableRunner"
    portable = options.view_as(PortableOptions)
    assert portable.job_endpoint == "127.0.0.1:8099" and portable.environment_type == "PROCESS"
    assert json.loads(portable.environment_config) == {"command": "vlnkit-sdk-worker"}
    assert options.view_as(FlinkRunnerOptions).parallelism == 4


def test_the_dataflow_profile_example_uses_flags_that_exist():
    """The command in the profile's header comment parses (e.g. --dataset, not a retired name)."""
    text = (ROOT / "configs" / "dataflow.yaml").read_text()
    example = " ".join(
        line.lstrip("#").strip().rstrip("\\")
        for line in text.splitlines()
        if line.startswith("#   ") or line.startswith("#       ")
    )
    flags = [w for w in example.split() if w.startswith("--")]
    assert any(f.startswith("--dataset=") for f in flags)
    from pipelines import build_r4r

    build_r4r.JOB.parse(flags)  # raises SystemExit on an unknown flag
