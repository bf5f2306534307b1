"""One package build at a time per project folder, for launches that stage the project (`--setup_file`).

Beam builds the package a job's workers install (`workflow.tar.gz`) by running `python -m build --sdist`
or `python setup.py sdist` in the folder of `--setup_file`; both write `vlnkit.egg-info/` and a release
tree `vlnkit-<version>/` into that folder, then delete the tree. Two launches from one checkout at the
same time (a scheduler starting several jobs, a shell loop with `&`) then break each other's build:
one deletes the tree the other is archiving, and that launch dies in Beam's stager with a traceback.
Beam takes no lock, so the launcher does: an exclusive `flock` on a file in the system's temporary
folder named after the project folder, held while `pipeline.run()` stages and submits the job (a few
seconds), not while the job runs. Written here because no library of the job's dependencies offers
it and it is a dozen lines over `fcntl`.

    >>> with one_package_build(None):  # no --setup_file: nothing is built, nothing is held
    ...     pass
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator


def lock_path(setup_file: str) -> str:
    """The lock file of the folder that holds `setup_file` (the same for every launch from that folder)."""
    folder = os.path.dirname(os.path.abspath(setup_file))
    digest = hashlib.sha256(folder.encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"vlnkit-package-build-{digest}.lock")


@contextlib.contextmanager
def one_package_build(setup_file: str | None) -> Iterator[None]:
    """Hold the package-build lock of `setup_file`'s folder for the block (nothing when it is None)."""
    if not setup_file:
        yield
        return
    with open(lock_path(setup_file), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed, or the process dies
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
