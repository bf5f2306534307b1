"""Stage, then publish (docs/failure_semantics.md): a failed, refused, killed or overlapping run never
costs the published output, and a reader sees one complete version at every moment.

Kill points are chosen by `VLNKIT_FAULT_POINT` (vlnkit.io.layout.fault_point), so each kill lands at a
known moment without sleeping; the killed runs are separate processes (SIGKILL cannot be caught).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.forked_runs import ForkServer
from tests.hostile import environment
from vlnkit.io.layout import current_version, published

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = {"current", "versions", "lock.json", "failed"}
# Kill points in the order a run reaches them; the pointer switch happens between "publishing" and "pointed".
BEFORE_SWITCH = ["locked", "staged", "pipeline+0.3", "written", "manifest", "success", "publishing", "link:current"]
AFTER_SWITCH = ["pointed", "linked", "placed", "pruned"]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("publishing")
    inputs = environment(root)
    records = json.loads(Path(inputs["dataset"]).read_text())
    smaller = root / "smaller.json"
    smaller.write_text(json.dumps(records[: len(records) // 2]))
    broken = root / "broken.json"  # next night's input: its only record is bad
    broken.write_text(json.dumps([{"scan": records[0]["scan"], "path_id": 1}]))
    return {**inputs, "smaller": str(smaller), "broken": str(broken)}


def flags(env, out, dataset=None, *more) -> list[str]:
    return [
        "--runner=DirectRunner",
        f"--dataset={dataset or env['dataset']}",
        f"--connectivity_dir={env['connectivity_dir']}",
        f"--output_dir={out}",
        *more,
    ]


def run(*argv) -> dict:
    return importlib.import_module("pipelines.build_r4r").main(list(argv))


# What a build_r4r command imports before its first line runs (pipelines.beam_import, as the command does).
PRELUDE = """
from pipelines.beam_import import import_beam, job_command
with job_command():
    import_beam(["--runner=DirectRunner"])
