"""Apache Beam imported without the adapters and clients a run does not use.

`import apache_beam` loads every IO and type adapter Beam has, among them pandas (about 0.3 s, for
Beam's DataFrame batch types), pymongo with bson (about 0.13 s, for MongoDB IO) and Google Cloud's
client libraries (about 0.35 s: Cloud Storage, BigQuery, Pub/Sub, Dataflow, their auth and API core).
Beam imports all of them inside `try: ... except ImportError`, and Beam's import is the largest part
of a small run's wait (about a third of the score job on R2R val_unseen). So a job imports Beam with
those packages refused: Beam then starts as it does on a machine without them.

- pandas and MongoDB's packages: always (no job uses them).
- Google Cloud's clients and Beam's BigQuery IO: only in a process that runs one job as its command
  (`pipelines.command.run_as_command`) whose whole command line, profiles expanded, names neither a
  `gs://` path nor the Dataflow runner (`uses_google_cloud`). Beam keeps what it found missing for the
  life of the process (its GCS filesystem and auth stay off), so a process that might later be asked
  for Cloud Storage (a test session, a notebook, a job that names it) imports them whole, and
  `vlnkit.io.fileio` refuses a `gs://` path in a process that started without them, naming why.

pyarrow, too, imports pandas the first time it converts a Python list (about 0.35 s, to ask whether
the list is a pandas object). In a job's command process nothing is a pandas object before pandas is
imported, so `job_command` lets pyarrow ask first, with pandas refused: pyarrow remembers the answer
for its checks, and its own pandas conversions (`to_pandas`, `from_pandas`) still import pandas when
called. (Left to chance, that first conversion happened on the warm-up thread either during Beam's
import, pandas refused, or after it, pandas loaded: a third of a second that came and went.)

The refusal lasts for the import only: afterwards pandas, or Google's translation client of the
paraphrase job, import normally. A Beam that stops guarding one of these imports cannot be imported
again in the same process (its compiled modules keep the classes of the failed attempt), so the
process starts over as it was started, with `FULL_IMPORT` set: Beam is then imported whole.

    >>> beam = import_beam()
    >>> beam.__name__
    'apache_beam'
    >>> uses_google_cloud(["--dataset=gs://bucket/R2R_val_unseen.json"]), uses_google_cloud(["--runner=DirectRunner"])
    (True, False)
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Sequence
from contextlib import contextmanager

from vlnkit.refused_imports import refused

UNUSED = ("pandas", "pymongo", "bson")  # packages refused while Beam is imported, in every process
# Google Cloud's client libraries Beam guards (Cloud Storage, BigQuery, Pub/Sub, Dataflow, auth, API core).
GOOGLE_CLOUD = ("google.cloud", "google.auth", "google.api_core", "google_auth_httplib2", "googleapiclient", "apitools")
# Beam's BigQuery module: `apache_beam.io` imports it (then Pub/Sub, GCS IO and the cross-language IO
# wrappers) in one guarded block, and without Google Cloud's clients it is of no use, but its own imports
# (requests, regex, orjson, objsize) cost about 0.08 s of the import.
GOOGLE_CLOUD_IO = ("apache_beam.io.gcp.bigquery",)
BY = "pipelines.beam_import"  # names this module in a refusal's message (and tells its refusals apart)
FULL_IMPORT = "VLNKIT_FULL_BEAM_IMPORT"  # set: import Beam with everything it has
WITHOUT_GOOGLE_CLOUD = (
    "this job started Apache Beam without Google Cloud's client libraries, as its command line names no gs:// "
    "path and no Dataflow runner (pipelines.beam_import); name the gs:// input or output on the command line, "
    f"or set {FULL_IMPORT}=1"
)

_one_job_process = False  # inside `job_command()`: this process runs one job as its command


@contextmanager
def job_command():
    """Around a command's run of one job: its Beam import may leave out Google Cloud's clients, and
    pyarrow learns that pandas is not loaded (`pyarrow_without_pandas`)."""
    global _one_job_process
    _one_job_process = True
    pyarrow_without_pandas()
    try:
        yield
    finally:
        _one_job_process = False


def pyarrow_without_pandas() -> None:
    """Let pyarrow look for pandas now, with pandas refused, unless pandas is loaded already: its checks
    of Python lists then skip the import (pyarrow asks once per process), while `to_pandas()` and
    `from_pandas()` import pandas for themselves whenever called."""
    if "pandas" in sys.modules:
        return
    import pyarrow

    with refused(("pandas",), BY):
        pyarrow.array([])  # a list: pyarrow asks whether pandas is there, and keeps the answer


def uses_google_cloud(command_line: Sequence[str]) -> bool:
    """Whether a job's command line (profiles expanded) may need Google Cloud: a `gs://` path or Dataflow."""
    return any("gs://" in arg or "dataflow" in arg.lower() for arg in command_line)


