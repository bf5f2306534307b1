"""Which format a dataset or prediction file holds, told by its first record, never by the file's name: every
format declared once, in `FORMATS`, in the order a record is tried against them.

A module of its own so that a new dataset's format is one more row of `FORMATS` (its name, the test that
claims a record, its record kind), not an edit of another dataset's reader. The formats:

- a record with `instructions` and `objId` is REVERIE (`vlnkit.datasets.reverie`); with `instructions`, an
  `id` and no `path_id`, REVERIE's test split (refused: it has no targets);
- a record with `inst_idx` and a planner or player path is a CVDN instance (`vlnkit.datasets.cvdn`);
- one with `instruction_id`, no `instructions`, and `metrics` or `demonstration_id` but no `instruction` is
  an RxR follower line; any other with `instruction_id` and no `instructions` is an RxR guide line (so a
  guide line without `instruction` is told so) (`vlnkit.datasets.rxr`);
- anything else is R2R (or R4R, or build_r4r's paths; `vlnkit.datasets.r2r`), whose reader says what is wrong.

Every record of a file is then judged as that file's format (`KINDS`): a file that starts with R2R records
and goes on with RxR lines dead-letters the RxR lines, each with its reason. A VLN task whose files hold
records of another's format claims them by its own `detect` (`vlnkit.scoring.task.Task`).

>>> record_format({"instruction_id": 26, "path": ["a"], "language": "en-IN"}), record_format({"path_id": 1, "instructions": ["go"]})
('rxr_guide', 'r2r')
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from vlnkit.datasets.cvdn import CVDN_FORMAT, CVDN_INSTANCE, is_cvdn
from vlnkit.datasets.json_chunks import first_line, json_chunks
from vlnkit.datasets.records import R2R_RECORD, RXR_FOLLOWER, RXR_GUIDE, RecordKind
from vlnkit.datasets.reverie import REVERIE_FORMAT, REVERIE_RECORD, REVERIE_TEST_FORMAT, is_reverie
from vlnkit.io.dead_letters import RecordError

R2R = "r2r"
RXR_GUIDE_FORMAT = "rxr_guide"
RXR_FOLLOWER_FORMAT = "rxr_follower"


@dataclass(frozen=True)
class Format:
    """One dataset format: its `name`, whether a parsed record is of it (`claims`, tried in `FORMATS` order:
    the first that claims a record names its format) and what a valid record of it is (`kind`)."""

    name: str
    claims: Callable[[object], bool]
    kind: RecordKind


def _rxr_line(obj) -> bool:
    return isinstance(obj, dict) and "instructions" not in obj and "instruction_id" in obj


def _rxr_follower(obj) -> bool:
    return _rxr_line(obj) and "instruction" not in obj and ("metrics" in obj or "demonstration_id" in obj)


FORMATS: tuple[Format, ...] = (
    Format(REVERIE_FORMAT, lambda obj: is_reverie(obj) and "objId" in obj, REVERIE_RECORD),
    # never validated record by record: the file is refused as a whole
    Format(REVERIE_TEST_FORMAT, is_reverie, R2R_RECORD),
    Format(CVDN_FORMAT, is_cvdn, CVDN_INSTANCE),
    Format(RXR_FOLLOWER_FORMAT, _rxr_follower, RXR_FOLLOWER),
    Format(RXR_GUIDE_FORMAT, _rxr_line, RXR_GUIDE),
    Format(R2R, lambda obj: True, R2R_RECORD),  # the last: whatever no other claims
)
KINDS: dict[str, RecordKind] = {f.name: f.kind for f in FORMATS}


def record_format(obj) -> str:
    """The format of a parsed record: the name of the first of `FORMATS` that claims it.

    >>> record_format({"instruction_id": 26, "path": ["a"], "metrics": {"ne": 0.0}})
    'rxr_follower'
    >>> record_format({"instruction_id": 26, "path": ["a"]}), record_format([1])
    ('rxr_guide', 'r2r')
    >>> record_format({"path_id": 1, "objId": 66, "instructions": ["go"]}), record_format({"id": "7", "instructions": []})
    ('reverie', 'reverie_test')
    >>> record_format({"inst_idx": 108, "planner_path": ["a"], "player_path": ["a"], "end_panos": ["a"]})
    'cvdn'
    """
    return next(f.name for f in FORMATS if f.claims(obj))


def items_format(items) -> str | None:
    """The format of the first parsed record (a dict) among `items`, or None when they hold none."""
    for item in items:
        if isinstance(item, dict):
            return record_format(item)
    return None


def line_format(line: bytes) -> str | None:
    """The format of one JSON line, or None when it is not a JSON object."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return record_format(obj) if isinstance(obj, dict) else None


HEAD_BYTES = 1 << 16  # a JSON list's first record is looked for in this much of the file first


def _first_listed(head: bytes):
    """The first item of a JSON list that starts in `head` and is a complete object there; None when it
    cannot be told from `head` alone (the whole file is parsed then). Telling a 4 MB R2R list this way
    takes microseconds, where parsing it whole takes most of a second.

    >>> _first_listed(b'[{"path_id": 1, "instructions": ["go"]}, {"pa'), _first_listed(b'[{"path_id": 1')
    ({'path_id': 1, 'instructions': ['go']}, None)
    """
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if not text.startswith("["):
        return None
    start = len(text) - len(text[1:].lstrip())
    try:
        obj, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def first_record(open_stream, source: str = ""):
    """The first record (a dict) of the file `open_stream()` opens, or None when it holds none. Plain JSON
    Lines are read no further than their first line; anything else (a JSON list, an indented object) is
    parsed whole, from a second `open_stream()`."""
    with open_stream() as stream:
        line = first_line(stream)
    if line is not None:
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None
    with open_stream() as stream:
        found = _first_listed(stream.read(HEAD_BYTES))
    if found is not None:
        return found
    with open_stream() as stream:
        for chunk in json_chunks(stream, source):
            if not isinstance(chunk, RecordError):
                found = next((item for item in chunk[1] if isinstance(item, dict)), None)
                if found is not None:
                    return found
    return None


def stream_format(open_stream, source: str = "") -> str:
    """The format of the file `open_stream()` opens (its first record, `first_record`). A file without any
    record is "r2r" (its reader then says what is wrong).

    >>> import io
    >>> stream_format(lambda: io.BytesIO(b'[{"instruction_id": 1, "path": ["a"], "metrics": {}}]'))
    'rxr_follower'
    """
    obj = first_record(open_stream, source)
    return R2R if obj is None else record_format(obj)


def file_record(path: str):
    """The first record of a dataset or prediction file, local or gs:// (gzip and bzip2 are read through);
    None for a file without records or one that cannot be read through (a truncated or corrupt `.gz`, a
    read error: its reader then makes it a dead letter naming the file and the error)."""
    from vlnkit.io import fileio

    try:
        return first_record(lambda: fileio.open_read(path), path)
    except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile and bz2's errors are OSErrors
        return None


def file_format(path: str) -> str:
    """The format of a dataset or prediction file (its first record, `file_record`); "r2r" for a file
    without records or one that cannot be read through."""
    obj = file_record(path)
    return R2R if obj is None else record_format(obj)
