"""Jobs on a real Flink session cluster: a JobManager, two TaskManagers (each its own JVM) and Beam 2.62's
Flink job server, started once for this module by `vlnkit.cluster.flink.start` from configs/flink-cluster.yaml
(ports and folders of its own). Every job is launched as a user launches it,
`python -m pipelines.<job> --config=configs/flink.yaml`, with only the job endpoint changed; the SDK workers
are started by the TaskManagers (PROCESS environment), never by the launcher.

The workers of a run can be held at the start of its last step until a gate file exists
(`VLNKIT_FAULT_POINT=written?GATE`, given through the environment's `env`), so that a test acts while a job
is known to be running on the cluster.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.cloud.conftest import free_port
from tests.conftest import ROOT
from tests.pipelines.test_publishing import finish, snapshot
from tests.pipelines.test_runners import (
    JOBS,
    comparable_result,
    in_process_result,
    job_flags,
    neutral_rows,
    rows,
)
from tests.processes import start_module
from vlnkit.cluster import flink as cluster
from vlnkit.io import integrity
from vlnkit.io.layout import current_version

pytestmark = pytest.mark.real_data


@pytest.fixture(scope="module")
def flink(tmp_path_factory):
    config = cluster.load_config(str(ROOT / "configs" / "flink-cluster.yaml"))
    config["state_dir"] = str(tmp_path_factory.mktemp("flink"))
    config["job_port"], config["artifact_port"] = free_port(), free_port()
    config["flink"]["rest.port"], config["flink"]["jobmanager.rpc.port"] = free_port(), free_port()
    cluster.start(config)
    try:
        yield config
    finally:
        cluster.stop(config)


def environment(command: str = "vlnkit-sdk-worker", **env: str) -> str:
    return "--environment_config=" + json.dumps({"command": command, "env": env})


def launch(flink, job: str, flags: list[str], *more: str) -> object:
    argv = [
        f"--config={ROOT}/configs/flink.yaml",
        f"--job_endpoint=127.0.0.1:{flink['job_port']}",
        *flags,
        *more,
    ]
    env = {k: v for k, v in os.environ.items() if k != "VLNKIT_FAULT_POINT"}
    return start_module(f"pipelines.{job}", argv, env)


def in_process(job: str, flags: list[str]) -> dict:
    import importlib

    return importlib.import_module(f"pipelines.{job}").main(["--runner=DirectRunner", *flags])


def in_background(proc, timeout: float) -> Future:
    """`finish(proc)` in a thread (its pipes drained from now on), so that the test's in-process reference
    runs while the cluster runs the job."""
    return ThreadPoolExecutor(max_workers=1).submit(finish, proc, timeout)


def rest(flink, path: str, method: str = "GET") -> dict:
    url = f"{cluster.rest_url(flink)}{path}"
    with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as response:
        body = response.read()
    return json.loads(body) if body else {}


TERMINAL = ("FINISHED", "FAILED", "CANCELED")


def jobs(flink) -> dict[str, str]:
    """Every job the cluster knows: id -> Flink's state."""
    return {j["jid"]: j["state"] for j in rest(flink, "/jobs/overview")["jobs"]}


def new_job(flink, before: dict[str, str], state: str | None = None) -> str | None:
    """The one job the cluster did not know in `before` (in `state`, if given), or None yet."""
    found = [jid for jid, s in jobs(flink).items() if jid not in before and (state is None or s == state)]
    assert len(found) <= 1, found
    return found[0] if found else None


def running_taskmanagers(flink, jid: str | None) -> set[str]:
    """The resource ids (`taskmanager-<i>`, configs/flink-cluster.yaml) of the TaskManagers running a task of `jid`."""
    if jid is None:
        return set()
    found = set()
    for vertex in rest(flink, f"/jobs/{jid}")["vertices"]:
        if vertex["status"] == "RUNNING":
            for tm in rest(flink, f"/jobs/{jid}/vertices/{vertex['id']}/taskmanagers")["taskmanagers"]:
                if tm["status"] == "RUNNING":
                    found.add(tm["taskmanager-id"])
    return found


