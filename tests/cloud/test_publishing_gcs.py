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

from tests.hostile import environment

ROOT = Path(__file__).resolve().parents[2]
# The child process connects anonymously at once, as the fixture makes this process do (tests/cloud/conftest.py).
CHILD = (
    "import sys, runpy; from apache_beam.internal.gcp import auth; "
    "auth._Credentials._credentials_init = True; auth._Credentials._credentials = None; "
    "sys.argv = ['build_r4r', *sys.argv[1:]]; runpy.run_module('pipelines.build_r4r', run_name='__main__')"
)
POINTS = ["staged", "written", "success", "publishing", "pointed"]


def run(b, argv, fault=None) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STORAGE_EMULATOR_HOST": b.host, "NO_GCE_CHECK": "true"}
    env.pop("VLNKIT_FAULT_POINT", None)
    if fault:
        env["VLNKIT_FAULT_POINT"] = fault
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        env=env,
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


def test_sigkill_while_staging_or_publishing_on_gcs_keeps_the_published_version(gcs_emulator, inputs):
    b = gcs_emulator
    prefix = "killed/build_r4r"

    def argv(dataset):
        return [
            "--runner=DirectRunner",
            f"--dataset={dataset}",
            f"--connectivity_dir={inputs['connectivity']}",
            f"--output_dir={b.url(prefix)}",
        ]

    code, err = run(b, argv(inputs["full"]))
    assert code == 0, err
    for point in POINTS:
        before = published(b, prefix)
        code, err = run(b, argv(inputs["smaller"]), fault=point)
        assert code == -signal.SIGKILL, (point, err)
        if point == "pointed":  # killed after the switch: the new version is published, complete
            after = published(b, prefix)
            assert "_SUCCESS" in after and json.loads(after["manifest.json"])["status"] == "complete"
        else:
            assert published(b, prefix) == before, point
    code, err = run(b, argv(inputs["full"]))
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
