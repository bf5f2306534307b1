"""A run nobody waits for is published by its own job: Beam's portable path with an external job service
(`local_job_service_main`, the runner in a process of its own, as a Flink job server or Dataflow is) and
an external worker pool. The launcher submits and exits (`--no_wait`), or is killed (SIGKILL) once its
job runs; the pipeline's last step still judges the run, writes the manifest and `_SUCCESS`, switches
the pointer and releases the lock, and `vlnkit verify` accepts the version. Meanwhile the job's workers
keep its lock alive, so a second run is refused even after the dead launcher's lease would have run
out; a job that fails leaves the published version byte for byte.

The workers of this module's pool hold every run at the start of its last step until the gate file
exists (`VLNKIT_FAULT_POINT=written?GATE`), so a test can act while a job is known to be running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.cloud.conftest import free_port
from tests.conftest import ROOT
from tests.hostile import environment
from tests.pipelines.test_publishing import finish, snapshot
from tests.processes import start_module, stop_group, wait_for_port
from vlnkit.io import integrity
from vlnkit.io.layout import current_version

LEASE = "--lock_lease_seconds=3"  # heartbeats every 0.75 s: a lock nobody renews is stale after 3 s


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """A worker pool whose workers hold each run's last step at a gate, and a job service using it."""
    where = tmp_path_factory.mktemp("unattended")
    gate = where / "gate"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "VLNKIT_FAULT_POINT": f"written?{gate}",
    }
    pool_port, job_port = free_port(), free_port()
    pool = start_module(
        "apache_beam.runners.worker.worker_pool_main", [f"--service_port={pool_port}"], env, where / "pool.log"
    )
    env.pop("VLNKIT_FAULT_POINT")
    jobs = start_module(
        "apache_beam.runners.portability.local_job_service_main", [f"--port={job_port}"], env, where / "js.log"
    )
    try:
        wait_for_port(pool_port, pool)
        wait_for_port(job_port, jobs)
        yield {
            "flags": [
                "--runner=PortableRunner",
                f"--job_endpoint=localhost:{job_port}",
                "--environment_type=EXTERNAL",
                f"--environment_config=localhost:{pool_port}",
            ],
            "gate": gate,
            "inputs": environment(where),
            "where": where,
        }
    finally:
        stop_group(jobs)
        stop_group(pool)


def launch(service, out: Path, *more: str, dataset: str | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("VLNKIT_FAULT_POINT", None)
    argv = [
        *service["flags"],
        f"--dataset={dataset or service['inputs']['dataset']}",
        f"--connectivity_dir={service['inputs']['connectivity_dir']}",
        f"--output_dir={out}",
        LEASE,
        *more,
    ]
    return start_module("pipelines.build_r4r", argv, env)


def in_process(service, out: Path, dataset: str | None = None) -> dict:
    from pipelines.build_r4r import main

    return main(
        [
            "--runner=DirectRunner",
            f"--dataset={dataset or service['inputs']['dataset']}",
            f"--connectivity_dir={service['inputs']['connectivity_dir']}",
            f"--output_dir={out}",
        ]
    )


def wait_until(condition, seconds: float = 120.0, what: str = "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.1)


def rows(out: Path) -> list[str]:
    table = pq.read_table(sorted(str(p) for p in (out / "current").glob("paths-*.parquet")))
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def test_a_launch_that_does_not_wait_is_published_by_its_job(service, tmp_path):
    reference, out = tmp_path / "in_process", tmp_path / "D"
    in_process(service, reference)
    service["gate"].unlink(missing_ok=True)
    launcher = launch(service, out, "--no_wait")
    code, err = finish(launcher, timeout=120)
    assert code == 0, err
    assert not (out / "current").exists() and (out / "lock.json").exists()  # the launcher is gone, its job holds
    service["gate"].touch()
    wait_until(lambda: current_version(str(out)) is not None and not (out / "lock.json").exists(), what="publish")
    assert integrity.verify(str(out)) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["version"] == current_version(str(out))
    assert [i["sha256"] for i in manifest["inputs"]] == [
        i["sha256"] for i in json.loads((reference / "manifest.json").read_text())["inputs"]
    ]
    assert rows(out) == rows(reference) and rows(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads((reference / "summary.json").read_text())


def test_a_killed_launcher_still_gets_its_version_and_a_second_run_meanwhile_is_refused(service, tmp_path, capsys):
    out = tmp_path / "D"
    in_process(service, out, service["inputs"]["dataset"])
    before, published = snapshot(out), current_version(str(out))
    service["gate"].unlink(missing_ok=True)
    launcher = launch(service, out)  # waits for its job, until it is killed
    staged = lambda: [v for v in (out / "versions").iterdir() if v.name != published and (v / "summary.json").exists()]  # noqa: E731
    wait_until(lambda: staged(), what="the job to reach its last step")
    os.killpg(launcher.pid, signal.SIGKILL)
    code, _ = finish(launcher)
    assert code == -signal.SIGKILL
    time.sleep(4.5)  # longer than the lease: only the job's workers keep the lock alive now
    lock = json.loads((out / "lock.json").read_text())
    assert lock["pid"] == launcher.pid and time.time() - lock["heartbeat"] < 3
    with pytest.raises(SystemExit) as refused:
        in_process(service, out)
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "another run holds this output" in err and "its job runs on the runner's workers" in err, err
    assert snapshot(out) == before and current_version(str(out)) == published
    service["gate"].touch()
    wait_until(lambda: current_version(str(out)) != published and not (out / "lock.json").exists(), what="publish")
    assert integrity.verify(str(out)) == []
    assert json.loads((out / "manifest.json").read_text())["version"] == staged()[0].name


def test_a_job_that_fails_leaves_the_published_version_byte_for_byte(service, tmp_path):
    service["gate"].touch()
    out = tmp_path / "D"
    in_process(service, out)
    before = snapshot(out)
    broken = tmp_path / "broken.json"  # its only record is bad: nothing usable is read
    broken.write_text(json.dumps([{"scan": "nowhere", "path_id": 1}]))
    # Waited for: the launcher reads the verdict back, exit 3 with one line.
    code, err = finish(launch(service, out, dataset=str(broken)))
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 3 and len(errors) == 1 and "the published output is unchanged" in errors[0], err
    assert snapshot(out) == before
    # Nobody waits: the job fails by itself, and publishes nothing.
    code, err = finish(launch(service, out, "--no_wait", dataset=str(broken)))
    assert code == 0, err
    wait_until(lambda: not (out / "lock.json").exists(), what="the job to end")
    assert snapshot(out) == before
    failed = json.loads((out / "failed" / "manifest.json").read_text())
    assert failed["status"] == "failed" and "nothing usable was read" in failed["failure"]
    assert integrity.verify(str(out)) == []
