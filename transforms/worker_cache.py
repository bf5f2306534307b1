"""Per-worker state loaded once and shared by every DoFn of a worker process (graphs, vocabularies, caches).

A DoFn's `setup()` runs once per DoFn instance, and a worker runs many instances (one per stage and
thread); the things they read (a scan's distance matrix, a viewpoint vocabulary, a translation cache)
are the same for all of them, so they are built once per process, under a lock, and shared.

    >>> from transforms.worker_cache import per_worker
    >>> per_worker("demo", "key", lambda: [1, 2]) is per_worker("demo", "key", lambda: [3])
    True
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_VALUES: dict[tuple[str, str], object] = {}
_LOCK = threading.Lock()


def per_worker(kind: str, key: str, build: Callable[[], T]) -> T:
    """The one value of `kind` for `key` in this process, built by `build()` the first time it is asked for."""
    with _LOCK:
        value = _VALUES.get((kind, key))
        if value is None:
            value = _VALUES[(kind, key)] = build()
        return value  # type: ignore[return-value]