import apache_beam.io.parquetio, apache_beam.runners.portability.fn_api_runner.fn_runner, pyarrow.parquet
import pipelines.job, transforms.publish, transforms.r4r, transforms.write, vlnkit.runs.publication
"""


def _environ(fault=None) -> dict[str, str]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    environ.pop("VLNKIT_FAULT_POINT", None)
    if fault:
        environ["VLNKIT_FAULT_POINT"] = fault
    return environ


@pytest.fixture(scope="module")
def forks():
    """build_r4r runs forked from one interpreter that imported what they import (tests/forked_runs.py):
    each still a process of its own that a fault point kills, without paying Python's and Beam's start."""
    server = ForkServer(PRELUDE, ["pipelines.build_r4r"], ROOT, _environ())
    yield server
    server.close()


def fork_process(forks: ForkServer, argv, fault=None):
    """`python -m pipelines.build_r4r argv` as a forked run (see `forks`)."""
    return forks.run_module("pipelines.build_r4r", argv, ROOT, _environ(fault))


def run_process(argv, fault=None, **popen) -> subprocess.Popen:
    environ = _environ(fault)
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines.build_r4r", *argv],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, str]:
    """The run's exit code and standard error, once its own process has ended.

    Worker processes of a killed multi-process run outlive it and keep its pipes open, so waiting for
    the pipes to close (`communicate`) would wait for them: the pipes are drained in threads, the run's
    process is waited for, then its whole session is killed (as a scheduler kills a job's process group).
    """
    err: list[str] = []
    drains = [
        threading.Thread(target=proc.stdout.read, daemon=True),
        threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True),
    ]
    for drain in drains:
        drain.start()
    try:
        proc.wait(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for drain in drains:
        drain.join(timeout=30)
    return proc.returncode, "".join(err)


def snapshot(out: Path) -> dict[str, bytes]:
    """What a reader sees: the current version's files, and each top-level name read through its link."""
    files = published(str(out))
    base = os.path.commonpath(files)
    seen = {"version:" + os.path.relpath(p, base): Path(p).read_bytes() for p in files}
    for name in sorted(set(os.listdir(out)) - LAYOUT):
        if (out / name).is_file():
            seen["top:" + name] = (out / name).read_bytes()
    return seen


def assert_clean(out: Path, keep: int = 2) -> None:
    """After a successful run: only complete versions (at most `keep`), no lock, no half-made links."""
    versions = sorted((out / "versions").iterdir())
    assert 1 <= len(versions) <= keep and all((v / "_SUCCESS").exists() for v in versions), versions
    assert not (out / "lock.json").exists() and not (out / "failed").exists()
    assert not [n for n in os.listdir(out) if n.startswith(".")], os.listdir(out)
    assert all(os.path.exists(out / n) for n in os.listdir(out)), "a dangling link"


# ---------------------------------------------------------------------------- a failed rerun
def test_a_failed_rerun_leaves_the_published_version_byte_for_byte(env, tmp_path, capsys):
    out = tmp_path / "D"
    run(*flags(env, out))
    before = snapshot(out)
    assert "top:_SUCCESS" in before and "top:paths-00000-of-00001.parquet" in before
    with pytest.raises(SystemExit) as exc:
        run(*flags(env, out, env["broken"]))
    assert exc.value.code == 3
    err = capsys.readouterr().err
    assert "the published output is unchanged" in err and err.count("\n") == 1, err
    assert snapshot(out) == before
    assert json.loads((out / "failed" / "manifest.json").read_text())["status"] == "failed"
    run(*flags(env, out, env["smaller"]))  # the next run succeeds and removes the failed run's folder
    assert snapshot(out) != before
    assert_clean(out)


# ---------------------------------------------------------------------------- overlapping runs
def test_a_second_live_run_is_refused_naming_the_first(env, tmp_path, capsys, forks):
    out, go = tmp_path / "D", tmp_path / "go"
    first = fork_process(forks, flags(env, out), fault=f"locked?{go}")  # holds the lock until `go` exists
    deadline = time.monotonic() + 60
    while not (out / "lock.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(SystemExit) as exc:
        run(*flags(env, out, env["smaller"]))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"host {socket.gethostname()}, process {first.pid}, started 20" in err, err
    go.touch()
    code, first_err = finish(first)
    assert code == 0, first_err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["version"] == current_version(str(out)) and manifest["summary"]["records_read"] == 6
    assert_clean(out)


def _write_lock(out: Path, **owner) -> None:
    out.mkdir(parents=True, exist_ok=True)
    base = {"host": "another-host", "pid": 4242, "started": "2026-01-01T00:00:00+00:00", "token": "t"}
    (out / "lock.json").write_text(json.dumps({**base, **owner}))


def test_a_stale_lock_is_taken_over_with_a_warning_and_a_live_one_is_not(env, tmp_path, capsys, caplog):
    out = tmp_path / "D"
    _write_lock(out, heartbeat=time.time() - 20 * 60)  # another host, silent for 20 minutes: gone
    run(*flags(env, out))
    assert "took over the stale lock" in caplog.text and "another-host" in caplog.text
    assert_clean(out)
    _write_lock(out, heartbeat=time.time() - 5)  # alive elsewhere
    with pytest.raises(SystemExit) as exc:
        run(*flags(env, out))
    assert exc.value.code == 2 and "host another-host, process 4242" in capsys.readouterr().err
    run(*flags(env, out, None, "--lock_lease_seconds=1"))  # a shorter lease makes the same lock stale
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    _write_lock(out, host=socket.gethostname(), pid=int(dead.stdout), heartbeat=time.time())
    run(*flags(env, out))  # a process of this host that no longer exists: taken over at once
    assert_clean(out)


# ---------------------------------------------------------------------------- SIGKILL at every point
def _check_after_kill(out: Path, before: dict[str, bytes], previous: str, point: str) -> dict[str, bytes]:
    now = current_version(str(out))
    if point in AFTER_SWITCH or (now != previous and point.startswith("pipeline")):
        # Killed after the switch: the new version is published, complete, and no mix.
        assert now != previous and (out / "versions" / now / "_SUCCESS").exists(), point
        manifest = json.loads((out / "versions" / now / "manifest.json").read_text())
        assert manifest["status"] == "complete" and manifest["version"] == now
        assert all(os.path.getsize(o["path"]) == o["bytes"] for o in manifest["outputs"])
        return snapshot(out)
    assert now == previous, point
    assert snapshot(out) == before, point
    return before


@pytest.mark.parametrize("mode", ["in_process", "multi_process"])
def test_sigkill_at_every_point_of_a_rerun_never_costs_the_published_version(env, tmp_path, mode, forks):
    out = tmp_path / "D"
    runner = [] if mode == "in_process" else ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    points = BEFORE_SWITCH + AFTER_SWITCH if mode == "in_process" else ["pipeline+1.5", "written", "success"]
    code, err = finish(fork_process(forks, flags(env, out, None, "--json_output=" + str(tmp_path / "R4R.json"))))
    assert code == 0, err
    datasets = [env["smaller"], env["dataset"]]
    for k, point in enumerate(points):
        previous, before = current_version(str(out)), snapshot(out)
        argv = flags(env, out, datasets[k % 2], "--json_output=" + str(tmp_path / "R4R.json"), *runner)
        code, err = finish(fork_process(forks, argv, fault=point))
        assert code == -signal.SIGKILL or point.startswith("pipeline"), (point, code, err)
        _check_after_kill(out, before, previous, point)
        dead = [v for v in (out / "versions").iterdir() if not (v / "_SUCCESS").exists()]
        assert len(dead) <= 1, (point, dead)  # the earlier dead runs' folders were removed by this one
    code, err = finish(
        fork_process(forks, flags(env, out, env["smaller"], "--json_output=" + str(tmp_path / "R4R.json")))
    )
    assert code == 0, err
    assert_clean(out)
    assert (tmp_path / "R4R.json").read_bytes() == (out / "current" / "R4R.json").read_bytes()
    assert json.loads((out / "summary.json").read_text())["records_read"] == 3


# ---------------------------------------------------------------------------- a reader during reruns
def test_a_reader_during_reruns_always_sees_one_complete_version(env, tmp_path):
    out = tmp_path / "D"
    run(*flags(env, out))
    stop, seen, problems = threading.Event(), [], []

    def reader() -> None:
        while not stop.is_set():
            try:
                files = published(str(out))
                contents = {os.path.basename(p): Path(p).read_bytes() for p in files}
                manifest = json.loads(contents["manifest.json"])
                listed = {os.path.basename(o["path"]): o["bytes"] for o in manifest["outputs"]}
                assert "_SUCCESS" in contents and all(len(contents[n]) == b for n, b in listed.items())
                assert {os.path.dirname(p) for p in files} == {os.path.dirname(files[0])}
                seen.append(manifest["version"])
                time.sleep(0.005)  # leave the runs some of the interpreter
            except Exception as exc:  # noqa: BLE001 -- every failure is a finding
                problems.append(repr(exc))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for dataset in (env["smaller"], env["dataset"], env["smaller"]):
            run(*flags(env, out, dataset))
    finally:
        stop.set()
        thread.join()
    assert not problems, problems[:3]
    assert len(set(seen)) >= 2 and len(seen) > 10  # it read across publishes


# ---------------------------------------------------------------------------- out of space
def test_running_out_of_space_fails_with_one_line_and_keeps_the_published_version(env, tmp_path):
    import resource

    out = tmp_path / "D"
    run(*flags(env, out))
    before = snapshot(out)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # no file over 4 KB: the manifest is larger

    code, err = finish(run_process(flags(env, out, env["smaller"]), preexec_fn=small_files))
    assert code == 3, err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "ran out of space" in errors[0] and "published output is unchanged" in errors[0]
    assert snapshot(out) == before
