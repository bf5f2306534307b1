"""The lock belongs to a run, not to one process: any process of the run renews it while it is the run's,
none brings it back once released, and a run whose job runs elsewhere is judged by its heartbeat alone."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import time

from vlnkit.io.lock import LOCK, OutputLock, keep_alive


def _owner(root) -> dict:
    return json.loads((root / LOCK).read_text())


def test_a_copy_of_the_lock_renews_it_and_never_brings_it_back_once_released(tmp_path):
    lock = OutputLock(str(tmp_path), "run-1", lease_seconds=60)
    lock.acquire()
    worker = pickle.loads(pickle.dumps(lock))  # what a job's worker gets
    assert worker._thread is None and worker.owner["token"] == lock.owner["token"]
    first = _owner(tmp_path)["heartbeat"]
    time.sleep(0.01)
    worker.heartbeat()
    assert _owner(tmp_path)["heartbeat"] > first and not worker.lost
    worker.release()  # the job's last step
    assert not (tmp_path / LOCK).exists()
    lock.heartbeat()  # the launcher's next beat finds it gone: it is not written again
    assert not (tmp_path / LOCK).exists() and lock.lost
    lock.release()
    assert not (tmp_path / LOCK).exists()


def test_a_renewal_never_touches_another_runs_lock(tmp_path):
    mine = OutputLock(str(tmp_path), "run-1", lease_seconds=0.2)
    mine.acquire()
    mine.stop_heartbeat()
    time.sleep(0.3)
    theirs = OutputLock(str(tmp_path), "run-2", lease_seconds=0.2)
    assert theirs.acquire() is not None  # took over the stale lock
    copy = pickle.loads(pickle.dumps(mine))
    copy.heartbeat()
    assert copy.lost and _owner(tmp_path)["token"] == theirs.owner["token"]
    theirs.release()


def test_a_job_running_elsewhere_is_judged_by_its_heartbeat_not_by_its_launchers_process(tmp_path):
    gone = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)
    for in_process, stale in ((True, True), (False, False)):
        lock = OutputLock(str(tmp_path), "run-1", lease_seconds=60, in_process=in_process)
        owner = {**lock.owner, "pid": gone, "process_start": None, "heartbeat": time.time()}
        assert lock.stale(owner) is stale  # a dead launcher: its in-process job is dead, another job is not
    lock = OutputLock(str(tmp_path), "run-1", lease_seconds=60, in_process=False)
    assert lock.stale({**lock.owner, "pid": gone, "heartbeat": time.time() - 61})  # the lease still decides


def test_keep_alive_renews_from_this_process_until_the_run_releases_the_lock(tmp_path):
    lock = OutputLock(str(tmp_path), "run-1", lease_seconds=0.4, in_process=False)
    lock.acquire()
    lock.stop_heartbeat()  # the launcher is gone
    keep_alive(pickle.loads(pickle.dumps(lock)))
    keep_alive(pickle.loads(pickle.dumps(lock)))  # one thread per process and run
    time.sleep(1.0)
    assert time.time() - _owner(tmp_path)["heartbeat"] < 0.4  # older than the lease without the workers
    pickle.loads(pickle.dumps(lock)).release()
    time.sleep(0.3)
    assert not (tmp_path / LOCK).exists()
