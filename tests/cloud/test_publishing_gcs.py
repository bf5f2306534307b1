"""Stage, then publish on gs:// (the Cloud Storage emulator): a run killed at any point of staging or
publishing leaves the published objects byte for byte as they were, and the next run succeeds and
removes what the killed one left. The pointer object decides what is published."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.forked_runs import ForkServer
from tests.hostile import environment

ROOT = Path(__file__).resolve().parents[2]
# The child process connects anonymously at once, as the fixture makes this process do (tests/cloud/conftest.py).
CHILD = (
    "import sys, runpy; from apache_beam.internal.gcp import auth; "
    "auth._Credentials._credentials_init = True; auth._Credentials._credentials = None; "
    "sys.argv = ['build_r4r', *sys.argv[1:]]; runpy.run_module('pipelines.build_r4r', run_name='__main__')"
)
POINTS = ["staged", "written", "success", "publishing", "pointed"]
# What the child imports before its first line runs, as a command naming gs:// paths imports it
# (pipelines.beam_import: Beam whole, Google Cloud's clients and Beam's GCS filesystem among it).
PRELUDE = """
from pipelines.beam_import import import_beam, job_command
with job_command():
    import_beam(["--output_dir=gs://bucket/out"])
import apache_beam.io.gcp.gcsio, apache_beam.io.parquetio, apache_beam.runners.portability.fn_api_runner.fn_runner
import google.cloud.storage, pyarrow.parquet
import pipelines.job, transforms.publish, transforms.r4r, transforms.write, vlnkit.runs.publication
"""


def environ(b, fault=None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STORAGE_EMULATOR_HOST": b.host, "NO_GCE_CHECK": "true"}
    env.pop("VLNKIT_FAULT_POINT", None)
    if fault:
        env["VLNKIT_FAULT_POINT"] = fault
    return env


@pytest.fixture(scope="module")
def forks(gcs_emulator):
    """The child runs forked from one interpreter that imported what they import (tests/forked_runs.py): each
    a process of its own that a fault point kills, without paying Python's and Beam's start every time."""
    server = ForkServer(PRELUDE, ["pipelines.build_r4r"], ROOT, environ(gcs_emulator))
    yield server
    server.close()


def run(b, argv, fault=None, forks=None) -> tuple[int, str]:
    """The child (`python -c CHILD argv`): its exit code and standard error (forked from `forks` if given)."""
    if forks is not None:
        proc = forks.run_code(CHILD, argv, ROOT, environ(b, fault))
        _, err = proc.communicate(timeout=180)
        return proc.returncode, err
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        env=environ(b, fault),
        capture_output=True,
        text=True,
        timeout=180,
        start_new_session=True,
    )
    return proc.returncode, proc.stderr


def published(b, prefix: str) -> dict[str, bytes]:
    version = b.get(f"{prefix}/current").decode().strip()
    folder = f"{prefix}/versions/{version}"
    return {n: b.get(f"{folder}/{n}") for n in b.list(folder)}


@pytest.fixture(scope="module")
def inputs(gcs_emulator, tmp_path_factory):
    b = gcs_emulator
    env = environment(tmp_path_factory.mktemp("gcs_publishing"))
    records = json.loads(Path(env["dataset"]).read_text())
    conn = Path(env["connectivity_dir"])
    for f in conn.iterdir():
        b.upload(str(f), f"publishing/connectivity/{f.name}")
    return {
        "full": b.put("publishing/r2r.json", json.dumps(records).encode()),
        "smaller": b.put("publishing/r2r_smaller.json", json.dumps(records[:3]).encode()),
        "connectivity": b.url("publishing/connectivity"),
    }


def test_sigkill_while_staging_or_publishing_on_gcs_keeps_the_published_version(gcs_emulator, inputs, forks):
    b = gcs_emulator
    prefix = "killed/build_r4r"

    def argv(dataset):
        return [
            "--runner=DirectRunner",
            f"--dataset={dataset}",
            f"--connectivity_dir={inputs['connectivity']}",
            f"--output_dir={b.url(prefix)}",
        ]

    code, err = run(b, argv(inputs["full"]), forks=forks)
    assert code == 0, err
    for point in POINTS:
        before = published(b, prefix)
        code, err = run(b, argv(inputs["smaller"]), fault=point, forks=forks)
        assert code == -signal.SIGKILL, (point, err)
        if point == "pointed":  # killed after the switch: the new version is published, complete
            after = published(b, prefix)
            assert "_SUCCESS" in after and json.loads(after["manifest.json"])["status"] == "complete"
        else:
            assert published(b, prefix) == before, point
    code, err = run(b, argv(inputs["full"]), forks=forks)
    assert code == 0, err
    names = b.list(prefix)
    versions = {n.split("/")[1] for n in names if n.startswith("versions/")}
    assert {n.split("/")[0] for n in names} == {"current", "versions"}  # no lock left, nothing else
    assert len(versions) == 2 and all(f"versions/{v}/_SUCCESS" in names for v in versions)
    assert not [n for n in names if "beam-temp" in n]
    assert json.loads(published(b, prefix)["summary.json"])["records_read"] == 6


def test_a_lock_on_gcs_is_renewed_by_any_process_of_its_run_and_never_brought_back(gcs_emulator):
    """What a job's workers do with a gs:// lock: renew it by its token (a write conditional on the
    generation just read), release it, and never write it again once released or taken over."""
    import pickle

    from vlnkit.io.lock import OutputLock

    root = gcs_emulator.url("publishing/lock_renewals")
    lock = OutputLock(root, "run-1", lease_seconds=60, in_process=False)
    lock.acquire()
    lock.stop_heartbeat()
    worker = pickle.loads(pickle.dumps(lock))
    first = json.loads(gcs_emulator.get("publishing/lock_renewals/lock.json"))
    worker.heartbeat()
    renewed = json.loads(gcs_emulator.get("publishing/lock_renewals/lock.json"))
    assert renewed["token"] == first["token"] and renewed["heartbeat"] > first["heartbeat"] and not worker.lost
    assert gcs_emulator.list("publishing/lock_renewals") == ["lock.json"]
    worker.release()
    assert gcs_emulator.list("publishing/lock_renewals") == []
    lock.heartbeat()
    assert lock.lost and gcs_emulator.list("publishing/lock_renewals") == []


def test_a_flex_template_launch_hands_its_run_to_the_job(gcs_emulator, inputs, tmp_path):
    """Dataflow's Flex Template launcher runs the job with a --template_location of its own: the real
    DataflowRunner only writes the job's description there and the job runs later, unwatched. The launch
    ends in one line, without waiting or a traceback, leaving the lock held for the job (judged by its
    heartbeat, not by the launcher's process) and nothing published."""
    b = gcs_emulator
    prefix = "flex/build_r4r"
    argv = [
        "--runner=DataflowRunner",
        "--project=p",
        "--region=us-central1",
        "--dataflow_endpoint=http://localhost:9",  # never called: the runner only writes the description
        f"--temp_location={b.url('flex/tmp')}",
        f"--staging_location={b.url('flex/staging')}",
        f"--template_location={b.url('flex/templates/build_r4r.json')}",
        f"--dataset={inputs['full']}",
        f"--connectivity_dir={inputs['connectivity']}",
        f"--output_dir={b.url(prefix)}",
    ]
    os.environ["VLNKIT_FLEX_TEMPLATE_LAUNCH"] = "1"  # as pipelines.flex_template.launch marks its process
    try:
        code, err = run(b, argv)
    finally:
        os.environ.pop("VLNKIT_FLEX_TEMPLATE_LAUNCH")
    assert code == 0 and "Traceback" not in err, err
    template = json.loads(b.get("flex/templates/build_r4r.json"))  # the job's description, for the launcher
    assert template["type"] == "JOB_TYPE_BATCH"
    assert any(n.endswith("pipeline.pb") for n in b.list("flex/staging")), b.list("flex/staging")
    lock = json.loads(b.get(f"{prefix}/lock.json"))
    assert lock["in_process"] is False
    assert not [n for n in b.list(prefix) if n == "current"]
