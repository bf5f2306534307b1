"""Columnar batches of predictions and reference paths: how scoring moves a million episodes cheaply.

A prediction or a reference path travels as one row of a batch of numpy arrays, and its path as
global viewpoint numbers (int32, see `Vocabulary`) in one flat array with offsets, never as a Python
dict with a list of 32-character viewpoint ids. Files are read in chunks of lines (`json_chunks`). A
chunk of predictions in the R2R submission layout, or of R2R-style dataset records, is decoded by
msgspec straight into checked columns (`submission_chunk`, `reference_chunk`); any other chunk is
parsed with orjson and checked in bulk, and the records that do not pass the bulk check go through
the same record-by-record parser as before (`prediction`, `validate_record`), so every dead letter
keeps its exact stage, label and reason. A large JSON Lines file can be planned as byte ranges
(`plan_line_ranges`) that separate workers read (`json_line_range`) with the chunks, item numbers
and line numbers of a whole-file read.

    vocab = Vocabulary.load("connectivity")
    with open("preds.jsonl", "rb") as f:
        for start, items, strict in json_chunks(f, "preds.jsonl", "predictions"):
            batch, errors, unknown_ids = prediction_batch(items, start, "preds.jsonl", "agent", 0, vocab, strict)

Exactness notes (kept equal to the whole-file reader `vlnkit.datasets.r2r.json_items`): lines
are split like `str.splitlines` (a chunk holding any other line break falls back to it), blank
lines are skipped without taking an index, a record holding an integer too large for orjson is
re-parsed with the standard `json` module before the record parsers see it, and a line orjson
rejects is re-parsed with `json` (so NaN literals and error messages are the standard library's). A
file that is not JSON Lines from its first line on (a byte-order mark is skipped; an indented object,
a bare value or a broken first line) is handed to the whole-file reader. Two differences remain, both
loud: invalid UTF-8 past the first chunk of a JSON Lines file dead-letters the rest of the file, not
the whole; and a file whose first line is an object but whose lines are mostly broken dead-letters
each broken line, where the whole-file reader refuses the file as one error.

Why one module of ~900 lines: the chunked reader and the batch builders share the exactness rules
above (line splitting, big integers, the fall-back to the record parsers), and they are tested
against the whole-file reader together; split apart, each half would hold half of one contract.
"""

from __future__ import annotations

import gc
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter, itemgetter
from typing import Annotated

import msgspec
import numpy as np
import orjson

from vlnkit.datasets.r2r import RecordError, json_items, validate_record
from vlnkit.datasets.trajectories import prediction
from vlnkit.io.json_text import loads_exact

