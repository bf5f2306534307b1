"""Every job on separate worker processes: PortableRunner with an EXTERNAL environment, i.e. a Beam
worker pool started here (`apache_beam.runners.worker.worker_pool_main`). Workers talk to the runner
only through the Fn API (the path Dataflow Runner v2 and Flink use) and share no memory with the
launcher, so anything a job keeps in module state or closes over by accident shows up here.
Rows and summaries must equal an in-process DirectRunner run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cloud.conftest import free_port
from tests.conftest import ROOT
from tests.pipelines.test_runners import JOBS, job_flags, outputs_per_runner, run_job

IN_PROCESS = ["--runner=DirectRunner"]


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 60.0) -> None:
    import socket
    import time

    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the worker pool exited with code {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the worker pool did not listen on port {port} within {seconds} s")


class Pool(list):
    """The pipeline flags that use the pool, and its log (which names every SDK worker it started)."""

    log: str


@pytest.fixture(scope="module")
def worker_pool(tmp_path_factory):
    """A Beam worker pool subprocess importing this checkout; yields the pipeline flags that use it."""
    port = free_port()
    log = tmp_path_factory.mktemp("worker_pool") / "pool.log"
    log_file = open(log, "wb")  # noqa: SIM115 -- open for the life of the pool
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"],
        cwd=ROOT,
        env=env,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port, proc)
        pool = Pool(
            [
                "--runner=PortableRunner",
                "--job_endpoint=embed",
                "--environment_type=EXTERNAL",
                f"--environment_config=localhost:{port}",
            ]
        )
        pool.log = str(log)
        yield pool
    finally:
        # The pool and the SDK workers it started (same session).
        import signal

        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log_file.close()


@pytest.mark.real_data
@pytest.mark.parametrize("job", JOBS)
def test_worker_pool_gives_the_rows_and_summary_of_an_in_process_run(job, worker_pool, shared_data, tmp_path):
    results = outputs_per_runner(job, {"in_process": IN_PROCESS, "worker_pool": worker_pool}, shared_data, tmp_path)
    assert any(results["in_process"].values())
    assert results["worker_pool"] == results["in_process"], f"{job}: the worker pool differs from in-process"
    assert "Starting worker" in Path(worker_pool.log).read_text(), "the pool started no SDK worker"


@pytest.mark.real_data
def test_worker_pool_report_equals_in_process(worker_pool, shared_data, tmp_path):
    flags, _ = job_flags("score", shared_data, tmp_path / "score")
    run_job("score", [*IN_PROCESS, *flags, f"--output_dir={tmp_path}/score/out"])
    conn = f"--connectivity_dir={shared_data}/connectivity"
    tables = {}
    for name, runner_flags in {"in_process": IN_PROCESS, "worker_pool": worker_pool}.items():
        out = tmp_path / name
        run_job("report", [*runner_flags, f"--inputs={tmp_path}/score/out", conn, "--draw=2", f"--output_dir={out}"])
        assert (out / "_SUCCESS").exists()
        tables[name] = (json.loads((out / "report_tables.json").read_text()), sorted(os.listdir(out / "figures")))
    assert tables["worker_pool"] == tables["in_process"]
