"""Imports refused for a while, so that a library that guards an optional dependency starts without it.

Several libraries import an optional package at start-up only to learn whether it is there, and skip
what needs it when it is not: Apache Beam its IO adapters (`pipelines.beam_import`), pyarrow pandas,
numba SciPy's linear algebra. A job that never uses that part waits for the import all the same (a
third of a second for pandas, a quarter for `scipy.linalg`, on this project's 2-core machine). Inside
`refused(names, by)` such an import fails as a missing module would, and the library goes on as it does
on a machine without the package; afterwards the package imports normally for whoever needs it.
A package already imported is not affected (Python takes it from `sys.modules`).

Written here rather than taken from a library: it is one small `importlib` finder (a meta path entry,
as the import system documents), and a refusal must be able to stay inside one thread, so that numba's
start on the warm-up thread leaves the main thread's imports alone.

    >>> import sys
    >>> _ = sys.modules.pop("tabnanny", None)
    >>> with refused(("tabnanny",), "vlnkit.refused_imports"):
    ...     try:
    ...         import tabnanny
    ...     except ModuleNotFoundError as exc:
    ...         print(exc)
    tabnanny is not imported here (vlnkit.refused_imports)
    >>> import tabnanny  # afterwards, as usual
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Refuse(importlib.abc.MetaPathFinder):
    """A finder that makes `import <one of names>` (and of its submodules) fail as a missing module, in
    every thread or only in the thread `thread` (an ident); `by` names who refuses, in the message."""

    def __init__(self, names: tuple[str, ...], by: str, thread: int | None = None):
        self.names = names
        self.by = by
        self.thread = thread

    def find_spec(self, name, path=None, target=None):
        if self.thread is not None and threading.get_ident() != self.thread:
            return None
        if any(name == n or name.startswith(n + ".") for n in self.names):
            raise ModuleNotFoundError(f"{name} is not imported here ({self.by})", name=name)
        return None


@contextmanager
def refused(names: tuple[str, ...], by: str, this_thread_only: bool = False) -> Iterator[Refuse]:
    """While inside, importing any of `names` fails as a missing module (in this thread only, when
    asked: other threads import as usual)."""
    finder = Refuse(tuple(names), by, threading.get_ident() if this_thread_only else None)
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        sys.meta_path.remove(finder)