# Lines are parsed and checked a quarter-megabyte at a time: the objects of a chunk stay in the CPU
# cache through the bulk checks, which run 2x faster than over 8 MB chunks (benchmarks/RESULTS.md).
# The readers gather the small batches into large ones before anything leaves them.
CHUNK_BYTES = 256 << 10
BOM_BYTES = b"\xef\xbb\xbf"
LIST_CHUNK = 2048  # records per bulk check when a JSON list is parsed whole (see CHUNK_BYTES)
# str.splitlines breaks lines at these too; a chunk holding one is split the slow, exact way.
_UNUSUAL_BREAK = re.compile(rb"\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e]|\xc2\x85|\xe2\x80[\xa8\xa9]")
# A JSON integer of 19+ digits may leave the 64-bit range, where orjson returns a float and json an int.
_BIG_INT = re.compile(rb"(?:^|[\[:,])\s*-?[0-9]{19}", re.M)
_DIGITS19 = re.compile(rb"[0-9]{19}")
_CANONICAL = re.compile(r"-?(?:0|[1-9][0-9]{0,17})_(?:0|[1-9][0-9]{0,17})")
_ALL_CANONICAL = re.compile(r"(?:" + _CANONICAL.pattern + r"\n)*")
_NUMBER = {int, float}
_BREAK_BYTES = (b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")
_BREAK_UTF8 = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")


def _unusual_break(chunk: bytes) -> bool:
    """Whether str.splitlines would split the chunk anywhere but at "\n" (substring scans first)."""
    if not any(b in chunk for b in _BREAK_BYTES) and (chunk.isascii() or not any(b in chunk for b in _BREAK_UTF8)):
        return False
    return _UNUSUAL_BREAK.search(chunk) is not None


def _big_int(chunk: bytes) -> bool:
    """Whether the chunk may hold an integer outside 64 bits (a 19-digit run first, then the exact test)."""
    return _DIGITS19.search(chunk) is not None and _BIG_INT.search(chunk) is not None


# ----------------------------------------------------------------------------- viewpoints
class _Index(dict):
    """viewpoint id -> global number; an unknown id gives -1 (so `map` never raises)."""

    def __missing__(self, key):
        return -1


@dataclass
class Vocabulary:
    """Every included viewpoint of every scan, numbered globally (int32), in each scan's file order.

    `scan_of[g]`/`local[g]` give the scan number and the node index within `NavGraph` of global
    viewpoint g, so converting a path to a scan's node indices is one numpy gather. An id that is
    not in any scan (or in several) maps to -1 and is resolved by string when scored.

        >>> v = Vocabulary(["s1", "s2"], [["a", "b"], ["c"]])
        >>> v.numbers(["c", "a", "zz"]).tolist(), int(v.local[2]), int(v.scan_of[2])
        ([2, 0, -1], 0, 1)
    """

    scans: list[str]
    viewpoints: list[list[str]]
    index: _Index = field(init=False, repr=False)

    def __post_init__(self) -> None:
        flat = list(chain.from_iterable(self.viewpoints))
        counts = Counter(flat)
        self.strings = np.asarray(flat, dtype=object)
        self.scan_of = np.repeat(np.arange(len(self.scans), dtype=np.int32), [len(v) for v in self.viewpoints])
        self.local = np.concatenate(
            [np.arange(len(v), dtype=np.int32) for v in self.viewpoints] or [np.zeros(0, np.int32)]
        )
        self.index = _Index((v, g) for g, v in enumerate(flat) if counts[v] == 1)
        self.scan_ids = {s: n for n, s in enumerate(self.scans)}

    def numbers(self, viewpoints: list[str]) -> np.ndarray:
        return np.fromiter(map(self.index.__getitem__, viewpoints), dtype=np.int32, count=len(viewpoints))

    @classmethod
    def load(cls, connectivity_dir: str) -> Vocabulary:
        """Read the included viewpoint ids of every `<scan>_connectivity.json` in the folder.

        A file that cannot be read is left out: its scan's graph fails to load when scored and
        the predictions on it are dead-lettered with that error, as before.
        """
        from vlnkit.io import fileio
        from vlnkit.navigation.graph import connectivity_path, list_scans

        scans, viewpoints = [], []
        for scan in list_scans(connectivity_dir):
            try:
                entries = loads_exact(fileio.read_bytes(connectivity_path(connectivity_dir, scan)))
                ids = [str(e["image_id"]) for e in entries if bool(e["included"])]
            except Exception:  # noqa: BLE001 -- the graph store reports the real error per scan
                continue
            scans.append(scan)
            viewpoints.append(ids)
        return cls(scans, viewpoints)


# ----------------------------------------------------------------------------- paths
@dataclass
class Paths:
    """Variable-length paths of global viewpoint numbers: flat int32 values with int64 offsets.

    `strings` keeps the viewpoint ids of the rows holding an id the vocabulary could not number
    (-1), so those rows can still be resolved (or reported) by string.
    """

    offsets: np.ndarray
    values: np.ndarray
    strings: dict[int, list[str]] = field(default_factory=dict)

    @classmethod
    def from_lists(cls, paths: list[list[str]], vocab: Vocabulary) -> Paths:
        lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
        return cls.from_flat(lengths, list(chain.from_iterable(paths)), vocab)

    @classmethod
    def from_flat(cls, lengths: np.ndarray, flat: list[str], vocab: Vocabulary) -> Paths:
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        values = vocab.numbers(flat)
        strings = {}
        if (values < 0).any():
            rows = np.unique(np.searchsorted(offsets, np.flatnonzero(values < 0), side="right") - 1)
            for r in rows.tolist():
                strings[r] = flat[offsets[r] : offsets[r + 1]]
        return cls(offsets, values, strings)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row_of_value(self) -> np.ndarray:
        return np.repeat(np.arange(len(self), dtype=np.int64), self.lengths)

    def take(self, rows: np.ndarray) -> Paths:
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        starts = np.repeat(self.offsets[rows] - offsets[:-1], lengths)
        values = self.values[np.arange(offsets[-1], dtype=np.int64) + starts]
        strings = {}
        if self.strings:
            for new, old in enumerate(rows.tolist()):
                if old in self.strings:
                    strings[new] = self.strings[old]
        return Paths(offsets, values, strings)

    @classmethod
    def concat(cls, parts: list[Paths]) -> Paths:
        if not parts:
            return cls(np.zeros(1, np.int64), np.zeros(0, np.int32))
        lengths = np.concatenate([p.lengths for p in parts])
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        strings, base = {}, 0
        for p in parts:
            strings.update({base + r: s for r, s in p.strings.items()})
            base += len(p)
        return cls(offsets, np.concatenate([p.values for p in parts]), strings)

    def viewpoints(self, row: int, vocab: Vocabulary) -> list[str]:
        """The viewpoint ids of one row (for the rare rows resolved by string)."""
        if row in self.strings:
            return self.strings[row]
        return vocab.strings[self.values[self.offsets[row] : self.offsets[row + 1]]].tolist()


def _take_columns(obj, rows, names):
    return {n: getattr(obj, n)[rows] for n in names}


@dataclass
class PredictionBatch:
    """Predictions of one agent: `rank` (file number within the agent), `index` (record number in
    its file), the instr_id as (`path_id`, `k`) and the trajectory as `paths` (global numbers)."""

    agent: str
    rank: np.ndarray
    index: np.ndarray
    path_id: np.ndarray
    k: np.ndarray
    paths: Paths

    COLUMNS = ("rank", "index", "path_id", "k")

    def __len__(self) -> int:
        return len(self.index)

    def take(self, rows) -> PredictionBatch:
        return PredictionBatch(self.agent, **_take_columns(self, rows, self.COLUMNS), paths=self.paths.take(rows))

    @classmethod
    def concat(cls, agent: str, parts: list[PredictionBatch]) -> PredictionBatch:
        cols = {n: np.concatenate([getattr(p, n) for p in parts] or [np.zeros(0, np.int64)]) for n in cls.COLUMNS}
        return cls(agent, **cols, paths=Paths.concat([p.paths for p in parts]))


@dataclass
class ReferenceBatch:
    """Reference paths: `rank` (dataset file number), `index` (record number), `path_id`, `scan`
    (numpy unicode), `instructions` (how many episodes the path has) and `paths`."""

    rank: np.ndarray
    index: np.ndarray
    path_id: np.ndarray
    scan: np.ndarray
    instructions: np.ndarray
    paths: Paths

    COLUMNS = ("rank", "index", "path_id", "scan", "instructions")

    def __len__(self) -> int:
        return len(self.index)

    def take(self, rows) -> ReferenceBatch:
        return ReferenceBatch(**_take_columns(self, rows, self.COLUMNS), paths=self.paths.take(rows))

    @classmethod
    def concat(cls, parts: list[ReferenceBatch]) -> ReferenceBatch:
        empty = {"scan": np.zeros(0, "U1")}
        cols = {
            n: np.concatenate([getattr(p, n) for p in parts]) if parts else empty.get(n, np.zeros(0, np.int64))
            for n in cls.COLUMNS
        }
        return cls(**cols, paths=Paths.concat([p.paths for p in parts]))


# ----------------------------------------------------------------------------- buckets
def bucket_of(path_id: np.ndarray, buckets: int) -> np.ndarray:
    """A stable bucket in [0, buckets) per path_id (Fibonacci hashing; same on every worker).

    >>> bucket_of(np.array([0, 1, 2, 3]), 4).tolist()
    [0, 0, 1, 2]
    """
    h = np.asarray(path_id).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return ((h >> np.uint64(33)) % np.uint64(buckets)).astype(np.int64)


def split_by_bucket(batch, buckets: int) -> Iterator[tuple[int, object]]:
    """(bucket, the batch's rows of that bucket) for each bucket the batch touches."""
    if len(batch) == 0:
        return
    b = bucket_of(batch.path_id, buckets)
    order = np.argsort(b, kind="stable")
    cuts = np.flatnonzero(np.diff(b[order])) + 1
    for rows in np.split(order, cuts):
        yield int(b[rows[0]]), batch.take(rows)


# ----------------------------------------------------------------------------- reading JSON
@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while parsing builds millions of acyclic objects.

    Each generation-0 collection would otherwise rescan every young container: parsing a chunk
    of JSON Lines runs 2-3 times faster without it. Nothing parsed here forms reference cycles.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _Lines(list):
    """Items parsed by orjson that keep their raw lines, so one can be re-parsed exactly (`exact_item`)."""

    raw: list[bytes]


def exact_item(items: list, n: int):
    """Item n as the standard json module parses it.

    orjson turns integers beyond 64 bits into floats; the bulk checks never accept such a value
    where it matters (ids must be str or int there), so only records that go to the record-by-
    record parsers are re-parsed, and only when their line holds a 19-digit run.
    """
    raw = getattr(items, "raw", None)
    if raw is not None and _DIGITS19.search(raw[n]):
        return json.loads(raw[n])
    return items[n]


def _orjson_lines(lines: list[bytes]) -> _Lines | None:
    """Every line parsed by orjson (keeping the raw lines), or None if orjson refuses one."""
    try:
        with gc_paused():
            items = _Lines(map(orjson.loads, lines))
    except orjson.JSONDecodeError:
        return None
    items.raw = lines
    return items


def _parse_lines(chunk: bytes, first_lineno: int, source: str) -> tuple[list, bool]:
    """(objects or RecordErrors of the chunk's non-blank lines, whether orjson parsed them all)."""
    unusual = _unusual_break(chunk)
    if not unusual:
        split = chunk.split(b"\n")
        # orjson skips the whitespace around a value: only a line of whitespace alone needs the strip.
        items = _orjson_lines(list(filter(None, split)))
        if items is None:
            items = _orjson_lines(list(filter(None, map(bytes.strip, split))))
        if items is not None:
            return items, True
    text = chunk.decode("utf-8")
    items = []
    for lineno, line in enumerate(text.splitlines() if unusual else text.split("\n"), first_lineno):
        if not line.strip():
            continue
        line = line.removesuffix("\r")  # as str.splitlines cuts a CRLF line (json's error columns count it)
        try:  # a big integer goes to json directly: orjson would turn it into a float
            items.append(json.loads(line) if _big_int(line.encode()) else loads_exact(line))
        except ValueError as exc:
            items.append(RecordError(source, f"line {lineno}", f"invalid JSON ({exc})"))
    return items, False


def _read_first_line(head: bytes, stream, chunk_bytes: int) -> tuple[bytes, bool]:
    """(head extended to hold the file's first non-blank line, whether that line is one JSON object).

    Plain JSON Lines start with an object on their first line; anything else (an indented object, a
    bare value, a broken first line) is left to the whole-file reader, which tells those apart.
    """
    while True:
        text = head.decode("utf-8", errors="replace")
        lines = [line for line in text.splitlines(keepends=True) if line.strip()]
        complete = lines and (lines[0].endswith(("\n", "\r")) or len(lines) > 1)
        if complete:
            break
        more = stream.read(chunk_bytes)
        if not more:
            break
        head += more
    if not lines:
        return head, False
    try:
        return head, isinstance(json.loads(lines[0]), dict)
    except (ValueError, RecursionError):
        return head, False


def _sniff(stream, chunk_bytes: int) -> tuple[bytes, int, str]:
    """(head, its byte offset in the stream, kind) from the start of a stream.

    kind is "list" (a JSON list), "lines" (plain JSON Lines from the first line on: the head holds
    that whole line) or "other" (anything else: the whole-file reader decides). A UTF-8 byte-order
    mark is not content, as for the whole-file reader: the head starts after it.
    """
    head = stream.read(chunk_bytes)
    while 0 < len(head) < len(BOM_BYTES):  # enough bytes to see a byte-order mark
        more = stream.read(chunk_bytes)
        if not more:
            break
        head += more
    offset = len(BOM_BYTES) if head.startswith(BOM_BYTES) else 0
    head = head[offset:]
    while True:  # read on until the first non-blank character says list or lines
        stripped = head[:4096].decode("utf-8", errors="ignore").lstrip()
        more = b"" if stripped else stream.read(chunk_bytes)
        if not more:
            break
        head += more
    if stripped.startswith("["):
        return head, offset, "list"
    head, first_is_object = _read_first_line(head, stream, chunk_bytes)
    return head, offset, "lines" if first_is_object else "other"


def json_chunks(
    stream, source: str, what: str = "records", chunk_bytes: int = CHUNK_BYTES, typed=None
) -> Iterator[tuple[int, list, bool] | RecordError]:
    """(index of the first item, items, strict) per chunk of a JSON list or JSON Lines stream.

    Items are parsed objects, or RecordErrors for broken lines; indices count items as
    `vlnkit.datasets.r2r.json_items` does. `strict` says orjson parsed every item (so every
    number is finite and every integer fits 64 bits: the bulk checks may rely on it). A file that
    cannot be parsed at all yields one RecordError (and nothing else).

    `typed(lines) -> Sized | None` (for example `submission_chunk`) may decode a JSON Lines
    chunk's non-blank lines into something else, one item per line; where it returns None the
    chunk is parsed as above.
    """
    head, _, kind = _sniff(stream, chunk_bytes)
    if kind == "list":
        data = head + stream.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield RecordError(source, "", f"not UTF-8 text ({exc})")
            return
        strict = not _big_int(data)
        try:
            with gc_paused():
                items = orjson.loads(data) if strict else json.loads(text)
        except ValueError:  # orjson.JSONDecodeError is a ValueError: let json decide (and word the error)
            strict = False
            try:
                items = json.loads(text)
            except ValueError as exc:
                yield RecordError(source, "", f"invalid JSON ({exc})")
                return
        if not isinstance(items, list):
            yield RecordError(source, "", f"expected a JSON list of {what}, got {type(items).__name__}")
            return
        for start in range(0, len(items), LIST_CHUNK):
            yield start, items[start : start + LIST_CHUNK], strict
        return
    if kind == "other":
        # Not plain JSON Lines from its first line on (an indented object, a bare value, a broken first
        # line): the whole-file reader decides what the file is, exactly as it does for every job.
        data = head + stream.read()
        for found in json_items(data, source, what):
            if isinstance(found, RecordError) and not found.record:
                yield found
                return
        items = [x if isinstance(x, RecordError) else x[1] for x in json_items(data, source, what)]
        if items:
            yield 0, items, False
        return
    yield from _json_lines(head, lambda: stream.read(chunk_bytes), source, 0, 1, True, typed)


def _json_lines(block: bytes, read, source: str, index: int, lineno: int, first: bool, typed=None):
    """`json_chunks` for JSON Lines from `block` on, then `read()` until it gives b"": chunks of whole lines."""
    rest = b""
    while True:
        data = rest + block
        eof = not block
        if eof:
            chunk, rest = data, b""
        else:
            cut = data.rfind(b"\n") + 1
            chunk, rest = data[:cut], data[cut:]
        if chunk:
            if not chunk.isascii():
                try:
                    chunk.decode("utf-8")
                except UnicodeDecodeError as exc:
                    label = "" if first else f"line {lineno}"
                    yield RecordError(source, label, f"not UTF-8 text ({exc})")
                    return
            unusual = _unusual_break(chunk)
            items = typed(list(filter(None, chunk.split(b"\n")))) if typed is not None and not unusual else None
            strict = items is not None
            if items is None:
                items, strict = _parse_lines(chunk, lineno, source)
            if items:
                yield index, items, strict
            index += len(items)
            lineno += len(chunk.decode("utf-8").splitlines()) if unusual else chunk.count(b"\n")
            first = False
        if eof:
            return
        block = read()


# ----------------------------------------------------------------------------- byte ranges
RANGE_BYTES = 32 << 20
_SPACE_BYTES = np.frombuffer(b" \t\r\n", np.uint8)


@dataclass(frozen=True)
class LineRange:
    """Whole lines of a JSON Lines file, bytes [start, end): its first item's index and first line's number."""

    start: int
    end: int
    index: int
    lineno: int


def _count_lines(block: bytes, cut: int) -> tuple[int, int]:
    """(items, "\\n" count) of the whole lines block[:cut]: items are the lines holding more than whitespace.

    numpy finds the line starts; only a block where some line starts with whitespace (a line that
    may be blank) is counted line by line.
    """
    a = np.frombuffer(block, np.uint8, count=cut)
    breaks = np.flatnonzero(a == 10)
    starts = np.concatenate(([0], breaks + 1))
    starts = starts[starts < cut]
    if np.isin(a[starts], _SPACE_BYTES).any():
        return sum(1 for line in block[:cut].split(b"\n") if line.strip()), len(breaks)
    return len(starts), len(breaks)


def plan_line_ranges(stream, range_bytes: int = RANGE_BYTES) -> list[LineRange] | None:
    """Byte ranges of about `range_bytes` of a JSON Lines file, to be read in parallel (`json_line_range`).

    Reading each range gives exactly the chunks `json_chunks` gives for those lines: the plan counts
    the items before each range the way it does, in one pass of numpy and substring scans. None when
    the file is better read whole by `json_chunks`: not plain JSON Lines, not seekable, not valid
    UTF-8, a line break other than "\\n" (where `str.splitlines` rules apply), or too small for two ranges.
    """
    _, offset, kind = _sniff(stream, 1 << 16)
    if kind != "lines" or not getattr(stream, "seekable", lambda: False)():
        return None
    ranges, index, lineno, size = [], 0, 1, range_bytes
    while True:
        stream.seek(offset)
        block = stream.read(size)
        if not block:
            break
        at_end = len(block) < size and not stream.read(1)  # a short read is not always the end
        cut = len(block) if at_end else block.rfind(b"\n") + 1
        if cut == 0:  # one line longer than the range: read more of it
            size *= 2
            continue
        # The checks look at the whole block: its partial last line is checked again with the next range.
        if _unusual_break(block) and _unusual_break(block[:cut]) or not (block.isascii() or _is_utf8(block[:cut])):
            return None
        items, breaks = _count_lines(block, cut)
        ranges.append(LineRange(offset, offset + cut, index, lineno))
        index, lineno, offset, size = index + items, lineno + breaks, offset + cut, range_bytes
    return ranges if len(ranges) > 1 else None


def _is_utf8(chunk: bytes) -> bool:
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def json_line_range(stream, line_range: LineRange, source: str, chunk_bytes: int = CHUNK_BYTES, typed=None):
    """The `json_chunks` chunks of one planned range of a seekable stream (`typed` as there)."""
    stream.seek(line_range.start)
    left = line_range.end - line_range.start

    def read() -> bytes:
        nonlocal left
        block = stream.read(min(chunk_bytes, left)) if left > 0 else b""
        left -= len(block)
        return block

    yield from _json_lines(read(), read, source, line_range.index, line_range.lineno, line_range.index == 0, typed)


# ----------------------------------------------------------------------------- predictions
def canonical_instr_ids(ids: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ok mask, path_id, k) of instr_ids; ok only for the exact text f"{path_id}_{k}" of int64s."""
    if ids and _ALL_CANONICAL.fullmatch("\n".join(ids) + "\n"):
        return np.ones(len(ids), dtype=bool), *_split_canonical(ids)
    matches = np.asarray(list(map(_CANONICAL.fullmatch, ids)), dtype=object)
    ok = np.not_equal(matches, None).astype(bool) if len(ids) else np.zeros(0, dtype=bool)
    pid = np.zeros(len(ids), np.int64)
    k = np.zeros(len(ids), np.int64)
    if ok.any():
        pid[ok], k[ok] = _split_canonical([ids[i] for i in np.flatnonzero(ok).tolist()])
    return ok, pid, k


def _split_canonical(ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(path_id, k) of canonical instr_ids, parsed in one pass."""
    nums = np.fromiter(map(int, "_".join(ids).split("_")), dtype=np.int64, count=2 * len(ids))
    return nums[0::2], nums[1::2]


def _fast_submission(items: list) -> tuple[list[str], np.ndarray, list[str]] | None:
    """(instr_ids, lengths, flat viewpoint ids) when every item is a well-formed prediction in the
    R2R submission layout ([[vp, heading, elevation], ...]) with a canonical instr_id, else None.

    Every check is one C-level pass over the chunk (a map, a join, a type set, a slice): a chunk
    costs a handful of passes over objects still in the CPU cache, not a Python call per entry.
    A chunk that fails any check goes record by record through `prediction` instead.
    """
    try:
        ids = list(map(dict.get, items, repeat("instr_id")))  # TypeError: an item is not an object
        if not _ALL_CANONICAL.fullmatch("\n".join(ids) + "\n"):  # TypeError: an id is not a string
            return None
        trajs = list(map(dict.get, items, repeat("trajectory")))
        entries = list(chain.from_iterable(trajs))  # TypeError: no trajectory, or not a list
        if set(map(len, entries)) != {3}:  # TypeError: an entry is a number or null
            return None
    except TypeError:
        return None
    # Entries need no type pass of their own: a string or object entry (or trajectory) of length 3
    # yields a string where the checks below want a number, and an empty trajectory a zero length.
    lengths = np.fromiter(map(len, trajs), dtype=np.int64, count=len(trajs))
    if lengths.min() < 1:
        return None
    flat = list(chain.from_iterable(entries))
    vps = flat[0::3]
    del flat[0::3]  # headings and elevations remain
    if set(map(type, vps)) != {str} or not all(vps) or not set(map(type, flat)) <= _NUMBER:
        return None
    return ids, lengths, vps


_FINITE = Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)]


