"""One run at a time per output folder: a lock object with an owner and a heartbeat.

`D/lock.json` names its owner (host, process id, start time, run id) and a heartbeat the owner
renews while it runs. It is created only if absent (`O_CREAT | O_EXCL` on local disk; on gs:// an
object written with `ifGenerationMatch=0`), so of two runs starting together exactly one gets it; the
other is refused with a line naming the owner. A lock whose heartbeat is older than the lease
(10 minutes by default; whether or not its process still exists), or whose owner is a process of
this host that no longer exists, was left by a dead (or stalled) run and is taken over with a
warning; the takeover itself is a conditional replace (a rename of the stale file, or a write at the
stale object's generation), so two runs cannot both take it.

The lock belongs to the run, not to one process. A run whose pipeline executes in the launching
process says so (`in_process`): that process's death ends the run, so its lock is taken over at once.
Any other run (a portable runner, Flink, Dataflow: a launcher may exit while its job runs) is judged
by its heartbeat alone, which the job's own workers renew (`keep_alive`, a thread per worker process)
until the pipeline's last step publishes and releases the lock. A renewal changes the lock only while
it is still this run's, and never creates it again once released.

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
    """Whether the owner is a live process of this host; None when it runs elsewhere, or when its job
    does not run in the launching process (the lease decides)."""
    if owner.get("host") != socket.gethostname() or owner.get("in_process") is False:
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
    where = "" if owner.get("in_process", True) else " (its job runs on the runner's workers)"
    return f"host {owner.get('host')}, process {owner.get('pid')}, started {owner.get('started')}{where}"


class OutputLock:
    """The lock of one output folder (local or gs://) for one run; `acquire`, then `release`."""

    def __init__(self, root: str, run_id: str, lease_seconds: float = DEFAULT_LEASE_SECONDS, in_process: bool = True):
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
            "in_process": in_process,
        }
        self.generation = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False

    def __getstate__(self) -> dict:
        """What a job's workers get: the lock's identity (its token), not the launcher's heartbeat thread."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_stop", "_thread")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._stop = threading.Event()
        self._thread = None

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
        """Renew the heartbeat, only while the lock is still this run's (from any process of the run: the
        launcher's, a worker's). A released or taken-over lock is never written again: on gs:// the write
        is conditional on the generation just read; on local disk the file is rewritten in place through
        a descriptor opened on the existing file, so a lock removed meanwhile stays removed."""
        if self.remote:
            got = gcs.read(self.path)
            if got is None or _token(got[0]) != self.owner["token"]:
                self.lost = True
                return
            try:
                self.generation = gcs.write(self.path, self._data(), if_generation_match=got[1])
            except gcs.PreconditionFailed:  # another process of this run renewed it, or a taker replaced it
                self.lost = not self._still_mine()
            return
        try:
            fd = os.open(self.path, os.O_RDWR)
        except FileNotFoundError:
            self.lost = True
            return
        try:
            if _token(os.pread(fd, 1 << 16, 0)) != self.owner["token"]:
                self.lost = True
                return
            data = self._data()
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)

    def check(self) -> None:
        """Raise Locked if another run took the lock over (this run's heartbeat lapsed): never two publishers."""
        if self.lost or not self._still_mine():
            self.lost = True
            raise Locked(f"{self.path}: this run's lock was taken over by another run; nothing was published")

    def interval(self) -> float:
        """Seconds between heartbeats: a quarter of the lease (at most a minute)."""
        return max(0.05, min(60.0, self.lease / 4))

    def _start_heartbeat(self) -> None:
        self._thread = threading.Thread(
            target=_beat, args=(self, self._stop), name="vlnkit-lock-heartbeat", daemon=True
        )
        self._thread.start()

    def stop_heartbeat(self) -> None:
        """Stop this process's renewals; the lock stays (another process of the run renews it)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def release(self) -> None:
        """Stop the heartbeat and remove the lock if it is still this run's."""
        self.stop_heartbeat()
        if self.lost:
            return
        try:
            if self.remote:
                got = gcs.read(self.path)
                if got is not None and _token(got[0]) == self.owner["token"]:
                    gcs.delete(self.path, if_generation_match=got[1])
            elif self._still_mine():
                os.remove(self.path)
        except (OSError, gcs.PreconditionFailed):
            pass
        self.lost = True  # released: nothing of this run renews it any more


def _token(data: bytes) -> str | None:
    try:
        return json.loads(data).get("token")
    except (ValueError, AttributeError):
        return None


def _beat(lock: OutputLock, stop: threading.Event) -> None:
    """Renew `lock` every `interval` seconds until `stop` is set or the lock is no longer this run's."""
    while not stop.wait(lock.interval()):
        try:
            lock.heartbeat()
        except Exception as exc:  # noqa: BLE001 -- a missed beat is retried; the lease allows several
            log.warning("%s: heartbeat failed (%s)", lock.path, exc)
        if lock.lost:
            return


_KEPT: dict[str, threading.Thread] = {}
_KEPT_GUARD = threading.Lock()


def keep_alive(lock: OutputLock) -> None:
    """Renew `lock` from this process (a job's worker) while it is this run's: one daemon thread per
    process and run, started on first call, ending when the run releases the lock (its last step) or
    another run took it over. A job whose launcher exited keeps its lock this way."""
    token = lock.owner["token"]
    with _KEPT_GUARD:
        running = _KEPT.get(token)
        if running is not None and running.is_alive():
            return
        mine = OutputLock.__new__(OutputLock)
        mine.__setstate__(lock.__getstate__())
        mine.lost = False
        thread = threading.Thread(
            target=_beat, args=(mine, threading.Event()), name="vlnkit-lock-keep-alive", daemon=True
        )
        _KEPT[token] = thread
        thread.start()
