"""Compiled scanners for the two JSON Lines layouts read at scale: R2R submission predictions and R2R records.

Why compiled, and why written here rather than taken from a library: the score job reads hundreds of
megabytes of such lines, and everything it keeps from a line is a few integers (the instr_id's path_id
and k, or a record's path_id and instruction count) and the viewpoint ids of a path, which it turns into
global viewpoint numbers (`vlnkit.datasets.columns.Vocabulary`). A JSON library (orjson, msgspec) builds a
Python string per viewpoint id and a dict or struct per line first: 5 million strings and a dictionary
lookup each for a million predictions, most of the time of the job. Arrow's JSON reader cannot type the
R2R submission layout (a list of `[string, number, number]`). These scanners walk the bytes once, check
the grammar as they go and look each viewpoint id up in a hash table of the vocabulary's bytes
(`ByteTable`), on several threads for a large block (`parallel_blocks`).

They are accelerators of the typed decoders, never a second definition of what is valid: a scanner
accepts a block of lines only when every line is, without doubt, one that the typed decoder
(`vlnkit.datasets.records.SUBMISSION` / `R2R_RECORD` through `submission_chunk` / `reference_chunk`)
accepts, and then gives exactly the columns that decoder gives. Anything else (an escape in a viewpoint
id, an unknown key of a prediction holding a value it does not parse, a number beyond 20 digits or a
two-digit exponent, invalid UTF-8, a blank line of spaces, a non-canonical instr_id, ...) makes it return
None for the whole block, and the block is read the general way, where every refusal is worded. The tests
hold the scanners to the typed decoders on generated lines, valid and broken.

    >>> from vlnkit.datasets.columns import Vocabulary
    >>> vocab = Vocabulary(["s"], [["a", "b"]])
    >>> got = scan_submissions(b'{"instr_id": "7_0", "trajectory": [["a", 0.5, 0], ["b", 1, -2e3]]}\\n', vocab)
    >>> got.path_id.tolist(), got.k.tolist(), got.paths.values.tolist()
    ([7], [0], [0, 1])
    >>> scan_submissions(b'{"instr_id": "7_0", "trajectory": [["a", "0.5", 0]]}\\n', vocab) is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.compiled import njit
from vlnkit.datasets.byte_table import ByteTable, lookup
from vlnkit.datasets.json_grammar import (
    _COMMA,
    _LBRACE,
    _LBRACKET,
    _RBRACE,
    _RBRACKET,
    OK,
    REJECT,
    _any_string,
    _canonical_id,
    _integer,
    _key,
    _number,
    _plain_string,
    _skip_value,
    _three_part_id,
    _ws,
)
from vlnkit.parallel import parts, run_in_parallel, thread_count

__all__ = ["ByteTable", "ScannedPredictions", "ScannedReferences", "scan_submissions", "scan_records"]

# ----------------------------------------------------------------------------- the two layouts
# instr_id, trajectory, and REVERIE's object id in the release's spelling and in DUET's (read with parts=3)
_SUBMISSION_KEYS = np.frombuffer(b"instr_idtrajectorypredObjIdpred_objid", np.uint8)
_SUBMISSION_OFFSETS = np.array([0, 8, 18, 27, 37], np.int64)
_NO_OBJECT = np.iinfo(np.int64).min  # `vlnkit.datasets.reverie.NO_OBJECT`
# R2R's keys, then REVERIE's two (read with reverie=1: the target object and the instructions_l variants)
_RECORD_KEYS = np.frombuffer(b"scanpath_idpathheadingdistanceinstructionsobjIdinstructions_l", np.uint8)
_RECORD_OFFSETS = np.array([0, 4, 11, 15, 22, 30, 42, 47, 61], np.int64)


@njit(cache=True, inline="always")
def _line_end(buf, p, end):
    """After a record: white space, then the line's end. The position after the "\n" (or end), or -1."""
    p = _ws(buf, p, end)
    if p == end:
        return p
    return p + 1 if buf[p] == 10 else -1


@njit(cache=True, inline="always")
def _after_item(buf, p, end, closing):
    """After an item of a list or object: (position of the next item, False) after a comma, (position
    after the closing bracket, True), or (-1, True)."""
    p = _ws(buf, p, end)
    if p < end and buf[p] == _COMMA:
        return _ws(buf, p + 1, end), False
    if p < end and buf[p] == closing:
        return p + 1, True
    return -1, True