class _SubmissionLine(msgspec.Struct):
    """A prediction in the R2R submission layout, decoded and type-checked by msgspec in C.

    Finite numbers only (msgspec also takes JSON integers here, never booleans); unknown keys are
    ignored and a repeated key keeps its last value, as orjson and json do.
    """

    instr_id: str
    trajectory: list[tuple[str, _FINITE, _FINITE]]


_SUBMISSION = msgspec.json.Decoder(_SubmissionLine)


def _decode_each(decoder: msgspec.json.Decoder, lines: list[bytes]) -> list | None:
    """Each line decoded on its own (so a line holding two values, or half of one, fails as it does
    for orjson); None when any line is malformed JSON or holds a value of another type."""
    try:
        return list(map(decoder.decode, lines))
    except msgspec.DecodeError:  # ValidationError (a value of another type) is a DecodeError too
        return None


@dataclass
class SubmissionChunk:
    """Predictions of a chunk of lines in the R2R submission layout, already checked: their
    canonical instr_ids, trajectory lengths and viewpoint ids in order."""

    ids: list[str]
    lengths: np.ndarray
    viewpoints: list[str]

    def __len__(self) -> int:
        return len(self.ids)


def submission_chunk(lines: list[bytes]) -> SubmissionChunk | None:
    """The predictions of JSON Lines `lines` (non-blank), when every line is one well-formed
    prediction in the R2R submission layout with a canonical instr_id; else None.

    msgspec decodes each line into a typed struct, checking the types on the way (no dicts, no
    Python pass per number): reading runs about 2.5 times faster than orjson plus the bulk
    checks. Each line is decoded on its own, so a line holding two values or half of one fails
    as it does for orjson. What it accepts is exactly what `prediction` accepts as
    `r2r_submission` with three numbers per entry; anything else (a chunk with any other line)
    returns None, and the caller parses the chunk the general way, record by record where needed.

        >>> c = submission_chunk([b'{"instr_id": "7_0", "trajectory": [["a", 0.5, 0], ["b", 1, 0]]}'])
        >>> c.ids, c.lengths.tolist(), c.viewpoints
        (['7_0'], [2], ['a', 'b'])
        >>> submission_chunk([b'{"instr_id": "7_0", "trajectory": [["a", true, 0]]}']) is None
        True
    """
    decoded = _decode_each(_SUBMISSION, lines)
    if not decoded:
        return None
    ids = list(map(attrgetter("instr_id"), decoded))
    if not _ALL_CANONICAL.fullmatch("\n".join(ids) + "\n"):
        return None
    trajectories = list(map(attrgetter("trajectory"), decoded))
    lengths = np.fromiter(map(len, trajectories), dtype=np.int64, count=len(trajectories))
    if lengths.min() < 1:
        return None
    viewpoints = list(map(itemgetter(0), chain.from_iterable(trajectories)))
    if not all(viewpoints):
        return None
    return SubmissionChunk(ids, lengths, viewpoints)


