"""Per-worker state, and a worker process's exit."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from tests.conftest import ROOT
from transforms.worker_cache import per_worker

# How many exit handlers a process has after importing the transforms package, printed by a script
# that runs under a file name of our choosing (a Beam SDK worker runs as ".../sdk_worker_main.py").
COUNT = "import atexit, gc, transforms; print(atexit._ncallbacks())"


def test_per_worker_builds_once_per_key():
    calls = []
    first = per_worker("test", "k", lambda: calls.append(1) or ["built"])
    again = per_worker("test", "k", lambda: calls.append(2) or ["other"])
    assert first is again and calls == [1]


def test_a_slow_build_holds_up_only_its_own_askers():
    """While one value builds on a thread, another value is built and returned at once; a second asker of the
    building value waits for that one build and gets its result."""
    started, release, calls = threading.Event(), threading.Event(), []

    def slow():
        started.set()
        release.wait(10)
        calls.append("slow")
        return ["slow"]

    builder = threading.Thread(target=per_worker, args=("test", "slow", slow))
    builder.start()
    assert started.wait(10)
    assert per_worker("test", "quick", lambda: ["quick"]) == ["quick"]  # would wait for release under one lock
    got = []
    asker = threading.Thread(target=lambda: got.append(per_worker("test", "slow", lambda: calls.append("again"))))
    asker.start()
    asker.join(0.2)
    assert asker.is_alive() and not got  # waiting for the build in progress
    release.set()
    builder.join(10), asker.join(10)
    assert got == [["slow"]] and calls == ["slow"]


@pytest.mark.parametrize("name, extra", [("sdk_worker_main.py", 1), ("train.py", 0)])
def test_only_a_beam_worker_freezes_its_heap_at_exit(tmp_path, name, extra):
    """Importing the transforms adds the exit hook in a Beam SDK worker process and nowhere else."""
    base = tmp_path / "base.py"
    base.write_text("import atexit, gc; print(atexit._ncallbacks())")
    script = tmp_path / name
    script.write_text(COUNT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the scripts run outside the repository
    env_run = dict(cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    before = int(subprocess.run([sys.executable, str(base)], **env_run).stdout)
    # What the transforms' own imports register (Beam, grpc, ...) is the same under either name.
    plain = tmp_path / "plain.py"
    plain.write_text(COUNT)
    without = int(subprocess.run([sys.executable, str(plain)], **env_run).stdout)
    got = int(subprocess.run([sys.executable, str(script)], **env_run).stdout)
    assert without >= before
    assert got == without + extra
