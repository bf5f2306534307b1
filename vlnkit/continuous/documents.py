"""A continuous-environment file's bytes, and which of the known layouts it is, told by its content.

Files are read through `vlnkit.io.fileio` (local paths or any Beam filesystem such as gs://) and
gunzipped when their first bytes are gzip's magic number, whatever their name says. The layout is
told by the content, never by the file name:

| layout | content |
| --- | --- |
| `episodes` | one JSON object with an `episodes` list (R2R-CE, RxR-Habitat) |
| `ground_truth` | one JSON object of `{episode_id: {"locations": ...}}` |
| `vlnce_inference` | one JSON object of `{episode_id: [{"position": ..., ...}, ...]}` (VLN-CE R2R inference) |
| `positions` | one JSON object of `{episode_id: [[x, y, z], ...]}` |
| `vlnce_stats` | one JSON object of `{episode_id: {metric: value}}` (VLN-CE, CWP, ETPNav `stats_ep_ckpt_*.json`) |
| `navid_stats` | one JSON object `{"id": episode_id, metric: value, ...}` (NaVid's `stats_<id>.json`) |
| `path_lines` | JSON Lines (or a list) of `{"instruction_id", "path"}` (RxR-Habitat submission) |
| `result_lines` | JSON Lines (or a list) of `{"episode_id", "success", ...}` (StreamVLN, InternNav `result.json`) |

The first entry decides (an empty object or list is refused: there is nothing to tell by).

>>> kind_of({"episodes": []}), kind_of({"7": [[0, 0, 0]]}), kind_of([{"instruction_id": 1, "path": []}])
('episodes', 'positions', 'path_lines')
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError
from vlnkit.io.json_text import loads_exact

GZIP_MAGIC = b"\x1f\x8b"
KINDS = (
    "episodes",
    "ground_truth",
    "vlnce_inference",
    "positions",
    "vlnce_stats",
    "navid_stats",
    "path_lines",
    "result_lines",
)
_STATS_KEYS = frozenset(("distance_to_goal", "success", "spl", "ndtw", "oracle_success", "path_length"))


def gunzip(data: bytes) -> bytes:
    """All members of gzip data (zlib is three times faster than the gzip module on a 10 MB file)."""
    out = []
    while data[:2] == GZIP_MAGIC:
        unzip = zlib.decompressobj(wbits=31)
        out.append(unzip.decompress(data))
        out.append(unzip.flush())
        data = unzip.unused_data
    return b"".join(out) + data if out else data


def read_bytes(path: str) -> bytes:
    """The file's bytes, gunzipped when they start with gzip's magic number, whatever the name says.

    A local file is read as stored (a `.bz2` one is decompressed); a path with a scheme (gs://...) goes
    through `vlnkit.io.fileio`, whose filesystems gunzip a `.gz` by its name (anything still gzipped
    is gunzipped here).
    """
    if "://" in path or path.endswith(".bz2"):
        data = fileio.read_bytes(path)
    else:
        with open(os.path.expanduser(path), "rb") as f:
            data = f.read()
    return gunzip(data)


def kind_of(value) -> str | None:
    """The layout of a parsed JSON document (a value, or the list of a JSON Lines file's values)."""
    if isinstance(value, list):
        first = value[0] if value else None
        if isinstance(first, dict):
            if "path" in first and "instruction_id" in first:
                return "path_lines"
            if "episode_id" in first:
                return "result_lines"
        return None
    if not isinstance(value, dict) or not value:
        return None
    if "episodes" in value:
        return "episodes"
    if "id" in value and _STATS_KEYS.intersection(value):
        return "navid_stats"
    first = next(iter(value.values()))
    if isinstance(first, dict):
        if "locations" in first:
            return "ground_truth"
        if _STATS_KEYS.intersection(first):
            return "vlnce_stats"
        return None
    if isinstance(first, list):
        head = first[0] if first else None
        if isinstance(head, dict):
            return "vlnce_inference"
        if isinstance(head, list):
            return "positions"
    return None


@dataclass(frozen=True)
class Document:
    """A parsed file: `value` (one JSON value, or the list of a JSON Lines file's values) and its layout.

    `line_errors` are JSON Lines lines that do not parse (dead letters of their own); `error` is set
    (and `value` is None) when the file as a whole is unusable.
    """

    source: str
    kind: str | None
    value: object = None
    lines: list | None = None  # JSON Lines: the 1-based line number of each value
    line_errors: tuple = ()
    error: RecordError | None = None


def parse(data: bytes, source: str) -> Document:
    """Parse one JSON value, or JSON Lines when the whole text is not one value (see `kind_of`)."""
    text = data.removeprefix(b"\xef\xbb\xbf")
    if not text.strip():
        return Document(source, None, error=RecordError(source, "", "the file is empty"))
    try:
        value = loads_exact(text)
        return Document(source, kind_of(value), value)
    except (ValueError, RecursionError) as exc:
        whole_error = exc
    values, lines, errors = [], [], []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(loads_exact(line))
            lines.append(n)
        except (ValueError, RecursionError) as exc:
            errors.append(RecordError(source, f"line {n}", f"invalid JSON ({exc})"))
    if not values or len(errors) > len(values):
        return Document(source, None, error=RecordError(source, "", f"neither JSON nor JSON Lines ({whole_error})"))
    return Document(source, kind_of(values), values, lines, tuple(errors))


def read(path: str, what: str) -> tuple[bytes | None, RecordError | None]:
    """(the file's bytes, None), or (None, the RecordError saying why `what` cannot be read)."""
    try:
        return read_bytes(path), None
    except (OSError, EOFError, zlib.error) as exc:
        return None, RecordError(path, "", f"cannot read the {what} ({exc})")


def parse_expecting(data: bytes, source: str, expected: tuple[str, ...], what: str) -> Document:
    """`parse`, with `error` set when the file is not of an `expected` layout (naming the layout it is,
    when it is another known one) or not UTF-8 text."""
    try:
        doc = parse(data, source)
    except UnicodeDecodeError as exc:
        return Document(source, None, error=RecordError(source, "", f"not UTF-8 text ({exc})"))
    if doc.error is not None or doc.kind in expected:
        return doc
    found = f"a {doc.kind} file" if doc.kind else "none of the known layouts"
    return Document(source, doc.kind, error=RecordError(source, "", f"expected {what}, but the file is {found}"))


def file_kind(path: str) -> str | None:
    """The layout of a file (one of KINDS), or None when it is unreadable or none of them: for a job
    that takes either agent positions or simulator results under one flag. Parses the whole file."""
    data, error = read(path, "file")
    if error is not None:
        return None
    try:
        return parse(data, path).kind
    except UnicodeDecodeError:
        return None