def prediction_batch(
    items: list | SubmissionChunk,
    start: int,
    source: str,
    agent: str,
    rank: int,
    vocab: Vocabulary,
    strict: bool = False,
) -> tuple[PredictionBatch, list[RecordError], list[tuple[int, str]]]:
    """A chunk of parsed items (or a `SubmissionChunk`) -> (batch of usable predictions, read errors,
    non-canonical ids).

    Read errors are exactly those of `vlnkit.datasets.trajectories.prediction`. Non-canonical
    ids are (index, instr_id) of valid predictions whose instr_id can match no dataset episode
    (not "<path_id>_<k>"): the caller dead-letters them as unknown.
    """
    index = np.arange(start, start + len(items), dtype=np.int64)
    if isinstance(items, SubmissionChunk):
        fast = items.ids, items.lengths, items.viewpoints
    else:
        with gc_paused():
            fast = _fast_submission(items) if strict else None
    errors: list[RecordError] = []
    if fast is not None:  # every id was checked canonical
        ids, lengths, vps = fast
        keep = index
        ok, (pid, k) = np.ones(len(ids), dtype=bool), _split_canonical(ids)
    else:
        ids, paths, kept, errors = [], [], [], []
        for n, obj in enumerate(items):
            if isinstance(obj, RecordError):
                errors.append(obj)
                continue
            p = prediction(exact_item(items, n), source, start + n)
            if isinstance(p, RecordError):
                errors.append(p)
                continue
            ids.append(p["instr_id"])
            paths.append(p["path"])
            kept.append(start + n)
        keep = np.asarray(kept, dtype=np.int64)
        lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
        vps = list(chain.from_iterable(paths))
        ok, pid, k = canonical_instr_ids(ids)
    unknown = [(int(keep[i]), ids[i]) for i in np.flatnonzero(~ok).tolist()]
    all_paths = Paths.from_flat(lengths, vps, vocab)
    rows = np.flatnonzero(ok)
    paths_ok = all_paths if ok.all() else all_paths.take(rows)
    batch = PredictionBatch(agent, np.full(len(rows), rank, np.int64), keep[rows], pid[rows], k[rows], paths_ok)
    return batch, errors, unknown


