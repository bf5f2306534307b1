"""Reading a JSON list or JSON Lines file in chunks of lines, whole or as byte ranges read in parallel.

`json_chunks` gives (index of the first item, items, strict) per chunk: items are parsed objects, or
RecordErrors for broken lines, numbered as the whole-file reader `vlnkit.datasets.r2r.json_items`
numbers them. A `typed` decoder (for example `vlnkit.datasets.prediction_batches.submission_chunk`)
may decode a chunk's lines straight into checked columns instead. A large JSON Lines file can be
planned as byte ranges (`plan_line_ranges`) that separate workers read (`json_line_range`) with the
chunks, item numbers and line numbers of a whole-file read.

    with open("preds.jsonl", "rb") as f:
        for start, items, strict in json_chunks(f, "preds.jsonl", "predictions"):
            ...

Exactness notes (kept equal to the whole-file reader `vlnkit.datasets.r2r.json_items`): lines
are split like `str.splitlines` (a chunk holding any other line break falls back to it), blank
lines are skipped without taking an index, a record holding an integer too large for orjson is
re-parsed with the standard `json` module before the record parsers see it (`exact_item`), and a
line orjson rejects is re-parsed with `json` (so NaN literals and error messages are the standard
library's). A file that is not JSON Lines from its first line on (a byte-order mark is skipped; an
indented object, a bare value or a broken first line) is handed to the whole-file reader. Two
differences remain, both loud: invalid UTF-8 past the first chunk of a JSON Lines file dead-letters
the rest of the file, not the whole; and a file whose first line is an object but whose lines are
mostly broken dead-letters each broken line, where the whole-file reader refuses the file as one error.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import orjson

from vlnkit.datasets.r2r import RecordError, json_items
from vlnkit.io.json_text import loads_exact

# Lines are parsed and checked a quarter-megabyte at a time: the objects of a chunk stay in the CPU
# cache through the chunk check, which runs 2x faster than over 8 MB chunks (benchmarks/RESULTS.md).
# The readers gather the small batches into large ones before anything leaves them.
CHUNK_BYTES = 256 << 10
BOM_BYTES = b"\xef\xbb\xbf"
LIST_CHUNK = 2048  # records per chunk check when a JSON list is parsed whole (see CHUNK_BYTES)
# str.splitlines breaks lines at these too; a chunk holding one is split the slow, exact way.
_UNUSUAL_BREAK = re.compile(rb"\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e]|\xc2\x85|\xe2\x80[\xa8\xa9]")
# A JSON integer of 19+ digits may leave the 64-bit range, where orjson returns a float and json an int.
_BIG_INT = re.compile(rb"(?:^|[\[:,])\s*-?[0-9]{19}", re.M)
_DIGITS19 = re.compile(rb"[0-9]{19}")
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

    orjson turns integers beyond 64 bits into floats; the chunk checks never accept such a value
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


def first_line(stream, chunk_bytes: int = 1 << 16) -> bytes | None:
    """The first non-blank line of a plain JSON Lines stream (read no further than it), or None for a
    JSON list or anything else (`json_chunks` hands those to the whole-file reader).

    >>> import io
    >>> first_line(io.BytesIO(b'\\n{"a": 1}\\n{"a": 2}\\n')), first_line(io.BytesIO(b'[{"a": 1}]'))
    (b'{"a": 1}', None)
    """
    head, _, kind = _sniff(stream, chunk_bytes)
    if kind != "lines":
        return None
    return next(line for line in head.splitlines() if line.strip())


def json_chunks(
    stream, source: str, what: str = "records", chunk_bytes: int = CHUNK_BYTES, typed=None, scan=None
) -> Iterator[tuple[int, list, bool] | RecordError]:
    """(index of the first item, items, strict) per chunk of a JSON list or JSON Lines stream.

    Items are parsed objects, or RecordErrors for broken lines; indices count items as
    `vlnkit.datasets.r2r.json_items` does. `strict` says orjson parsed every item (so every
    number is finite and every integer fits 64 bits: the chunk checks may rely on it). A file that
    cannot be parsed at all yields one RecordError (and nothing else).

    `typed(lines) -> Sized | None` (for example `submission_chunk`) may decode a JSON Lines
    chunk's non-blank lines into something else, one item per line; where it returns None the
    chunk is parsed as above. `scan(block) -> Sized | None` (a compiled scanner of
    `vlnkit.datasets.line_scan`) goes first, over blocks of SCAN_BYTES of whole lines: where it
    accepts a block, its result is the block's one chunk; where it refuses, the block is read in
    chunks as above, so what a file gives does not depend on whether the scanner read it.
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
    read = lambda: stream.read(chunk_bytes)  # noqa: E731
    fill = lambda view: _fill(stream, view)  # noqa: E731
    yield from _json_lines(head, read, source, 0, 1, True, typed, scan, chunk_bytes, fill)