@njit(cache=True, nogil=True)
def _scan_submissions(
    buf, begin, end, keys, offsets, values, hashes, slots, mask, parts, pid, kk, lengths, vals, starts, objects
):
    """R2R submission lines in buf[begin:end] -> (status, rows, values written, line breaks passed). With
    parts = 3, REVERIE's: instr_ids "<path_id>_<objId>_<k>" and an integer `predObjId` / `pred_objid`
    (the first spelling wins, as `predicted_object`) into `objects` (absent: _NO_OBJECT)."""
    rows = 0
    nv = 0
    newlines = 0
    out = np.zeros(2, np.int64)
    names, name_offsets = _SUBMISSION_KEYS, _SUBMISSION_OFFSETS
    p = begin
    while p < end:
        if buf[p] == 10:  # an empty line: no record, no index
            p += 1
            newlines += 1
            continue
        if rows == len(pid):
            return REJECT, rows, nv, newlines
        starts[rows] = p
        p = _ws(buf, p, end)
        if p >= end or buf[p] != _LBRACE:
            return REJECT, rows, nv, newlines
        p = _ws(buf, p + 1, end)
        seen = 0
        first_value = nv
        closed = False
        objects[rows] = _NO_OBJECT
        while not closed:
            which, p = _key(buf, p, end, names, name_offsets)
            if which < 0 or (which < (4 if parts == 3 else 2) and seen & (1 << which)):
                return REJECT, rows, nv, newlines
            if which < 4:
                seen |= 1 << which
            if which == 0:  # instr_id: a canonical id
                s, q, _ = _plain_string(buf, p, end)
                if s < 0 or not (_three_part_id(buf, s, q, out) if parts == 3 else _canonical_id(buf, s, q, out)):
                    return REJECT, rows, nv, newlines
                pid[rows], kk[rows] = out[0], out[1]
                p = q + 1
            elif (which == 2 or which == 3) and parts == 3:  # an object id: an integer here (else: general path)
                p = _integer(buf, p, end, out)
                if p < 0 or out[0] == _NO_OBJECT:
                    return REJECT, rows, nv, newlines
                if which == 2 or not seen & 4:
                    objects[rows] = out[0]
            elif which == 1:  # trajectory: [[viewpoint, number, number], ...], at least one step
                if p >= end or buf[p] != _LBRACKET:
                    return REJECT, rows, nv, newlines
                p = _ws(buf, p + 1, end)
                steps = 0
                last = False
                while not last:
                    if p >= end or buf[p] != _LBRACKET:
                        return REJECT, rows, nv, newlines
                    s, q, h = _plain_string(buf, _ws(buf, p + 1, end), end)
                    if s < 0 or q == s or nv == len(vals):
                        return REJECT, rows, nv, newlines
                    vals[nv] = lookup(h, buf, s, q, keys, offsets, values, hashes, slots, mask)
                    nv += 1
                    steps += 1
                    p = _ws(buf, q + 1, end)
                    for _angle in range(2):  # heading, elevation
                        if p >= end or buf[p] != _COMMA:
                            return REJECT, rows, nv, newlines
                        p = _number(buf, _ws(buf, p + 1, end), end)
                        if p < 0:
                            return REJECT, rows, nv, newlines
                        p = _ws(buf, p, end)
                    if p >= end or buf[p] != _RBRACKET:
                        return REJECT, rows, nv, newlines
                    p, last = _after_item(buf, p + 1, end, _RBRACKET)
                    if p < 0:
                        return REJECT, rows, nv, newlines
                lengths[rows] = steps
            else:  # another key: ignored by the typed decoder, but it must be valid JSON
                p = _skip_value(buf, p, end)
            if p < 0:
                return REJECT, rows, nv, newlines
            p, closed = _after_item(buf, p, end, _RBRACE)
            if p < 0:
                return REJECT, rows, nv, newlines
        p = _line_end(buf, p, end)
        newlines += p > 0 and buf[p - 1] == 10
        if p < 0 or seen & 3 != 3 or nv == first_value:
            return REJECT, rows, nv, newlines
        rows += 1
    return OK, rows, nv, newlines