def parquet_prediction_items(table_batch) -> list[dict]:
    """Rows of a Parquet record batch with `instr_id` and `path` as prediction objects."""
    ids = table_batch.column("instr_id").to_pylist()
    paths = table_batch.column("path").to_pylist()
    return [{"instr_id": i, "trajectory": p} for i, p in zip(ids, paths)]


# ----------------------------------------------------------------------------- references
def _record_label(obj, index: int) -> str:
    if isinstance(obj, dict) and "path_id" in obj:
        return f"#{index} (path_id={obj['path_id']!r})"
    return f"#{index}"


def _fast_references(items: list):
    """(path_id, scan, instructions, path lengths, flat path) when every item passes
    `validate_record` (checked in bulk, type by type), else None."""
    if not items or set(map(type, items)) != {dict}:
        return None
    scans = list(map(dict.get, items, repeat("scan")))
    ids = list(map(dict.get, items, repeat("path_id")))
    paths = list(map(dict.get, items, repeat("path")))
    headings = list(map(dict.get, items, repeat("heading")))
    ins = list(map(dict.get, items, repeat("instructions")))
    if set(map(type, scans)) != {str} or not all(scans) or set(map(type, ids)) != {int}:
        return None
    if set(map(type, paths)) != {list} or set(map(type, ins)) != {list} or not set(map(type, headings)) <= _NUMBER:
        return None
    distance_types = set(map(type, map(dict.get, items, repeat("distance"))))
    if not distance_types <= _NUMBER | {type(None)}:
        return None
    distances = [o["distance"] for o in items if "distance" in o] if distance_types != {float} else None
    if distances is not None and not set(map(type, distances)) <= _NUMBER:
        return None
    if distances is None:
        distances = list(map(dict.get, items, repeat("distance")))
    if not np.isfinite(np.asarray(headings, dtype=np.float64)).all():
        return None
    distances = np.asarray(distances, dtype=np.float64)
    if not (np.isfinite(distances) & (distances >= 0)).all():  # validate_record: a finite number >= 0
        return None
    lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
    counts = np.fromiter(map(len, ins), dtype=np.int64, count=len(ins))
    if lengths.min() < 1 or counts.min() < 1:
        return None
    flat = list(chain.from_iterable(paths))
    if set(map(type, flat)) != {str} or not all(flat):
        return None
    if set(map(type, chain.from_iterable(ins))) != {str}:
        return None
    try:
        pids = np.fromiter(ids, dtype=np.int64, count=len(ids))
    except OverflowError:
        return None
    return pids, scans, counts, lengths, flat


