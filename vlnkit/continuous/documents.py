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

The first entry decides (an empty object or list is refused: there is nothing to tell by); an object
keyed by anything but integer episode ids is none of them (`wrapped_records` says what such a file is).

>>> kind_of({"episodes": []}), kind_of({"7": [[0, 0, 0]]}), kind_of([{"instruction_id": 1, "path": []}])
('episodes', 'positions', 'path_lines')
"""

from __future__ import annotations

import bz2
import json
import os
import re
import zlib
from dataclasses import dataclass

import numpy as np

from vlnkit.compiled import njit
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
_INTEGER_KEY = re.compile(r"\s*[-+]?[0-9]+\s*")  # an episode id as an object key


CUT_SHORT = "Compressed file ended before the end-of-stream marker was reached"  # as the gzip module says


def gunzip(data: bytes) -> bytes:
    """All members of gzip data (zlib is three times faster than the gzip module on a 10 MB file). A
    member cut short raises EOFError, as the gzip module does: a file cut short is not a smaller file.

    >>> import gzip
    >>> gunzip(gzip.compress(b"abc")), gunzip(gzip.compress(b"abc")[:-4])
    Traceback (most recent call last):
    EOFError: Compressed file ended before the end-of-stream marker was reached
    """
    out = []
    while data[:2] == GZIP_MAGIC:
        unzip = zlib.decompressobj(wbits=31)
        out.append(unzip.decompress(data))
        out.append(unzip.flush())
        if not unzip.eof:
            raise EOFError(CUT_SHORT)
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
    key, first = next(iter(value.items()))
    if not isinstance(key, str) or not _INTEGER_KEY.fullmatch(key):  # keyed by episode id, or none of them
        return None
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
    (and `value` is None) when the file as a whole is unusable. `repeated` holds the later entries of a
    top-level object that repeats a key, (key, its entry number, the kept entry's number): `value` keeps
    the first (`first_wins`), and `repeated_errors` words the others.
    """

    source: str
    kind: str | None
    value: object = None
    lines: list | None = None  # JSON Lines: the 1-based line number of each value
    line_errors: tuple = ()
    error: RecordError | None = None
    repeated: tuple = ()


