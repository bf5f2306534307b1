"""Apache Beam imported without the two adapters no job uses: pandas' and MongoDB's.

`import apache_beam` loads every IO and type adapter Beam has, among them pandas (about 0.3 s, for
Beam's DataFrame batch types) and pymongo with bson (about 0.13 s, for MongoDB IO). Beam imports both
inside `try: ... except ImportError`, and no job here uses either, while Beam's import is the largest
part of a small run's wait (about a third of the score job on R2R val_unseen). So a job imports Beam
with those packages refused: Beam then starts as it does on a machine without them (no pandas batch
converters, no MongoDB IO). The refusal lasts for the import only: afterwards pandas imports normally
for any code that wants it. A Beam that stops guarding either import cannot be imported again in the
same process (its compiled modules keep the classes of the failed attempt), so the process starts
over as it was started, with `FULL_IMPORT` set: Beam is then imported whole.

    >>> beam = import_beam()
    >>> beam.__name__
    'apache_beam'
"""

from __future__ import annotations

import importlib.abc
import logging
import os
import sys

UNUSED = ("pandas", "pymongo", "bson")  # top-level packages refused while Beam is imported
FULL_IMPORT = "VLNKIT_FULL_BEAM_IMPORT"  # set: import Beam with everything it has


class _Refuse(importlib.abc.MetaPathFinder):
    """A finder that makes `import <one of UNUSED>` (and its submodules) raise ImportError."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in UNUSED:
            raise ImportError(f"{name} is not loaded while Apache Beam starts (pipelines.beam_import)")
        return None


def import_beam():
    """`apache_beam`, imported once without `UNUSED` (see the module docstring)."""
    if "apache_beam" in sys.modules or os.environ.get(FULL_IMPORT):
        import apache_beam

        return apache_beam
    refuse = _Refuse()
    mongo = logging.getLogger("apache_beam.io.mongodbio")  # warns that bson is missing: expected here
    level = mongo.level
    mongo.setLevel(logging.ERROR)
    sys.meta_path.insert(0, refuse)
    try:
        import apache_beam
    except ImportError as exc:
        if "pipelines.beam_import" not in _chain(exc):  # not one of ours: Beam's own problem
            raise
        os.environ[FULL_IMPORT] = "1"  # a Beam that needs one of them: the process again, Beam whole
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
    finally:
        sys.meta_path.remove(refuse)
        mongo.setLevel(level)
    return apache_beam


def _chain(exc: BaseException) -> str:
    """The messages of an exception and those it was raised from or during."""
    seen = []
    while exc is not None and len(seen) < 20:
        seen.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return " ".join(seen)