_DISTANCE = Annotated[float, msgspec.Meta(ge=0, le=sys.float_info.max)]


class _ReferenceLine(msgspec.Struct):
    """An R2R-style dataset record, decoded and type-checked by msgspec in C (unknown keys ignored).

    `distance` may be absent, never null; numbers are finite (JSON integers are taken as numbers,
    booleans never), as `validate_record` wants them.
    """

    path_id: int
    scan: str
    path: list[str]
    heading: _FINITE
    instructions: list[str]
    distance: _DISTANCE | msgspec.UnsetType = msgspec.UNSET


_REFERENCE = msgspec.json.Decoder(_ReferenceLine)


@dataclass
class ReferenceChunk:
    """Dataset records of a chunk of lines, already checked: the columns `reference_batch` builds from."""

    path_id: np.ndarray
    scans: list[str]
    instructions: np.ndarray
    lengths: np.ndarray
    viewpoints: list[str]

    def __len__(self) -> int:
        return len(self.scans)


def reference_chunk(lines: list[bytes]) -> ReferenceChunk | None:
    """The records of JSON Lines `lines` (non-blank), when every line is one record that
    `validate_record` accepts with a path_id inside int64; else None (the caller then parses the
    chunk the general way, where every refusal gets its dead letter).

    The dataset side of `submission_chunk`: msgspec checks the types while decoding, one line at a
    time, and builds no dicts.

        >>> c = reference_chunk([b'{"path_id": 7, "scan": "s", "path": ["a", "b"], "heading": 0, "instructions": ["go"]}'])
        >>> c.path_id.tolist(), c.scans, c.instructions.tolist(), c.lengths.tolist(), c.viewpoints
        ([7], ['s'], [1], [2], ['a', 'b'])
        >>> reference_chunk([b'{"path_id": 7, "scan": "s", "path": ["a"], "heading": 0, "instructions": []}']) is None
        True
    """
    decoded = _decode_each(_REFERENCE, lines)
    if not decoded:
        return None
    scans = list(map(attrgetter("scan"), decoded))
    if not all(scans):
        return None
    try:
        pids = np.fromiter(map(attrgetter("path_id"), decoded), dtype=np.int64, count=len(decoded))
    except OverflowError:  # beyond int64: the record parser words that dead letter
        return None
    paths = list(map(attrgetter("path"), decoded))
    lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
    counts = np.fromiter(map(len, map(attrgetter("instructions"), decoded)), dtype=np.int64, count=len(decoded))
    if lengths.min() < 1 or counts.min() < 1:
        return None
    viewpoints = list(chain.from_iterable(paths))
    if not all(viewpoints):
        return None
    return ReferenceChunk(pids, scans, counts, lengths, viewpoints)


