"""Job processes forked from one interpreter that has already imported what a job imports.

Why: the fault tests kill runs with SIGKILL, so every run is a process of its own, and most of each one's
CPU (about 2.5 s of 3 here) went to starting Python and importing Beam, pyarrow and the project before
the job's first line ran: work identical in every run. A `ForkServer` pays it once; each run is then a
fork of it that becomes the job's process: its own session (so a fault point's `killpg` and the test's
kill reach it and its workers alone), the environment, folder, arguments and standard streams the test
gave it, and `__main__` run as `python -m MODULE` (or `python -c CODE`) runs it. The job module itself
is not kept imported (only what it imports), so it runs as `__main__` exactly once, as under `-m`.

A run is a `ForkedRun`, used like `subprocess.Popen`: `pid`, `stdout`/`stderr` pipes, `wait(timeout)`,
`poll()`, `returncode` (negative for a signal).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

# The server: runs its prelude, then forks a run per request. Single-threaded (children are forked
# from it); exit statuses are reaped on SIGCHLD and sent back as {"pid", "status"} lines.
SERVER = r"""
import json, os, runpy, selectors, signal, socket, sys

sock = socket.socket(fileno=int(sys.argv[1]))
exec(compile(sys.argv[2], "<prelude>", "exec"), {"__name__": "__prelude__"})
for name in json.loads(sys.argv[3]):  # the job modules: their imports kept, themselves run fresh as __main__
    sys.modules.pop(name, None)
    package, _, leaf = name.rpartition(".")
    if package in sys.modules and hasattr(sys.modules[package], leaf):
        delattr(sys.modules[package], leaf)
wake_r, wake_w = os.pipe()
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)
sel = selectors.DefaultSelector()
sel.register(sock, selectors.EVENT_READ)
sel.register(wake_r, selectors.EVENT_READ)
sock.sendall(b'{"ready": true}\n')
buffer, pending = b"", []


def child(request, fds):
    os.setsid()
    sel.close()
    sock.close()
    os.close(wake_r)
    os.close(wake_w)
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
    for fd in fds:
        os.close(fd)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False, buffering=1 if request.get("line_buffered") else -1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)
    # Then as `python -m`/`-c`: an exception or sys.exit ends the process through the interpreter's own
    # shutdown (traceback, exit code, atexit handlers, non-daemon threads joined), never the server's loop.
    if "module" in request:
        sys.argv = [request["module"], *request["argv"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    else:
        sys.argv = ["-c", *request["argv"]]
        exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
    sys.exit(0)

while True:
    for key, _ in sel.select():
        if key.fileobj is sock:
            data, received, _, _ = socket.recv_fds(sock, 1 << 20, 3)
            if not data:
                sys.exit(0)
            buffer += data
            pending += received  # a request's three streams come with its first bytes; its line may take more reads
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                fds, pending = pending[:3], pending[3:]
                pid = os.fork()
                if pid == 0:
                    child(json.loads(line), fds)
                for fd in fds:
                    os.close(fd)
                sock.sendall(json.dumps({"started": pid}).encode() + b"\n")
        else:
            os.read(wake_r, 4096)
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                sock.sendall(json.dumps({"pid": pid, "status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
"""


class ForkServer:
    """One server process; `run_module`/`run_code` start runs forked from it. Stop it with `close()`."""

    def __init__(self, prelude: str, jobs: list[str], cwd: Path, env: dict[str, str]):
        """`prelude`: Python code the server runs once (the imports every run would make, made as the runs
        make them); `jobs`: modules it imports, which are then forgotten so each run executes them afresh."""
        self._sock, theirs = socket.socketpair()
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SERVER,
                str(theirs.fileno()),
                prelude + "".join(f"\nimport {job}" for job in jobs),
                json.dumps(jobs),
            ],
            pass_fds=[theirs.fileno()],
            cwd=cwd,
            env=env,
        )
        theirs.close()
        self._file = self._sock.makefile("rb")
        self._lock = threading.Lock()  # one request at a time: each reply names its fork
        self._started: list[int] = []
        self._statuses: dict[int, int] = {}
        self._changed = threading.Condition()
        first = json.loads(self._file.readline() or b"{}")
        if not first.get("ready"):
            raise RuntimeError(f"the fork server did not start (exit {self._proc.wait()})")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._file:
            message = json.loads(line)
            with self._changed:
                if "started" in message:
                    self._started.append(message["started"])
                else:
                    self._statuses[message["pid"]] = message["status"]
                self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    _closed = False

    def _start(self, request: dict, cwd: Path, env: dict[str, str], text: bool) -> ForkedRun:
        pipes = [os.pipe() for _ in range(3)]  # stdin (closed at once: a job reads none), stdout, stderr
        ours, theirs = [pipes[0][1], pipes[1][0], pipes[2][0]], [pipes[0][0], pipes[1][1], pipes[2][1]]
        request = {**request, "cwd": str(cwd), "env": env}
        with self._lock:
            socket.send_fds(self._sock, [json.dumps(request).encode() + b"\n"], theirs)
            for fd in theirs:
                os.close(fd)
            with self._changed:
                while not self._started and not self._closed:
                    self._changed.wait()
                if not self._started:
                    raise RuntimeError("the fork server has ended")
                pid = self._started.pop(0)
        os.close(ours[0])
        mode = {"mode": "r", "encoding": "utf-8", "errors": "replace"} if text else {"mode": "rb"}
        return ForkedRun(self, pid, open(ours[1], **mode), open(ours[2], **mode))

    def run_module(self, module: str, argv: list[str], cwd: Path, env: dict[str, str], text: bool = True):
        """As `python -m module *argv` in `cwd` with exactly `env`."""
        return self._start({"module": module, "argv": list(argv)}, cwd, env, text)

    def run_code(self, code: str, argv: list[str], cwd: Path, env: dict[str, str], text: bool = True):
        """As `python -c code *argv` in `cwd` with exactly `env`."""
        return self._start({"code": code, "argv": list(argv)}, cwd, env, text)

    def status(self, pid: int, timeout: float | None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while pid not in self._statuses and not self._closed:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._changed.wait(left)
            return self._statuses.get(pid)

    def close(self) -> None:
        self._sock.shutdown(socket.SHUT_WR)  # the server's end of input: it exits (its reader holds the socket)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=10)
        self._file.close()
        self._sock.close()


class ForkedRun:
    """A run forked by a `ForkServer`, used like `subprocess.Popen`."""

    def __init__(self, server: ForkServer, pid: int, stdout, stderr):
        self._server, self.pid, self.stdout, self.stderr = server, pid, stdout, stderr
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.status(self.pid, 0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._server.status(self.pid, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(f"forked run {self.pid}", timeout)
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Both streams to their end, then the exit status (as Popen's). Past `timeout`, the run and its
        session are killed and TimeoutExpired raised, as `subprocess.run(timeout=...)` does."""
        found: dict[str, object] = {}
        readers = [
            threading.Thread(target=lambda n=name, f=stream: found.__setitem__(n, f.read()), daemon=True)
            for name, stream in (("out", self.stdout), ("err", self.stderr))
        ]
        for reader in readers:
            reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        if any(reader.is_alive() for reader in readers):
            try:
                os.killpg(self.pid, signal.SIGKILL)  # its own session (setsid): the run and its workers
            except ProcessLookupError:
                pass
            raise subprocess.TimeoutExpired(f"forked run {self.pid}", timeout)
        self.wait(None if deadline is None else max(1.0, deadline - time.monotonic()))
        self.stdout.close()
        self.stderr.close()
        return found["out"], found["err"]
