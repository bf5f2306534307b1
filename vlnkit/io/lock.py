"""One run at a time per output folder: a lock object with an owner and a heartbeat.

`D/lock.json` names its owner (host, process id, start time, run id) and a heartbeat the owner
renews while it runs. It is created only if absent (`O_CREAT | O_EXCL` on local disk; on gs:// an
object written with `ifGenerationMatch=0`), so of two runs starting together exactly one gets it; the
other is refused with a line naming the owner. A lock whose heartbeat is older than the lease
(10 minutes by default; whether or not its process still exists), or whose owner is a process of
this host that no longer exists, was left by a dead (or stalled) run and is taken over with a
warning; the takeover itself is a conditional replace (a rename of the stale file, or a write at the
stale object's generation), so two runs cannot both take it.

    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> first = OutputLock(root, "run-1"); first.acquire()
    >>> try:
    ...     OutputLock(root, "run-2").acquire()
    ... except Locked as exc:
    ...     print(str(exc).split(":")[0])
    another run holds this output
    >>> first.release()
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import secrets
import socket
import threading
import time

from vlnkit.io import gcs

LOCK = "lock.json"
DEFAULT_LEASE_SECONDS = 600.0
log = logging.getLogger("vlnkit")


class Locked(RuntimeError):
    """Another live run holds the output: its owner is named in the message."""


def _process_start(pid: int) -> str | None:
    """The kernel's start time of a process (Linux), to tell a live owner from a reused process id."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return None if fields[0] == "Z" else fields[19]  # a zombie is dead
    except (OSError, IndexError):
        return None


def _alive_here(owner: dict) -> bool | None:
    """Whether the owner is a live process of this host; None when it runs elsewhere (lease decides)."""
    if owner.get("host") != socket.gethostname():
        return None
    pid = int(owner.get("pid", 0) or 0)
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    start = _process_start(pid)
    if os.path.exists(f"/proc/{pid}") and start is None:
        return False  # a zombie
    return owner.get("process_start") in (None, start)


def describe(owner: dict) -> str:
    return f"host {owner.get('host')}, process {owner.get('pid')}, started {owner.get('started')}"


class OutputLock:
    """The lock of one output folder (local or gs://) for one run; `acquire`, then `release`."""

    def __init__(self, root: str, run_id: str, lease_seconds: float = DEFAULT_LEASE_SECONDS):
        self.root = root.rstrip("/")
        self.path = f"{self.root}/{LOCK}"
        self.remote = root.startswith("gs://")
        self.lease = float(lease_seconds)
        self.owner = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "process_start": _process_start(os.getpid()),
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "run": run_id,
            "token": secrets.token_hex(8),
            "lease_seconds": self.lease,
        }
        self.generation = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False

    # ---------------------------------------------------------------- storage
    def _data(self) -> bytes:
        return json.dumps({**self.owner, "heartbeat": time.time()}, sort_keys=True).encode()

    def _read(self) -> tuple[dict, int] | None:
        if self.remote:
            got = gcs.read(self.path)
            if got is None:
                return None
            data, generation = got
        else:
            try:
                with open(self.path, "rb") as f:
                    data = f.read()
                generation = 0
            except FileNotFoundError:
                return None
        try:
            owner = json.loads(data)
        except ValueError:  # being written this instant, or torn: judged by the file's age
            owner = {"heartbeat": self._mtime()}
        return owner, generation

    def _mtime(self) -> float:
        try:
            return os.path.getmtime(self.path)
        except OSError:
            return 0.0

    def _create(self) -> bool:
        if self.remote:
            try:
                self.generation = gcs.write(self.path, self._data(), if_generation_match=0)
            except gcs.PreconditionFailed:
                return False
            return self._still_mine()  # a server that ignores preconditions still cannot give it to two
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(self._data())
        return True

    def _take_over(self, generation: int) -> bool:
        if self.remote:
            try:
                self.generation = gcs.write(self.path, self._data(), if_generation_match=generation)
            except gcs.PreconditionFailed:
                return False
            return self._still_mine()
        aside = f"{self.path}.stale-{self.owner['token']}"
        try:
            os.rename(self.path, aside)  # only one of two runs taking over can move the same file
        except FileNotFoundError:
            return False
        os.remove(aside)
        return self._create()

    def _still_mine(self) -> bool:
        got = self._read()
        return got is not None and got[0].get("token") == self.owner["token"]

    # ---------------------------------------------------------------- the protocol
    def silence(self, owner: dict) -> float:
        """Seconds since the owner's last heartbeat."""
        return time.time() - float(owner.get("heartbeat", 0) or 0)

    def stale(self, owner: dict) -> bool:
        """A dead run's lock: its owner is a process of this host that no longer exists, or its heartbeat
        is older than the lease (whether or not its process still exists: a run stalled that long is
        taken over, and refuses to publish if it ever resumes)."""
        return _alive_here(owner) is False or self.silence(owner) > self.lease

    def acquire(self) -> str | None:
        """Take the lock, or raise Locked naming the live owner. Returns a warning when a stale lock
        was taken over (and logs it)."""
        for _ in range(5):
            if self._read() is None and self._create():
                self._start_heartbeat()
                return None
            got = self._read()
            if got is None:
                continue
            owner, generation = got
            if not self.stale(owner):
                raise Locked(
                    f"another run holds this output: {describe(owner)} (lock {self.path}; it is taken over "
                    f"when its heartbeat is older than {self.lease:g} s)"
                )
            if self._take_over(generation):
                why = (
                    "a run that is gone"
                    if _alive_here(owner) is False
                    else f"a run whose heartbeat stopped {self.silence(owner):.0f} s ago"
                )
                warning = f"took over the stale lock of {why} ({describe(owner)})"
                log.warning("%s: %s", self.root, warning)
                self._start_heartbeat()
                return warning
        raise Locked(f"could not take the lock {self.path}: other runs keep changing it")

    def heartbeat(self) -> None:
        """Renew the heartbeat, only while the lock is still this run's."""
        if self.remote:
            try:
                self.generation = gcs.write(self.path, self._data(), if_generation_match=self.generation)
            except gcs.PreconditionFailed:
                self.lost = True
            return
        if not self._still_mine():
            self.lost = True
            return
        tmp = f"{self.path}.{self.owner['token']}.tmp"
        with open(tmp, "wb") as f:
            f.write(self._data())
        os.replace(tmp, self.path)

    def check(self) -> None:
        """Raise Locked if another run took the lock over (this run's heartbeat lapsed): never two publishers."""
        if self.lost or not self._still_mine():
            self.lost = True
            raise Locked(f"{self.path}: this run's lock was taken over by another run; nothing was published")

    def _start_heartbeat(self) -> None:
        interval = max(0.05, min(60.0, self.lease / 4))

        def beat() -> None:
            while not self._stop.wait(interval):
                try:
                    self.heartbeat()
                except Exception as exc:  # noqa: BLE001 -- a missed beat is retried; the lease allows several
                    log.warning("%s: heartbeat failed (%s)", self.path, exc)

        self._thread = threading.Thread(target=beat, name="vlnkit-lock-heartbeat", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Stop the heartbeat and remove the lock if it is still this run's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.lost:
            return
        try:
            if self.remote:
                gcs.delete(self.path, if_generation_match=self.generation)
            elif self._still_mine():
                os.remove(self.path)
        except (OSError, gcs.PreconditionFailed):
            pass