@njit(cache=True, nogil=True)
def _members(data):
    """How many entries the JSON object `data` (uint8, valid JSON starting with "{") holds at its top level:
    one more than its top-level commas, or 0 when it is empty. One pass, tracking strings and nesting."""
    depth = 0
    in_string = False
    escaped = False
    commas = 0
    any_key = False
    for i in range(len(data)):
        c = data[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == 92:  # backslash
                escaped = True
            elif c == 34:  # quote
                in_string = False
        elif c == 34:
            in_string = True
            any_key |= depth == 1
        elif c == 123 or c == 91:  # { [
            depth += 1
        elif c == 125 or c == 93:  # } ]
            depth -= 1
        elif c == 44 and depth == 1:
            commas += 1
    return commas + 1 if any_key else 0


def repeats_a_key(data: bytes, value: dict) -> bool:
    """Whether the JSON object text `data`, which parsed to `value`, repeats a top-level key: every JSON
    parser keeps one entry per key (orjson, json and msgspec: the last), so the text holds more entries
    than `value`. One compiled pass over the bytes (a few milliseconds for a 10 MB file).

    >>> repeats_a_key(b'{"7": [[0, 0, 0]], "7": [[1, 1, 1]]}', {"7": [[1, 1, 1]]}), repeats_a_key(b'{"a": {"b": 1, "c": 2}}', {"a": {}})
    (True, False)
    """
    return _members(np.frombuffer(data, np.uint8)) != len(value)


def first_wins(text: bytes | str) -> tuple[dict, tuple]:
    """(a JSON object text's top-level entries, the first of each key kept, the later ones as (key, entry
    number, kept entry number)). Nested objects keep one entry per key as every parser does.

    >>> first_wins(b'{"7": 1, "8": 2, "7": 3}')
    ({'7': 1, '8': 2}, (('7', 2, 0),))
    """
    last: list = []

    def pairs(found):  # called for every object, the top-level one last
        last[:] = [found]
        return dict(found)

    json.loads(text, object_pairs_hook=pairs)
    kept, first, repeated = {}, {}, []
    for n, (key, value) in enumerate(last[0]):
        if key in kept:
            repeated.append((key, n, first[key]))
        else:
            kept[key], first[key] = value, n
    return kept, tuple(repeated)


def repeated_errors(doc: Document, what: str = "episode_id") -> list[RecordError]:
    """The dead letters of the entries `doc` left out because an earlier one has the same key (the first
    wins, as for every duplicate the toolkit meets)."""
    return [
        RecordError(doc.source, f"{what}={key!r:.20} (entry {n})", f"{what} {key} appears again (entry {kept} is kept)")
        for key, n, kept in doc.repeated
    ]


def parse(data: bytes, source: str) -> Document:
    """Parse one JSON value, or JSON Lines when the whole text is not one value (see `kind_of`). A
    top-level object that repeats a key keeps its first entry of it (`Document.repeated`)."""
    text = data.removeprefix(b"\xef\xbb\xbf")
    if not text.strip():
        return Document(source, None, error=RecordError(source, "", "the file is empty"))
    try:
        value = loads_exact(text)
        if isinstance(value, dict) and repeats_a_key(text, value):
            value, repeated = first_wins(text)
            return Document(source, kind_of(value), value, repeated=repeated)
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


DESCRIPTIONS = {  # each layout in a few words, for the one line that refuses a file where it does not belong
    "episodes": "a VLN-CE episode file (R2R-CE or RxR-Habitat)",
    "ground_truth": "a VLN-CE ground-truth file ({episode_id: {locations}})",
    "vlnce_inference": "VLN-CE agent positions (R2R inference output)",
    "positions": "continuous agent positions ({episode_id: [[x, y, z], ...]})",
    "path_lines": "an RxR-Habitat submission (continuous positions)",
    "vlnce_stats": "per-episode simulator results (VLN-CE / CWP / ETPNav stats_ep_ckpt_*.json)",
    "result_lines": "per-episode simulator results (StreamVLN / InternNav result.json)",
    "navid_stats": "per-episode simulator results (NaVid stats_<id>.json)",
}
POSITION_KINDS = ("vlnce_inference", "positions", "path_lines")  # agent positions (`positions.read_positions`)
RESULT_KINDS = ("vlnce_stats", "result_lines", "navid_stats")  # simulator results (`results.read_results`)
HEAD_BYTES = 1 << 16  # what `sniff_kind` reads of a file
_KEY = re.compile(rb'\s*\{\s*"((?:[^"\\]|\\.){0,200})"\s*:\s*')
_EPISODES_LIST = re.compile(rb'"episodes"\s*:\s*\[\s*[{\]]')


def head_bytes(path: str, size: int = HEAD_BYTES) -> bytes:
    """The first `size` bytes of a file's content (local or gs://; gzip and bzip2 told by their magic
    numbers, whatever the name says). Only the stored start is read and decompressed: a compressed file cut
    short still shows what it is (its reader then refuses it as cut short)."""
    with fileio.open_stored(path) as f:
        head = f.read(size)
    if head[:2] == GZIP_MAGIC:
        head = zlib.decompressobj(wbits=31).decompress(head, size)
    elif head[:3] == b"BZh":
        head = bz2.BZ2Decompressor().decompress(head, size)
    return head


def head_kind(head: bytes) -> str | None:
    """The continuous layout (one of KINDS) a file starting with `head` holds, told from its first bytes
    only, or None when they are none of them (an R2R or RxR file, or too little to tell).

    Stricter than `kind_of` where the VLN graph formats look alike: a `path_lines` record's path must
    start with a position [x, y, z] (an RxR prediction `{"instruction_id", "path": [viewpoint ids]}`
    is not one), and a `result_lines` record must carry a result (`success`, `spl`, `ne`, ...).

    >>> head_kind(b'{"episodes": [{"episode_id": 1'), head_kind(b'{"12": {"locations": [[0, 0'), head_kind(b'{"12": [[0.5, 0'),
    ('episodes', 'ground_truth', 'positions')
    >>> head_kind(b'{"instruction_id": 3, "path": [[0, 0, 0]]}\\n'), head_kind(b'{"instruction_id": 3, "path": ["ab"]}\\n')
    ('path_lines', None)
    >>> head_kind(b'[{"path_id": 4, "instructions": ["go"]}]'), head_kind(b'{"distance": 9.5, "scan": "x"}\\n')
    (None, None)
    >>> head_kind(b'{\\n  "id": 7,\\n  "success": 1.0'), head_kind(b'{"id": 7, "spl": 0.5}')
    ('navid_stats', 'navid_stats')
    """
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text[:1] == b"[":
        item = _first_value(text[1:])
        return _record_kind(item) if isinstance(item, dict) else None
    if text[:1] != b"{":
        return None
    line = text.split(b"\n", 1)[0]
    try:
        whole = json.loads(line)
    except ValueError:
        whole = None
    if isinstance(whole, dict):  # a JSON Lines record, or a whole small file on one line
        found = _record_kind(whole)
        if found is not None or b"\n" in text.strip():
            return found
        found = kind_of(whole)
        return found if found not in ("path_lines", "result_lines") else None
    m = _KEY.match(text)
    if m is None:
        return None
    key = m.group(1).decode("utf-8", "replace")
    if key == "episodes" or _EPISODES_LIST.search(text):
        return "episodes"
    if key == "id":  # NaVid's one-episode object, written over several lines
        return "navid_stats" if any(f'"{k}"'.encode() in text for k in _STATS_KEYS) else None
    if not _INTEGER_KEY.fullmatch(key):
        return None
    value = _first_value(text[m.end() :])
    if value is not None:
        return kind_of({key: value})
    rest = text[m.end() :].lstrip()  # the first value goes past the head: its first key or item tells
    inner = _KEY.match(rest)
    if inner is not None:
        name = inner.group(1).decode("utf-8", "replace")
        return "ground_truth" if name == "locations" else "vlnce_stats" if name in _STATS_KEYS else None
    if rest[:1] == b"[":
        after = rest[1:].lstrip()[:1]
        return {b"{": "vlnce_inference", b"[": "positions"}.get(after)
    return None


_RXR_INSTRUCTION = re.compile(rb'"instruction"\s*:\s*\{[^{}]*"instruction_id"')


def instruction_keyed(path: str) -> bool:
    """Whether an episode file is keyed by instruction ids (RxR-Habitat: the first episode's instruction has
    an `instruction_id`) rather than by R2R-CE's `<trajectory_id>_<k>` ids, told from its first bytes as
    `episodes.read_episodes` tells its flavour from the first episode; False when the file is not one.
    The job asks this, not the flavour's name, so no module outside this package compares that name."""
    try:
        head = head_bytes(path)
    except (OSError, EOFError, zlib.error):
        return False
    return head_kind(head) == "episodes" and _RXR_INSTRUCTION.search(head) is not None


def graph_predictions(head: bytes) -> bool:
    """Whether a file starting with `head` holds predictions on a navigation graph (R2R `{"instr_id",
    "trajectory"}` records, or RxR `{"instruction_id", "path": [viewpoint ids]}`), not continuous positions:
    a file a continuous dataset's job refuses at once rather than dead-letter record by record.

    >>> graph_predictions(b'[{"instr_id": "4_0", "trajectory": [["ab", 0, 0]]}]'), graph_predictions(b'{"7": [[0, 0, 0]]}')
    (True, False)
    """
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    item = _first_value(text[1:]) if text[:1] == b"[" else _first_value(text.split(b"\n", 1)[0])
    if not isinstance(item, dict):
        return False
    path = item.get("path")
    strings = isinstance(path, list) and bool(path) and isinstance(path[0], str)
    return "instr_id" in item or ("instruction_id" in item and strings)


def sniff_kind(path: str) -> str | None:
    """`head_kind` of a file's first bytes (None when it cannot be read: its reader then says why)."""
    try:
        return head_kind(head_bytes(path))
    except (OSError, EOFError, zlib.error):
        return None


def sniff_wrapped(path: str) -> tuple[str, str] | None:
    """`wrapped_records` of a file's first bytes (None when it cannot be read: its reader then says why)."""
    try:
        return wrapped_records(head_bytes(path))
    except (OSError, EOFError, zlib.error):
        return None


def _first_value(text: bytes):
    """The first JSON value of `text` when it is complete there, else None."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text.decode("utf-8", "ignore").lstrip())
        return value
    except ValueError:
        return None


def _record_kind(item: dict) -> str | None:
    """`path_lines` or `result_lines` for one record, checked more strictly than `kind_of` (see `head_kind`)."""
    path = item.get("path")
    if "instruction_id" in item and isinstance(path, list) and path and isinstance(path[0], list):
        return "path_lines"
    if "episode_id" in item and {"success", "spl", "ne", "os", "ndtw"}.intersection(item):
        return "result_lines"
    return None


# What a list of records holds, told by the keys of its first record (the first match wins).
_RECORDS = (
    (("path_id", "scan", "path"), "R2R records"),
    (("instruction_id", "path"), "RxR lines"),
    (("instr_id", "trajectory"), "predictions (R2R submission layout)"),
    (("inst_idx", "scan"), "CVDN records"),
    (("episode_id",), "records keyed by episode_id"),
)
_LIST_OF_OBJECTS = re.compile(rb"\[\s*\{")


def wrapped_records(head: bytes) -> tuple[str, str] | None:
    """(the top-level key, what its list holds) when a file starting with `head` is one JSON object that
    wraps a list of records (`{"data": [{"path_id": ..., "scan": ..., "path": [...]}, ...]}`) rather than
    being records or one of KINDS; None otherwise. The key is not an episode id, and its value is a list
    whose first item is a record of a known kind (a record's own list of objects, such as an RxR
    `timed_instruction`, is not one). Every key is looked at when the head holds the whole object; only
    the first when the object goes on past it.

    >>> wrapped_records(b'{"data": [{"path_id": 4, "scan": "s", "path": ["a"]}]}')
    ('data', 'R2R records')
    >>> wrapped_records(b'{"version": 2, "split": "val", "data": [{"path_id": 4, "scan": "s", "path": ["a"]}]}')
    ('data', 'R2R records')
    >>> wrapped_records(b'{"7": [{"position": [0, 0, 0]}]}'), wrapped_records(b'{"path_id": 4, "scan": "s", "path": ["a"]}')
    (None, None)
    """
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text[:1] != b"{":
        return None
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        candidates = list(whole.items())
    else:
        m = _KEY.match(text)
        rest = text[m.end() :] if m is not None else b""
        if m is None or not _LIST_OF_OBJECTS.match(rest):
            return None
        candidates = [(m.group(1).decode("utf-8", "replace"), [_first_value(rest[rest.index(b"{") :])])]
    for key, value in candidates:
        if key == "episodes" or _INTEGER_KEY.fullmatch(key) or not isinstance(value, list) or not value:
            continue
        item = value[0]
        for keys, what in _RECORDS if isinstance(item, dict) else ():
            if all(k in item for k in keys):
                return key, what
    return None


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