# Google's client libraries warn on import, on every run, about the machine: grpcio older than 1.83 (as
# older Beam releases require) and Python 3.11's end of life in 2027. Nothing a job's user can act on;
# they would bury a job's one-line error under ten lines of warnings.
MACHINE_WARNINGS = r"google\.(auth|api_core)\b"


def import_beam(command_line: Sequence[str] | None = None):
    """`apache_beam`, imported once without `UNUSED`, and without `GOOGLE_CLOUD` when this process runs
    one job as its command and `command_line` (the job's flags, profiles expanded) does not use it."""
    warnings.filterwarnings("ignore", category=FutureWarning, module=MACHINE_WARNINGS)
    if "apache_beam" in sys.modules or os.environ.get(FULL_IMPORT):
        import apache_beam

        return apache_beam
    local = _one_job_process and command_line is not None and not uses_google_cloud(command_line)
    mongo = logging.getLogger("apache_beam.io.mongodbio")  # warns that bson is missing: expected here
    level = mongo.level
    mongo.setLevel(logging.ERROR)
    try:
        with (
            refused(UNUSED + (GOOGLE_CLOUD + GOOGLE_CLOUD_IO if local else ()), BY),
            _without_missing_apitools_warning(),
        ):
            import apache_beam
    except ImportError as exc:
        if f"({BY})" not in _chain(exc):  # not one of ours: Beam's own problem
            raise
        os.environ[FULL_IMPORT] = "1"  # a Beam that needs one of them: the process again, Beam whole
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
    finally:
        mongo.setLevel(level)
    if local:
        from vlnkit.io import fileio

        fileio.refuse_cloud_storage(WITHOUT_GOOGLE_CLOUD)
    return apache_beam


class _MissingApitools(logging.Filter):
    """Drops Beam's warnings that apitools, or (Beam 2.62, which logs the ImportError of
    `google.cloud.storage` where later releases stay silent) its GCS filesystem, is missing: expected when
    Google Cloud's clients are refused."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("apitools not found", "Failed to import GCSFileSystem"))


@contextmanager
def _without_missing_apitools_warning():
    """Beam logs that warning with `logging.warning`, on the root logger: filtered there. A root logger
    with no handler would be configured by that call (`logging.basicConfig`, which would then make the
    job's own logging set-up a no-op), so until the import ends it has one that prints what else is
    logged as Python does unconfigured (`logging.lastResort`)."""
    root = logging.getLogger()
    filesystems = logging.getLogger("apache_beam.io.filesystems")  # a logger's filters see its own records only
    drop = _MissingApitools()
    handler = None if root.handlers else logging.lastResort or logging.StreamHandler()
    root.addFilter(drop)
    filesystems.addFilter(drop)
    if handler is not None:
        root.addHandler(handler)
    try:
        yield
    finally:
        root.removeFilter(drop)
        filesystems.removeFilter(drop)
        if handler is not None:
            root.removeHandler(handler)


def _chain(exc: BaseException) -> str:
    """The messages of an exception and those it was raised from or during."""
    seen = []
    while exc is not None and len(seen) < 20:
        seen.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return " ".join(seen)