@njit(cache=True, nogil=True)
def _scan_records(
    buf, begin, end, keys, offsets, values, hashes, slots, mask, skeys, soffsets, svalues, shashes, sslots, smask,
    reverie, pid, scan, counts, lengths, vals, starts, scan_spans, objects, counts_l,
):  # fmt: skip
    """R2R record lines in buf[begin:end] -> (status, rows, values written, line breaks passed). With
    reverie = 1 (2: `instructions_l` required), REVERIE's (`vlnkit.datasets.reverie.ReverieRecord`): `objId`
    in [0, 2**32) into `objects`, `path_id` in [0, 2**31), the number of `instructions_l` into `counts_l`."""
    rows = 0
    nv = 0
    newlines = 0
    out = np.zeros(2, np.int64)
    names, name_offsets = _RECORD_KEYS, _RECORD_OFFSETS
    p = begin
    while p < end:
        if buf[p] == 10:
            p += 1
            newlines += 1
            continue
        if rows == len(pid):
            return REJECT, rows, nv, newlines
        starts[rows] = p
        p = _ws(buf, p, end)
        if p >= end or buf[p] != _LBRACE:
            return REJECT, rows, nv, newlines
        p = _ws(buf, p + 1, end)
        seen = 0  # a bit per known key
        first_value = nv
        closed = False
        known = 8 if reverie else 6
        counts_l[rows] = 0
        while not closed:
            which, p = _key(buf, p, end, names, name_offsets)
            if which < 0 or (which < known and seen & (1 << which)):
                return REJECT, rows, nv, newlines
            if which < known:
                seen |= 1 << which
            if which == 0:  # scan: a non-empty string
                s, q, h = _plain_string(buf, p, end)
                if s < 0 or q == s:
                    return REJECT, rows, nv, newlines
                scan[rows] = lookup(h, buf, s, q, skeys, soffsets, svalues, shashes, sslots, smask)
                scan_spans[rows, 0], scan_spans[rows, 1] = s, q
                p = q + 1
            elif which == 1:  # path_id: an integer within 64 bits
                p = _integer(buf, p, end, out)
                pid[rows] = out[0]
            elif which == 2:  # path: at least one non-empty viewpoint id
                if p >= end or buf[p] != _LBRACKET:
                    return REJECT, rows, nv, newlines
                p = _ws(buf, p + 1, end)
                n = 0
                last = False
                while not last:
                    s, q, h = _plain_string(buf, p, end)
                    if s < 0 or q == s or nv == len(vals):
                        return REJECT, rows, nv, newlines
                    vals[nv] = lookup(h, buf, s, q, keys, offsets, values, hashes, slots, mask)
                    nv += 1
                    n += 1
                    p, last = _after_item(buf, q + 1, end, _RBRACKET)
                    if p < 0:
                        return REJECT, rows, nv, newlines
                lengths[rows] = n
            elif which == 3:  # heading: a finite number
                p = _number(buf, p, end)
            elif which == 4:  # distance: a finite number >= 0 (a minus sign goes to the general reader)
                p = -1 if p < end and buf[p] == 45 else _number(buf, p, end)
            elif which == 6 and reverie:  # objId: an integer in [0, 2**32)
                p = _integer(buf, p, end, out)
                if p < 0 or out[0] < 0 or out[0] >= (1 << 32):
                    return REJECT, rows, nv, newlines
                objects[rows] = out[0]
            elif which == 5 or (which == 7 and reverie):  # instructions(_l): at least one string
                if p >= end or buf[p] != _LBRACKET:
                    return REJECT, rows, nv, newlines
                p = _ws(buf, p + 1, end)
                n = 0
                last = False
                while not last:
                    p = _any_string(buf, p, end)
                    if p < 0:
                        return REJECT, rows, nv, newlines
                    n += 1
                    p, last = _after_item(buf, p, end, _RBRACKET)
                    if p < 0:
                        return REJECT, rows, nv, newlines
                if which == 5:
                    counts[rows] = n
                else:
                    counts_l[rows] = n
            else:
                p = _skip_value(buf, p, end)
            if p < 0:
                return REJECT, rows, nv, newlines
            p, closed = _after_item(buf, p, end, _RBRACE)
            if p < 0:
                return REJECT, rows, nv, newlines
        p = _line_end(buf, p, end)
        newlines += p > 0 and buf[p - 1] == 10
        need = 0b101111 | (0b1000000 if reverie else 0) | (0b10000000 if reverie == 2 else 0)  # distance optional
        if p < 0 or (seen & need) != need or nv == first_value:
            return REJECT, rows, nv, newlines
        if reverie and (pid[rows] < 0 or pid[rows] >= (1 << 31)):
            return REJECT, rows, nv, newlines
        rows += 1
    return OK, rows, nv, newlines


# ----------------------------------------------------------------------------- Python side
PARALLEL_BYTES = 4 << 20  # a block is cut for threads into pieces of at least this many bytes