SCAN_BYTES = 16 << 20  # a compiled scanner reads blocks this large (on threads: `vlnkit.datasets.line_scan`)


class _Stop(Exception):
    """A chunk that ends the file's reading (its text is not UTF-8)."""


def _json_lines(
    block: bytes,
    read,
    source: str,
    index: int,
    lineno: int,
    first: bool,
    typed=None,
    scan=None,
    chunk_bytes=CHUNK_BYTES,
    fill=None,
):
    """`json_chunks` for JSON Lines from `block` on, then `read()` until it gives b"": chunks of whole lines.
    With a scanner, the rest comes from `fill` instead (`_fill`: into the reader's own buffer)."""
    if scan is not None:
        yield from _scanned_lines(block, fill, source, index, lineno, first, typed, scan, chunk_bytes)
        return
    at = _Cursor(index, lineno, first)
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
            yield from _parsed([chunk], source, at, typed)
            if at.stopped:
                return
        if eof:
            return
        block = read()


@dataclass
class _Cursor:
    """Where a JSON Lines read stands: the next item's index and line number, whether an item was read
    yet, and whether a chunk ended the reading (text that is not UTF-8)."""

    index: int
    lineno: int
    first: bool
    stopped: bool = False

    def advance(self, items: int, lines: int) -> None:
        self.index += items
        self.lineno += lines
        self.first = False


def _parsed(chunks, source: str, at: _Cursor, typed):
    """Chunks of whole lines read the general way (`_chunk_items`), from where `at` stands, moving it on:
    (index, items, strict) per chunk, or the RecordError that ends the reading (then `at.stopped`)."""
    for chunk in chunks:
        try:
            items, strict, lines = _chunk_items(chunk, source, at.lineno, at.first, typed)
        except _Stop as stop:
            at.stopped = True
            yield stop.args[0]
            return
        if items:
            yield at.index, items, strict
        at.advance(len(items), lines)