def reference_batch(
    items: list | ReferenceChunk,
    start: int,
    source: str,
    rank: int,
    vocab: Vocabulary,
    parquet: bool = False,
    strict: bool = False,
) -> tuple[ReferenceBatch, list[RecordError]]:
    """A chunk of dataset records (or a `ReferenceChunk`) -> (batch of valid reference paths, RecordErrors).

    Validation is `vlnkit.datasets.r2r.validate_record`, record by record (labels as the JSON
    reader, or `#<index>` for Parquet as the Parquet reader gives them). A path_id outside int64
    is dead-lettered (it cannot be a batch key).
    """
    if isinstance(items, ReferenceChunk):
        fast = items.path_id, items.scans, items.instructions, items.lengths, items.viewpoints
    else:
        with gc_paused():
            fast = _fast_references(items) if strict else None
    if fast is not None:
        pids, scans, counts, lengths, flat = fast
        return (
            ReferenceBatch(
                np.full(len(items), rank, np.int64),
                np.arange(start, start + len(items), dtype=np.int64),
                pids,
                np.asarray(scans, dtype=str),
                counts,
                Paths.from_flat(lengths, flat, vocab),
            ),
            [],
        )
    errors, kept, pids, scans, counts, paths = [], [], [], [], [], []
    for n, obj in enumerate(items):
        obj = exact_item(items, n)
        if isinstance(obj, RecordError):
            errors.append(obj)
            continue
        reason = validate_record(obj)
        if reason is None and not -(2**63) <= obj["path_id"] < 2**63:
            reason = "'path_id' is outside the 64-bit range batches use"
        if reason is not None:
            errors.append(RecordError(source, f"#{start + n}" if parquet else _record_label(obj, start + n), reason))
            continue
        kept.append(start + n)
        pids.append(obj["path_id"])
        scans.append(obj["scan"])
        counts.append(len(obj["instructions"]))
        paths.append(obj["path"])
    batch = ReferenceBatch(
        np.full(len(kept), rank, np.int64),
        np.asarray(kept, np.int64),
        np.asarray(pids, np.int64),
        np.asarray(scans, dtype=str) if scans else np.zeros(0, "U1"),
        np.asarray(counts, np.int64),
        Paths.from_lists(paths, vocab),
    )
    return batch, errors
