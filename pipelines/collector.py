"""The garbage collector in a job's process: paused while the job starts, never walking Beam's imports.

Beam imports about 2,500 modules and building a pipeline makes hundreds of thousands of objects, none
of them garbage. The cycle collector's passes over them cost a command about a tenth of its start-up
(`import apache_beam, numba, pyarrow`: 2.0 s of CPU here, 1.8 s with the collector off), and at exit
Python's final collections would visit every one of them again (about a second per command:
`python -c "import apache_beam"` took 3.3-4.2 s, 2.4-2.9 s with `gc.freeze()` before exit). So a
command runs with the collector off until its pipeline starts (`resume_collection`), and what start-up
made is frozen: still freed at exit, never searched for cycles again. A job called from Python (a test,
a notebook) keeps the caller's collector as it is.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def command_collection():
    """Around a command's whole run: the collector off at start-up, everything frozen at the end (and
    the collector left as it was found, for a caller that runs a command in its own process)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def resume_collection() -> None:
    """Before the pipeline runs: freeze what start-up made and turn the collector back on (a no-op
    unless `command_collection` paused it)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