def _scanned_lines(block: bytes, fill, source: str, index: int, lineno: int, first: bool, typed, scan, chunk_bytes):
    """`_json_lines` with a compiled scanner: blocks of whole lines, at most SCAN_BYTES each, go to `scan` as
    buffers (no copy), and a block it refuses is read in chunks of `chunk_bytes` the general way. The
    scanner refuses every line break but "\n" and invalid UTF-8 itself, so a block it accepts needs no
    other check.

    The file comes into one buffer, reused: `fill` puts SCAN_BYTES after the partial last line of the
    block before, which was moved to the front (the buffer grows by doubling, so a small file's stays
    small). A new bytes object per read, appended to the rest, cost two copies of every byte and the
    page faults of fresh memory: 0.1 to 0.3 s of the reading thread on a 330 MB file, against 0.04 to
    0.06 s this way. What is scanned, block by block, is the same either way."""
    at = _Cursor(index, lineno, first)
    buf = bytearray(block)
    have, eof = len(buf), not block  # buf[:have] holds the stream's next bytes
    while True:
        start = 0
        while start < have:
            end = have if eof else buf.rfind(b"\n", start, have) + 1
            if end <= start:  # no whole line yet: read more
                break
            cut = end if end - start <= SCAN_BYTES else (buf.rfind(b"\n", start, start + SCAN_BYTES) + 1 or end)
            with memoryview(buf) as whole, whole[start:cut] as view:
                scanned = scan(view)
                if scanned is not None:
                    if len(scanned):
                        yield at.index, scanned, True
                    at.advance(len(scanned), scanned.newlines)
                else:
                    yield from _parsed(_pieces(bytes(view), chunk_bytes), source, at, typed)
                    if at.stopped:
                        return
            start = cut
        if eof:
            return
        have = have - start
        buf[:have] = buf[start : start + have]
        want = have + SCAN_BYTES
        while have < want:
            if have == len(buf):  # full: twice the room, so a small file never gets a 16 MB buffer
                buf.extend(bytes(min(want, max(2 * len(buf), 1 << 20)) - len(buf)))
            room = min(len(buf), want) - have
            with memoryview(buf) as whole, whole[have : have + room] as free:
                got = fill(free)
            have += got
            if got < room:  # `fill` stops short only at the end
                eof = True
                break


def _fill(stream, view) -> int:
    """Read from `stream` into `view` until it is full or the stream ends (as `stream.read(len(view))`
    would, without a new bytes object): the bytes put there (0: the end)."""
    readinto = getattr(stream, "readinto", None)
    got = 0
    while got < len(view):
        with view[got:] as free:
            if readinto is not None:
                n = readinto(free)
            else:
                data = stream.read(len(free))
                n = len(data)
                free[:n] = data
        if not n:
            break
        got += n
    return got


def _pieces(chunk: bytes, size: int):
    """A chunk of whole lines as pieces of whole lines of about `size` bytes (one piece if it is small)."""
    start = 0
    while start < len(chunk):
        cut = len(chunk) if len(chunk) - start <= size else chunk.rfind(b"\n", start, start + size) + 1
        if cut <= start:  # a line longer than `size`: up to its end
            cut = chunk.find(b"\n", start + size) + 1 or len(chunk)
        yield chunk[start:cut]
        start = cut


def _chunk_items(chunk: bytes, source: str, lineno: int, first: bool, typed) -> tuple[list, bool, int]:
    """(items, strict, line breaks) of a chunk of whole lines; raises _Stop(RecordError) if it is not UTF-8."""
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            label = "" if first else f"line {lineno}"
            raise _Stop(RecordError(source, label, f"not UTF-8 text ({exc})")) from None
    unusual = _unusual_break(chunk)
    items = typed(list(filter(None, chunk.split(b"\n")))) if typed is not None and not unusual else None
    strict = items is not None
    if items is None:
        items, strict = _parse_lines(chunk, lineno, source)
    return items, strict, len(chunk.decode("utf-8").splitlines()) if unusual else chunk.count(b"\n")


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


def json_line_range(stream, line_range: LineRange, source: str, chunk_bytes: int = CHUNK_BYTES, typed=None, scan=None):
    """The `json_chunks` chunks of one planned range of a seekable stream (`typed` and `scan` as there)."""
    stream.seek(line_range.start)
    left = line_range.end - line_range.start
    size = SCAN_BYTES if scan is not None else chunk_bytes

    def read() -> bytes:
        nonlocal left
        block = stream.read(min(size, left)) if left > 0 else b""
        left -= len(block)
        return block

    def fill(view) -> int:
        nonlocal left
        with view[: max(0, min(len(view), left))] as mine:
            got = _fill(stream, mine)
        left -= got
        return got

    first = line_range.index == 0
    head = read()
    yield from _json_lines(
        head, read, source, line_range.index, line_range.lineno, first, typed, scan, chunk_bytes, fill
    )
