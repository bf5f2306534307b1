"""Processes the end-to-end tests start: a job's launcher, a job service, a worker pool; each in a session of
its own, so that stopping it stops whatever it started (SDK workers), and waiting for it to listen."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT


def start_module(module: str, args: list[str], env: dict, log: Path | None = None) -> subprocess.Popen:
    """`python -m module args` from the project root, in a new session; its output to `log` (both streams),
    or piped as text for `communicate` when `log` is None."""
    streams = (
        {"stdout": open(log, "wb"), "stderr": subprocess.STDOUT}  # noqa: SIM115 -- open for the process's life
        if log is not None
        else {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    )
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=env, start_new_session=True, **streams)


def stop_group(proc: subprocess.Popen) -> None:
    """Stop `proc` and every process of its session: politely, then for good after 10 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 60.0, log: Path | None = None) -> None:
    """Return once something listens on 127.0.0.1:`port`; raise if `proc` exits first (naming the last line
    of `log`) or after `seconds`."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log and log.exists() else []
            raise RuntimeError(f"{_name(proc)} exited with code {proc.returncode}: {' '.join(tail)}".rstrip(": "))
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{_name(proc)} did not listen on port {port} within {seconds} s")


def _name(proc: subprocess.Popen) -> str:
    argv = [str(a) for a in proc.args] if isinstance(proc.args, (list, tuple)) else [str(proc.args)]
    return " ".join(os.path.basename(a) for a in argv[:3])
