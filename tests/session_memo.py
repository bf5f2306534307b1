"""Expensive reference results computed once per test session and read by every test process.

Why: pytest-xdist runs the test files in separate processes, and several files check the project
against the same costly reference (a SPICE jar call of the COCO caption code, an in-process run of a
job that other runners must equal). Computing it once per session, under a file lock in the
session's own temporary folder, keeps the suite inside its time budget without weakening any test:
the reference is the same computation on the same inputs, made by whichever test needs it first.
Nothing outlives the session (the folder is pytest's, fresh per run).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path


def session_folder(tmp_path_factory) -> Path:
    """The session's folder shared by its xdist workers (each worker's basetemp is one level below it)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "session-memo"
    folder.mkdir(exist_ok=True)
    return folder


def key_of(*parts) -> str:
    """A file-name-safe digest of JSON-serializable `parts`."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def memo_json(tmp_path_factory, name: str, key: str, compute: Callable[[], object]):
    """`compute()`'s JSON-serializable value, computed by the first process of the session to ask."""
    folder = session_folder(tmp_path_factory)
    path = folder / f"{name}-{key}.json"
    with open(folder / f".{name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return json.loads(path.read_text())
        value = compute()
        path.with_suffix(".part").write_text(json.dumps(value))
        path.with_suffix(".part").rename(path)
        return value


def memo_folder(tmp_path_factory, name: str, key: str, fill: Callable[[Path], None]) -> Path:
    """A folder `fill(folder)` wrote, filled by the first process of the session to ask (a failed fill
    leaves nothing behind, so the next asker fills it again and fails the same way)."""
    root = session_folder(tmp_path_factory)
    folder = root / f"{name}-{key}"
    with open(root / f".{name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / ".complete").exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        try:
            fill(folder)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        (folder / ".complete").touch()
        return folder