@dataclass
class ScannedPredictions:
    """The columns of a block of submission lines, as `submission_chunk` would give them, with the
    trajectories already as global viewpoint numbers (`Paths`)."""

    path_id: np.ndarray
    k: np.ndarray
    paths: object  # vlnkit.datasets.columns.Paths
    newlines: int = 0  # line breaks in the block (the reader numbers lines with them)
    objects: np.ndarray | None = None  # REVERIE's predicted object ids (parts=3)

    def __len__(self) -> int:
        return len(self.path_id)


@dataclass
class ScannedReferences:
    """The columns of a block of R2R record lines, as `reference_chunk` would give them, with the paths
    already as global viewpoint numbers (`Paths`)."""

    path_id: np.ndarray
    scans: np.ndarray  # numpy unicode, one per row
    instructions: np.ndarray
    paths: object  # vlnkit.datasets.columns.Paths
    newlines: int = 0  # line breaks in the block
    objects: np.ndarray | None = None  # REVERIE's target objects (reverie > 0)
    instructions_l: np.ndarray | None = None  # REVERIE: how many instructions_l each record has (0: none)

    def __len__(self) -> int:
        return len(self.path_id)


def vocabulary_tables(vocab) -> tuple[ByteTable, ByteTable]:
    """(viewpoint id -> global number, scan name -> scan number) tables of a `Vocabulary`, built once per
    vocabulary (a worker keeps one). Only ids that number uniquely are in the first, as in `Vocabulary.index`."""
    tables = getattr(vocab, "_byte_tables", None)
    if tables is None:
        tables = (
            ByteTable.of(list(vocab.index), list(vocab.index.values())),
            ByteTable.of(list(vocab.scans), range(len(vocab.scans))),
        )
        vocab._byte_tables = tables
    return tables


