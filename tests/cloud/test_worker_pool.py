"""Every job on separate worker processes: PortableRunner with an EXTERNAL environment, i.e. a Beam
worker pool started here (`apache_beam.runners.worker.worker_pool_main`). Workers talk to the runner
only through the Fn API (the path Dataflow Runner v2 and Flink use) and share no memory with the
launcher, so anything a job keeps in module state or closes over by accident shows up here.
Rows and summaries must equal an in-process DirectRunner run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cloud.conftest import free_port
from tests.conftest import ROOT
from tests.pipelines.test_runners import JOBS, in_process_result, in_process_run, run_job, run_result
from tests.processes import start_module, stop_group, wait_for_port

IN_PROCESS = ["--runner=DirectRunner"]


class Pool(list):
    """The pipeline flags that use the pool, and its log (which names every SDK worker it started)."""

    log: str


@pytest.fixture(scope="module")
def worker_pool(tmp_path_factory):
    """A Beam worker pool subprocess importing this checkout; yields the pipeline flags that use it."""
    port = free_port()
    log = tmp_path_factory.mktemp("worker_pool") / "pool.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    proc = start_module("apache_beam.runners.worker.worker_pool_main", [f"--service_port={port}"], env, log)
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
        stop_group(proc)  # the pool and the SDK workers it started (same session)


@pytest.mark.real_data
@pytest.mark.parametrize("job", JOBS)
def test_worker_pool_gives_the_rows_and_summary_of_an_in_process_run(
    job, worker_pool, shared_data, tmp_path, tmp_path_factory
):
    reference = in_process_result(job, shared_data, tmp_path_factory)  # the session's in-process run
    assert any(reference.values())
    got = run_result(job, worker_pool, shared_data, tmp_path / "worker_pool")
    assert got == reference, f"{job}: the worker pool differs from in-process"
    assert "Starting worker" in Path(worker_pool.log).read_text(), "the pool started no SDK worker"


@pytest.mark.real_data
def test_worker_pool_report_equals_in_process(worker_pool, shared_data, tmp_path, tmp_path_factory):
    # The score run every runner's test compares with (tests/pipelines/test_runners.py), made once a session.
    scores = in_process_run("score", shared_data, tmp_path_factory) / "out"
    conn = f"--connectivity_dir={shared_data}/connectivity"
    tables = {}
    for name, runner_flags in {"in_process": IN_PROCESS, "worker_pool": worker_pool}.items():
        out = tmp_path / name
        run_job("report", [*runner_flags, f"--inputs={scores}", conn, "--draw=2", f"--output_dir={out}"])
        assert (out / "_SUCCESS").exists()
        tables[name] = (json.loads((out / "report_tables.json").read_text()), sorted(os.listdir(out / "figures")))
    assert tables["worker_pool"] == tables["in_process"]