def holding_taskmanager(flink, jid: str, polls: int = 5) -> str:
    """The TaskManager that runs a held job's last step: the one `running_taskmanagers(flink, jid)` names
    alone for `polls` polls in a row (0.2 s apart). The step runs as one task, and the job's other tasks end
    on their own; read sooner, the set can still name a TaskManager whose last task is ending, whose loss
    the job never sees."""
    seen: set[str] = set()
    streak = 0

    def alone() -> bool:
        nonlocal seen, streak
        now = running_taskmanagers(flink, jid)
        streak = streak + 1 if len(now) == 1 and now == seen else 0
        seen = now
        return streak >= polls

    wait_until(alone, what="one TaskManager left running the job's held last step")
    return next(iter(seen))


def wait_until(condition, seconds: float = 300.0, what: str = "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.2)


def one_error_line(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error: ")]


@pytest.mark.parametrize("job", ["build_r4r", "score"])
def test_a_job_on_the_cluster_gives_the_rows_of_an_in_process_run(job, flink, shared_data, tmp_path, tmp_path_factory):
    """build_r4r: rows, summary and the R4R JSON file byte for byte (its digest) equal the session's in-process
    run (`in_process_result`); score, with three agents, equal an in-process run made here meanwhile."""
    flags, prefixes = job_flags(job, shared_data, tmp_path / "flink")
    if job == "score":  # three agents with intervals: the third is the first one under another name
        third = next(f for f in flags if f.startswith("--predictions=random=")).replace("random=", "again=", 1)
        flags.append(third)
    ending = in_background(launch(flink, job, [*flags, f"--output_dir={tmp_path}/flink/out"]), timeout=900)
    if job == "build_r4r":
        reference = in_process_result(job, shared_data, tmp_path_factory)
        code, err = ending.result()
        assert code == 0, err[-3000:]
        assert comparable_result(tmp_path / "flink", prefixes) == reference and any(reference.values())
        assert reference["R4R.json"] and integrity.verify(str(tmp_path / "flink" / "out")) == []
        return
    ref_flags, _ = job_flags(job, shared_data, tmp_path / "local")
    ref_flags.append(third)
    in_process(job, [*ref_flags, f"--output_dir={tmp_path}/local/out"])  # while the cluster runs its copy
    code, err = ending.result()
    assert code == 0, err[-3000:]
    got, want = rows(tmp_path / "flink" / "out", prefixes), rows(tmp_path / "local" / "out", prefixes)
    assert got == want and any(want.values())

    def summary(side):
        return json.loads((tmp_path / side / "out" / "summary.json").read_text())

    def strip(s):
        return json.loads(json.dumps(s).replace(str(tmp_path / "flink"), "<w>").replace(str(tmp_path / "local"), "<w>"))

    assert strip(summary("flink")) == strip(summary("local"))
    assert integrity.verify(str(tmp_path / "flink" / "out")) == []


# The jobs the test above does not run: each on the cluster gives its in-process rows.
OTHER_JOBS = [job for job in JOBS if job not in ("build_r4r", "score")]
# The score job on the other tasks' files (small real subsets, as their own tests pick them), and the report.
OTHER_TASKS = ["score_reverie", "score_cvdn", "score_continuous"]


def task_flags(name: str, data: Path, tmp: Path) -> list[str]:
    """Flags of the score job for REVERIE (three val_seen scans, the ground-truth walk naming its object),
    CVDN (val_seen, the seq2seq agent) or R2R-CE (val_unseen, the CMA agent), bootstrap on."""
    conn = f"--connectivity_dir={data}/connectivity"
    if name == "score_reverie":
        dataset, preds = tmp.parent / "REVERIE_val_seen_3_scans.json", tmp.parent / "reverie_good.json"
        if not dataset.exists():
            dataset.parent.mkdir(parents=True, exist_ok=True)
            records = json.loads((data / "reverie" / "v1" / "REVERIE_val_seen.json").read_text())
            scans = sorted({r["scan"] for r in records})[:3]
            records = [r for r in records if r["scan"] in scans]
            dataset.write_text(json.dumps(records))
            walks = [
                {"instr_id": f"{r['path_id']}_{r['objId']}_{k}", "trajectory": [[v, 0, 0] for v in r["path"]],
                 "predObjId": r["objId"]}
                for r in records for k in range(len(r["instructions"]))
            ]  # fmt: skip
            preds.write_text(json.dumps(walks))
        visibility = f"--visibility={data}/reverie/v1/BBox"
        return [f"--dataset={dataset}", f"--predictions=gt={preds}", conn, visibility, "--bootstrap=200"]
    if name == "score_cvdn":
        agent = data / "cvdn/agent_outputs/val-seq2seq-all-trusted_path-40-sample-imagenet_val_seen_iter_100.json"
        cvdn = [f"--dataset={data}/cvdn/val_seen.json", "--target_path=trusted"]
        return [*cvdn, f"--predictions=seq2seq={agent}", conn, "--bootstrap=200"]
    split = data / "vlnce/R2R_VLNCE_v1-2_preprocessed/val_unseen/val_unseen.json.gz"
    agent = data / "vlnce/cwp_results/cma/stats_ep_ckpt_0_val_unseen_r0_w1.json"
    return [f"--dataset={split}", f"--predictions=cma={agent}", "--bootstrap=200"]


def report_tables(out: Path, work: Path) -> tuple[dict, list[str]]:
    """The report's tables (run paths neutralized) and the names of its figures."""
    text = (out / "report_tables.json").read_text().replace(str(work), "<w>")
    figures = sorted(p.name for p in (out / "figures").iterdir())
    return json.loads(re.sub(r"/versions/[0-9T.Z]+-[0-9a-f]+", "/versions/<run>", text)), figures


def test_every_other_job_on_the_cluster_gives_the_rows_of_an_in_process_run(
    flink, shared_data, tmp_path, tmp_path_factory
):
    """perturb, build_compat, paraphrase (the offline translator), random_baseline, build_probes,
    score_probes, build_crafty and score_instructions; the score job on REVERIE, CVDN and R2R-CE; and the
    report of a score run: launched together, one task slot each (`--parallelism=1`), so four run at once
    and the rest wait for a slot. The first eight equal the session's in-process runs of the same flags
    (`in_process_result`, shared with tests/pipelines/test_runners.py); the others' in-process runs are
    made here, while the cluster runs its copies."""

    def runs(side: str) -> dict[str, tuple[str, list[str], list[str]]]:
        """name -> (job, flags, output prefixes) for one side's folder."""
        found = {job: (job, *job_flags(job, shared_data, tmp_path / job / side)) for job in OTHER_JOBS}
        found |= {t: ("score", task_flags(t, shared_data, tmp_path / t / side), ["episodes"]) for t in OTHER_TASKS}
        conn = f"--connectivity_dir={shared_data}/connectivity"
        found["report"] = ("report", [f"--inputs={tmp_path}/scored/out", conn, "--draw=2"], [])
        return found

    score_flags, _ = job_flags("score", shared_data, tmp_path / "scored")
    in_process("score", [*score_flags, f"--output_dir={tmp_path}/scored/out"])  # the report's input
    endings = {
        name: in_background(
            launch(flink, job, [*flags, f"--output_dir={tmp_path}/{name}/flink/out", "--parallelism=1"]), 1200
        )
        for name, (job, flags, _) in runs("flink").items()
    }
    shared = {}
    for name, (job, flags, _) in runs("local").items():  # while the cluster runs its copies
        if name in OTHER_JOBS:
            shared[name] = in_process_result(job, shared_data, tmp_path_factory)
            shared[name].pop("summary.json")
        else:
            in_process(job, [*flags, f"--output_dir={tmp_path}/{name}/local/out"])
    ended = {name: ending.result() for name, ending in endings.items()}
    failed = {name: err[-1500:] for name, (code, err) in ended.items() if code != 0}
    assert not failed, failed
    for name, (job, _, prefixes) in runs("local").items():
        got, want = tmp_path / name / "flink" / "out", tmp_path / name / "local" / "out"
        if job == "report":
            assert report_tables(got, got.parent) == report_tables(want, want.parent), name
        elif name in shared:
            assert neutral_rows(got.parent, prefixes) == shared[name] and any(shared[name].values()), name
        else:
            assert rows(got, prefixes) == rows(want, prefixes) and any(rows(want, prefixes).values()), name
        assert integrity.verify(str(got)) == [], name


def test_no_job_service_at_the_address_stops_in_one_line_within_seconds(shared_data, tmp_path):
    flags, _ = job_flags("build_r4r", shared_data, tmp_path)
    began = time.monotonic()
    proc = launch({"job_port": free_port()}, "build_r4r", [*flags, f"--output_dir={tmp_path}/out"])
    code, err = finish(proc, timeout=60)
    assert code == 2 and len(one_error_line(err)) == 1 and "no job service answers" in err, err
    assert time.monotonic() - began < 30
    assert not (tmp_path / "out").exists()  # nothing staged, nothing locked


def _held(flink, shared_data, tmp_path, *more):
    """A build_r4r run on the cluster over a published in-process version, its workers held at the last step."""
    flags, _ = job_flags("build_r4r", shared_data, tmp_path)
    out = tmp_path / "out"
    in_process("build_r4r", [*flags, f"--output_dir={out}"])
    gate = tmp_path / "gate"
    proc = launch(
        flink,
        "build_r4r",
        [*flags, f"--output_dir={out}", "--lock_lease_seconds=5"],
        "--environment_type=PROCESS",
        environment(VLNKIT_FAULT_POINT=f"written?{gate}"),
        *more,
    )
    return out, gate, proc


def test_no_wait_returns_once_accepted_and_the_job_publishes_through_its_last_step(flink, shared_data, tmp_path):
    known = jobs(flink)
    out, gate, proc = _held(flink, shared_data, tmp_path, "--no_wait")
    try:
        _no_wait(flink, shared_data, tmp_path, known, out, gate, proc)
    finally:
        gate.touch()  # never leave a held job on the cluster


def _no_wait(flink, shared_data, tmp_path, known, out, gate, proc):
    before, published = snapshot(out), current_version(str(out))
    code, err = finish(proc, timeout=300)
    assert code == 0, err[-3000:]
    assert (out / "lock.json").exists() and current_version(str(out)) == published  # handed over, held
    # The launcher returns once Beam's job server accepted the job; the server then translates it and
    # submits it to Flink.
    wait_until(lambda: new_job(flink, known), seconds=240, what="the job in Flink")
    jid = new_job(flink, known)
    assert jobs(flink)[jid] not in TERMINAL, "the launcher is gone, its job runs on the cluster"
    assert (out / "lock.json").exists() and current_version(str(out)) == published
    flags, _ = job_flags("build_r4r", shared_data, tmp_path / "second")
    with pytest.raises(SystemExit) as refused:  # a second run of the same output, meanwhile
        in_process("build_r4r", [*flags, f"--output_dir={out}"])
    assert refused.value.code == 2 and snapshot(out) == before
    gate.touch()
    wait_until(lambda: current_version(str(out)) != published and not (out / "lock.json").exists(), what="publish")
    wait_until(lambda: jobs(flink)[jid] in TERMINAL, seconds=120, what="the job to end after publishing")
    assert jobs(flink)[jid] == "FINISHED"
    assert integrity.verify(str(out)) == []
    assert rows(out / "current", ["paths"]) == rows(out / "versions" / published, ["paths"])


def test_a_job_cancelled_through_flinks_rest_api_exits_3_in_one_line(flink, shared_data, tmp_path):
    known = jobs(flink)
    out, gate, proc = _held(flink, shared_data, tmp_path)
    try:
        before = snapshot(out)
        wait_until(lambda: new_job(flink, known, "RUNNING"), what="the job to run")
        rest(flink, f"/jobs/{new_job(flink, known)}?mode=cancel", method="PATCH")
        code, err = finish(proc, timeout=300)
    finally:
        gate.touch()
    assert code == 3 and len(one_error_line(err)) == 1 and "CANCELLED" in one_error_line(err)[0], err[-3000:]
    assert snapshot(out) == before


def test_an_sdk_worker_that_cannot_import_the_project_fails_the_job_in_one_line(flink, shared_data, tmp_path):
    flags, _ = job_flags("build_r4r", shared_data, tmp_path)
    # A worker whose Python has Beam but not this project: its imports of the project's packages are refused
    # (a sitecustomize on its PYTHONPATH), and its boot is the boot's file run by path.
    refuse = tmp_path / "without_project"
    refuse.mkdir()
    (refuse / "sitecustomize.py").write_text(
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('vlnkit', 'pipelines', 'transforms', 'configs'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Refuse())\n"
    )
    worker = tmp_path / "worker"
    worker.write_text(
        f'#!/bin/sh\nPYTHONPATH={refuse} exec {sys.executable} {ROOT}/vlnkit/cluster/sdk_worker.py "$@"\n'
    )
    worker.chmod(0o755)
    began = time.monotonic()
    code, err = finish(
        launch(flink, "build_r4r", [*flags, f"--output_dir={tmp_path}/out"], environment(str(worker))), timeout=600
    )
    took = time.monotonic() - began
    errors = one_error_line(err)
    assert code == 3 and len(errors) == 1 and "FAILED" in errors[0], err[-3000:]
    # The worker's boot finds that it cannot import the project and ends before it connects (exit 97), which
    # the TaskManager sees within seconds; a worker that failed on its first bundle instead was seen only
    # after the 2.62 runner's 3-minute timeout (vlnkit/cluster/sdk_worker.py says why).
    assert "cannot import this project" in errors[0] and "exited 97" in errors[0], errors[0]
    assert took < 150, f"{took:.0f} s: the job should fail as soon as the worker ends, not after a timeout"
    logs = "".join(p.read_text(errors="replace") for p in (Path(flink["state_dir"]) / "log").glob("taskmanager-*.log"))
    assert "cannot import vlnkit: ModuleNotFoundError" in logs  # the TaskManager's log says which import failed
    assert not (tmp_path / "out" / "current").exists()


def test_a_taskmanager_killed_mid_job_fails_it_with_exit_3_and_the_version_unchanged(flink, shared_data, tmp_path):
    """The documented choice (docs/cloud.md): no restart (configs/flink-cluster.yaml), so a lost TaskManager
    fails the job; the launcher says so in one line and the published version stays as it was."""
    known = jobs(flink)
    out, gate, proc = _held(flink, shared_data, tmp_path)
    before = snapshot(out)

    def staged():
        return [
            v
            for v in (out / "versions").iterdir()
            if (v / "summary.json").exists() and v.name != current_version(str(out))
        ]

    wait_until(staged, what="the job to reach its last step")
    wait_until(lambda: new_job(flink, known), what="the job on the cluster")
    job = new_job(flink, known)
    # The TaskManager that runs the held last step. When the victim was any TaskManager still running a task
    # of the job, a run in the full suite (two test workers on two cores) once ended with exit 0: likely a
    # TaskManager whose last task was ending, so the job went on, its hold ran out (a minute,
    # `vlnkit.io.layout.fault_point`) and it published. The state check below tells that case apart.
    victim = int(holding_taskmanager(flink, job).rsplit("-", 1)[1])
    os.kill(cluster.read_pids(flink)[f"taskmanager-{victim}"], signal.SIGKILL)
    try:
        # The job's master sees the TaskManager gone (at the latest its 15 s heartbeat timeout, configs/
        # flink-cluster.yaml) and fails the job; only then do the held workers go on. The cluster's own count
        # of TaskManagers drops sooner, while the job still runs, and a gate opened then let the job finish
        # and publish (exit 0, seen once; likely through the killed TaskManager's SDK workers, which outlive it).
        wait_until(lambda: jobs(flink)[job] != "RUNNING", seconds=120, what="Flink to fail the job")
        assert jobs(flink)[job] in ("FAILING", "FAILED"), f"the job went on to {jobs(flink)[job]}"
        gate.touch()
        code, err = finish(proc, timeout=300)
        errors = one_error_line(err)
        assert code == 3 and len(errors) == 1, err[-3000:]
        assert snapshot(out) == before
    finally:
        gate.touch()
        cluster.start_taskmanager(flink, victim)
        wait_until(lambda: rest(flink, "/overview")["taskmanagers"] == 2, seconds=120, what="the TaskManager back")