def _pieces(buf: np.ndarray) -> list[tuple[int, int]]:
    """(begin, end) pieces of whole lines for the threads that scan `buf` (one piece for a small block)."""
    threads = thread_count(len(buf) * (1 << 24) // PARALLEL_BYTES)
    cuts = [0]
    for first, _ in parts(len(buf), threads)[1:]:
        cut = _after_newline(buf, first)
        if cut > cuts[-1]:
            cuts.append(cut)
    if cuts[-1] != len(buf):
        cuts.append(len(buf))
    return list(zip(cuts[:-1], cuts[1:]))


def _after_newline(buf: np.ndarray, start: int) -> int:
    """The position after the first "\n" at or after `start` (or the end), looked for in growing windows."""
    window = 1 << 16
    while start < len(buf):
        found = np.flatnonzero(buf[start : start + window] == 10)
        if len(found):
            return start + int(found[0]) + 1
        start += window
        window *= 2
    return len(buf)


def _scan(buf: np.ndarray, kernel, make_outputs, fixed_args: tuple) -> list | None:
    """Run `kernel` over the pieces of `buf` (on threads when there are several); None if any piece is refused."""
    pieces = _pieces(buf)
    results: list = [None] * len(pieces)

    def one(n: int) -> None:
        begin, end = pieces[n]
        outputs = make_outputs(end - begin)
        status, rows, nv, newlines = kernel(buf, begin, end, *fixed_args, *outputs)
        results[n] = (status, rows, nv, newlines, outputs)

    run_in_parallel(lambda first, stop: [one(n) for n in range(first, stop)], parts(len(pieces), len(pieces)))
    if any(r[0] != OK for r in results):
        return None
    return [(r[1], r[2], r[4]) for r in results], sum(r[3] for r in results)


def _paths(lengths: np.ndarray, values: np.ndarray, unknown_rows, strings_of):
    from vlnkit.datasets.columns import Paths

    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    strings = {r: strings_of(r) for r in unknown_rows}
    return Paths(offsets, values, strings)


def _unknown_rows(offsets_lengths: np.ndarray, values: np.ndarray) -> list[int]:
    """Rows holding a -1 (an id the vocabulary does not number)."""
    bad = np.flatnonzero(values < 0)
    if not len(bad):
        return []
    offsets = np.zeros(len(offsets_lengths) + 1, np.int64)
    np.cumsum(offsets_lengths, out=offsets[1:])
    return np.unique(np.searchsorted(offsets, bad, side="right") - 1).tolist()


def _line(block, start: int) -> bytes:
    """The line of `block` (bytes or a buffer) that starts at `start`."""
    rest = bytes(memoryview(block)[start:])
    stop = rest.find(b"\n")
    return rest[: stop if stop >= 0 else len(rest)]


def scan_submissions(block: bytes, vocab, parts: int = 2) -> ScannedPredictions | None:
    """The predictions of `block` (whole JSON Lines, "\\n"-separated, no other line break) when every
    non-empty line is certainly a valid `SubmissionLine` with a canonical instr_id; else None. `parts=3`:
    REVERIE's lines (three-part instr_ids, and an integer object id where one is given)."""
    from vlnkit.datasets.records import SUBMISSION

    viewpoints, _ = vocabulary_tables(vocab)
    buf = np.frombuffer(block, np.uint8)

    def outputs(size: int):
        rows = size // 40 + 1  # the shortest valid line, {"instr_id":"0","trajectory":[["a",0,0]]}, has 42 bytes
        return (np.empty(rows, np.int64), np.empty(rows, np.int64), np.empty(rows, np.int64),
                np.empty(size // 9 + 1, np.int32), np.empty(rows, np.int64), np.empty(rows, np.int64))  # fmt: skip

    scanned = _scan(buf, _scan_submissions, outputs, (*viewpoints.args(), parts))
    if scanned is None:
        return None
    found, newlines = scanned
    pid = np.concatenate([o[0][:rows] for rows, _, o in found])
    k = np.concatenate([o[1][:rows] for rows, _, o in found])
    lengths = np.concatenate([o[2][:rows] for rows, _, o in found])
    values = np.concatenate([o[3][:nv] for _, nv, o in found])
    starts = np.concatenate([o[4][:rows] for rows, _, o in found])
    objects = np.concatenate([o[5][:rows] for rows, _, o in found]) if parts == 3 else None

    def strings_of(row: int) -> list[str]:
        line = SUBMISSION.decode_lines([_line(block, int(starts[row]))])[0]
        return [step[0] for step in line.trajectory]

    paths = _paths(lengths, values, _unknown_rows(lengths, values), strings_of)
    return ScannedPredictions(pid, k, paths, newlines, objects)


def scan_records(block: bytes, vocab, reverie: int = 0) -> ScannedReferences | None:
    """The R2R records of `block` (whole JSON Lines, as for `scan_submissions`) when every non-empty line is
    certainly a valid `R2RRecord`; else None. `reverie` = 1 (2: with `instructions_l`): REVERIE's records."""
    from vlnkit.datasets.records import R2R_RECORD

    viewpoints, scans = vocabulary_tables(vocab)
    buf = np.frombuffer(block, np.uint8)

    def outputs(size: int):
        rows = size // 60 + 1  # a valid record line has more than 60 bytes (five keys and their values)
        return (np.empty(rows, np.int64), np.empty(rows, np.int32), np.empty(rows, np.int64),
                np.empty(rows, np.int64), np.empty(size // 4 + 1, np.int32), np.empty(rows, np.int64),
                np.empty((rows, 2), np.int64), np.empty(rows, np.int64), np.empty(rows, np.int64))  # fmt: skip

    scanned = _scan(buf, _scan_records, outputs, (*viewpoints.args(), *scans.args(), reverie))
    if scanned is None:
        return None
    found, newlines = scanned
    cols = [np.concatenate([o[c][:rows] for rows, _, o in found]) for c in (0, 1, 2, 3, 5, 6, 7, 8)]
    pid, scan_no, counts, lengths, starts, spans, objects, counts_l = cols
    values = np.concatenate([o[4][:nv] for _, nv, o in found])
    names = np.asarray(vocab.scans, dtype=str) if vocab.scans else np.zeros(0, "U1")
    known = scan_no >= 0
    scan_names = names[np.where(known, scan_no, 0)] if len(names) else np.zeros(len(pid), "U1")
    if not known.all():
        scan_names = scan_names.astype(object)
        for r in np.flatnonzero(~known).tolist():
            scan_names[r] = bytes(memoryview(block)[spans[r, 0] : spans[r, 1]]).decode("ascii")
        scan_names = scan_names.astype(str)

    def strings_of(row: int) -> list[str]:
        return list(R2R_RECORD.decode_lines([_line(block, int(starts[row]))])[0].path)

    paths = _paths(lengths, values, _unknown_rows(lengths, values), strings_of)
    if reverie:
        return ScannedReferences(pid, scan_names, counts, paths, newlines, objects, counts_l)
    return ScannedReferences(pid, scan_names, counts, paths, newlines)
