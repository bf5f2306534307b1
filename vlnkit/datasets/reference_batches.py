"""Chunks of dataset records -> `ReferenceBatch`es of valid reference paths and the records' dead letters.

A chunk of JSON Lines is decoded by msgspec straight into checked columns (`reference_chunk`); a
chunk of objects parsed by orjson (or Parquet rows, or records handed over by a pipeline) is checked
in one call against the same declaration (`vlnkit.datasets.records.R2RRecord`, or `RxRGuideLine`
for an RxR guide file). A chunk that holds one record those refuse goes record by record through
the kind's `reason`, which words every refusal: a dead letter is the same whichever way its chunk
was read. The format is the file's (`vlnkit.datasets.formats`, by its first record): `FileFormat`
carries it from the first chunk of a file to the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import msgspec
import numpy as np

from vlnkit.datasets.columns import Paths, ReferenceBatch, Vocabulary, encode_languages, flat_paths
from vlnkit.datasets.cvdn import (
    CVDN_FORMAT,
    CVDN_INSTANCE,
    DEFAULT_TARGET_PATH,
    END_PANOS,
    PLANNER_GOAL,
    cvdn_columns,
    cvdn_label,
)
from vlnkit.datasets.formats import R2R, RXR_GUIDE_FORMAT, items_format, line_format
from vlnkit.datasets.json_chunks import exact_item, gc_paused
from vlnkit.datasets.line_scan import ScannedReferences, scan_records
from vlnkit.datasets.r2r import record_label
from vlnkit.datasets.records import R2R_RECORD, RXR_GUIDE, validate_record
from vlnkit.datasets.reverie import REVERIE_FORMAT, REVERIE_RECORD, TARGET_OBJECT, pack_keys, record_reason
from vlnkit.datasets.rxr import rxr_label
from vlnkit.io.dead_letters import RecordError


@dataclass
class ReferenceChunk:
    """Dataset records of a chunk, already checked: the columns `reference_batch` builds from
    (`first_k` -1 and `languages`/`language` for RxR guide lines, see `ReferenceBatch`)."""

    path_id: np.ndarray
    scans: list[str]
    instructions: np.ndarray
    lengths: np.ndarray
    viewpoints: list[str]
    first_k: int = 0
    languages: tuple[str, ...] = ()
    language: np.ndarray | None = None
    extras: dict | None = None  # a task's own columns (REVERIE: the target object)

    def __len__(self) -> int:
        return len(self.scans)


def _reference_columns(records: list | None) -> ReferenceChunk | None:
    """The columns of valid `R2RRecord`s (None for none)."""
    if not records:
        return None
    pids = np.fromiter(map(attrgetter("path_id"), records), dtype=np.int64, count=len(records))
    lengths, flat = flat_paths(list(map(attrgetter("path"), records)))
    counts = np.fromiter(map(len, map(attrgetter("instructions"), records)), dtype=np.int64, count=len(records))
    return ReferenceChunk(pids, list(map(attrgetter("scan"), records)), counts, lengths, flat)


def _guide_columns(lines: list | None) -> ReferenceChunk | None:
    """The columns of valid `RxRGuideLine`s (None for none): one episode per line, keyed by instruction_id."""
    if not lines:
        return None
    ids = np.fromiter(map(attrgetter("instruction_id"), lines), dtype=np.int64, count=len(lines))
    lengths, flat = flat_paths(list(map(attrgetter("path"), lines)))
    languages, codes = encode_languages(list(map(attrgetter("language"), lines)))
    return ReferenceChunk(
        ids,
        list(map(attrgetter("scan"), lines)),
        np.ones(len(lines), np.int64),
        lengths,
        flat,
        first_k=-1,
        languages=languages,
        language=codes,
    )


def _reverie_columns(records: list | None, instruction_set: str = "instructions") -> ReferenceChunk | None:
    """The columns of valid `ReverieRecord`s (None for none, or when one lacks the chosen instruction set):
    keyed by (path_id, objId) packed (`vlnkit.datasets.reverie.pack_keys`), the target object as an extra."""
    if not records:
        return None
    chosen = list(map(attrgetter(instruction_set), records))
    if any(c is msgspec.UNSET for c in chosen):  # a record without the chosen set: worded record by record
        return None
    counts = list(map(len, chosen))
    pids = np.fromiter(map(attrgetter("path_id"), records), dtype=np.int64, count=len(records))
    objects = np.fromiter(map(attrgetter("objId"), records), dtype=np.int64, count=len(records))
    lengths, flat = flat_paths(list(map(attrgetter("path"), records)))
    return ReferenceChunk(
        pack_keys(pids, objects),
        list(map(attrgetter("scan"), records)),
        np.asarray(counts, np.int64),
        lengths,
        flat,
        extras={TARGET_OBJECT: objects},
    )


CVDN_EXTRAS = (PLANNER_GOAL, END_PANOS)


def _cvdn_columns(instances: list | None, target_path: str = DEFAULT_TARGET_PATH) -> ReferenceChunk | None:
    """The columns of valid `CVDNInstance`s (None for none): one episode per instance, keyed by inst_idx (k -1,
    like an RxR instruction_id), its target path as the reference path, the planner's goal and the end panos
    as extras (`vlnkit.datasets.cvdn.cvdn_columns`)."""
    if not instances:
        return None
    c = cvdn_columns(instances, target_path)
    extras = {name: c[name] for name in CVDN_EXTRAS}
    return ReferenceChunk(
        c["inst_idx"], c["scans"], np.ones(len(instances), np.int64), c["lengths"], c["viewpoints"], -1, extras=extras
    )


_COLUMNS = {
    R2R: (R2R_RECORD, _reference_columns),
    RXR_GUIDE_FORMAT: (RXR_GUIDE, _guide_columns),
    REVERIE_FORMAT: (REVERIE_RECORD, _reverie_columns),
    CVDN_FORMAT: (CVDN_INSTANCE, _cvdn_columns),
}


def _columns(fmt: str, records, instruction_set: str, target_path: str) -> ReferenceChunk | None:
    """The chunk columns of records of format `fmt`, with the reading choice that format takes."""
    columns = _COLUMNS[fmt][1]
    if fmt == REVERIE_FORMAT:
        return columns(records, instruction_set)
    if fmt == CVDN_FORMAT:
        return columns(records, target_path)
    return columns(records)


def _with_paths(extras: dict | None, vocab: Vocabulary) -> dict:
    """A chunk's extras as a batch holds them: (lengths, viewpoint ids) pairs become `Paths`."""
    return {n: Paths.from_flat(*c, vocab) if isinstance(c, tuple) else c for n, c in (extras or {}).items()}


def reference_chunk(
    lines: list[bytes], fmt: str = R2R, instruction_set: str = "instructions", target_path: str = DEFAULT_TARGET_PATH
) -> ReferenceChunk | None:
    """The records of JSON Lines `lines` (non-blank), when every line is one valid record of format
    `fmt` ("r2r": `R2RRecord`; "rxr_guide": `RxRGuideLine`); else None (the caller then parses the
    chunk the general way, where every refusal gets its dead letter).

    The dataset side of `submission_chunk`: msgspec checks the types while decoding, one line at a
    time, and builds no dicts.

        >>> c = reference_chunk([b'{"path_id": 7, "scan": "s", "path": ["a", "b"], "heading": 0, "instructions": ["go"]}'])
        >>> c.path_id.tolist(), c.scans, c.instructions.tolist(), c.lengths.tolist(), c.viewpoints
        ([7], ['s'], [1], [2], ['a', 'b'])
        >>> reference_chunk([b'{"path_id": 7, "scan": "s", "path": ["a"], "heading": 0, "instructions": []}']) is None
        True
        >>> g = reference_chunk([b'{"instruction_id": 26, "path_id": 11, "scan": "s", "path": ["a"], "heading": 0, '
        ...                      b'"language": "hi-IN", "instruction": "go"}'], "rxr_guide")
        >>> g.path_id.tolist(), g.first_k, g.languages, g.language.tolist()
        ([26], -1, ('hi-IN',), [0])
    """
    if fmt not in _COLUMNS:
        return None
    return _columns(fmt, _COLUMNS[fmt][0].decode_lines(lines), instruction_set, target_path)


class FileFormat:
    """The record format of one dataset file, decided by its first record and kept for its later chunks.

    Give `typed` to `json_chunks` and `fmt_of(items)` each chunk's items before `reference_batch`. A
    reader of a byte range past a file's start knows the format beforehand (`vlnkit.datasets.formats.file_format`).

        >>> f = FileFormat()
        >>> f.fmt_of([{"instruction_id": 1, "instruction": "go"}]), f.fmt_of([{"instructions": ["go"]}])
        ('rxr_guide', 'rxr_guide')
    """

    def __init__(
        self, fmt: str | None = None, instruction_set: str = "instructions", target_path: str = DEFAULT_TARGET_PATH
    ):
        self.fmt = fmt
        self.instruction_set = instruction_set  # REVERIE's `instrType`
        self.target_path = target_path  # CVDN's: which path is the reference (`vlnkit.datasets.cvdn`)

    def typed(self, lines: list[bytes]) -> ReferenceChunk | None:
        if self.fmt is None and lines:
            self.fmt = line_format(lines[0])
        if self.fmt is None:
            return None
        return reference_chunk(lines, self.fmt, self.instruction_set, self.target_path)

    def scan(self, block: bytes, vocab) -> ScannedReferences | None:
        """A compiled scanner's reading of a block of whole lines (`json_chunks`' `scan`), for R2R records;
        None for any other format (the typed decoder and the general reader take those)."""
        if self.fmt is None:  # from the first line (a longer one than 64 KB is left to the typed decoder)
            first = next((line for line in bytes(block[: 1 << 16]).split(b"\n") if line.strip()), None)
            self.fmt = line_format(first) if first is not None else None
        if self.fmt == REVERIE_FORMAT:
            return scan_records(block, vocab, 2 if self.instruction_set == "instructions_l" else 1)
        return scan_records(block, vocab) if self.fmt == R2R else None

    def fmt_of(self, items) -> str:
        if self.fmt is None:
            self.fmt = items_format(items) if isinstance(items, list) else None
        return self.fmt or R2R


def _key_of(obj, rxr: bool) -> tuple | None:
    """(path_id, first_k) a refused record would have been found by (an RxR line: its instruction_id, k -1),
    when its id field is still a 64-bit integer; None otherwise."""
    value = obj.get("instruction_id" if rxr else "path_id") if isinstance(obj, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
        return (value, -1 if rxr else 0)
    return None


def reference_batch(
    items: list | ReferenceChunk | ScannedReferences,
    start: int,
    source: str,
    rank: int,
    vocab: Vocabulary,
    parquet: bool = False,
    strict: bool = False,
    fmt: str = R2R,
    instruction_set: str = "instructions",
    target_path: str = DEFAULT_TARGET_PATH,
) -> tuple[ReferenceBatch, list[RecordError]]:
    """A chunk of dataset records (or a `ReferenceChunk`) -> (batch of valid reference paths, RecordErrors).

    Validation is `vlnkit.datasets.records.R2RRecord` (`fmt` "r2r") or `RxRGuideLine` ("rxr_guide");
    refusals are worded by the kind's `reason` (labels as the JSON reader gives them, or `#<index>`
    for Parquet as the Parquet reader does). `strict` says every item was parsed by orjson (see
    `json_chunks`), so the chunk may be checked as a whole first.
    """
    kind, columns = _COLUMNS[fmt]
    if isinstance(items, ScannedReferences):  # a compiled scanner's block (R2R records): already numbered
        n = len(items)
        ranks, index = np.full(n, rank, np.int64), np.arange(start, start + n, dtype=np.int64)
        if items.objects is not None:  # REVERIE's records: keyed by (path_id, objId), the target as an extra
            counts = items.instructions_l if instruction_set == "instructions_l" else items.instructions
            keys = pack_keys(items.path_id, items.objects)
            extras = {TARGET_OBJECT: items.objects}
            return ReferenceBatch(ranks, index, keys, items.scans, counts, items.paths, extras=extras), []
        return ReferenceBatch(ranks, index, items.path_id, items.scans, items.instructions, items.paths), []
    if isinstance(items, ReferenceChunk):
        fast = items
    else:
        with gc_paused():
            fast = None
            if strict and items:
                fast = _columns(fmt, kind.convert_all(items), instruction_set, target_path)
    if fast is not None:
        return (
            ReferenceBatch(
                np.full(len(items), rank, np.int64),
                np.arange(start, start + len(items), dtype=np.int64),
                fast.path_id,
                np.asarray(fast.scans, dtype=str),
                fast.instructions,
                Paths.from_flat(fast.lengths, fast.viewpoints, vocab),
                first_k=np.full(len(items), fast.first_k, np.int64),
                language=fast.language,
                languages=fast.languages,
                extras=_with_paths(fast.extras, vocab),
            ),
            [],
        )
    if fmt == CVDN_FORMAT:
        return _cvdn_batch(items, start, source, rank, vocab, parquet, target_path)
    rxr, reverie = fmt == RXR_GUIDE_FORMAT, fmt == REVERIE_FORMAT
    label = rxr_label if rxr else record_label
    errors, kept, pids, scans, counts, paths, tags, objects = [], [], [], [], [], [], [], []
    for n, obj in enumerate(items):
        obj = exact_item(items, n)
        if isinstance(obj, RecordError):
            errors.append(obj)
            continue
        reason = kind.reason(obj) if rxr else record_reason(obj, instruction_set) if reverie else validate_record(obj)
        if reason is not None:
            where = f"#{start + n}" if parquet else label(obj, start + n)
            errors.append(RecordError(source, where, reason, key=_key_of(obj, rxr)))
            continue
        kept.append(start + n)
        pids.append(obj["instruction_id"] if rxr else obj["path_id"])
        scans.append(obj["scan"])
        counts.append(1 if rxr else len(obj[instruction_set if reverie else "instructions"]))
        if reverie:
            objects.append(obj["objId"])
        paths.append(obj["path"])
        if rxr:
            tags.append(obj["language"])
    languages, codes = encode_languages(tags) if rxr else ((), None)
    pid_column = np.asarray(pids, np.int64)
    extras = {}
    if reverie:
        extras = {TARGET_OBJECT: np.asarray(objects, np.int64)}
        pid_column = pack_keys(pid_column, extras[TARGET_OBJECT])
    batch = ReferenceBatch(
        np.full(len(kept), rank, np.int64),
        np.asarray(kept, np.int64),
        pid_column,
        np.asarray(scans, dtype=str) if scans else np.zeros(0, "U1"),
        np.asarray(counts, np.int64),
        Paths.from_lists(paths, vocab),
        first_k=np.full(len(kept), -1 if rxr else 0, np.int64),
        language=codes,
        languages=languages,
        extras=extras,
    )
    return batch, errors


def _cvdn_batch(items, start, source, rank, vocab, parquet, target_path) -> tuple[ReferenceBatch, list[RecordError]]:
    """CVDN instances one by one: a dead letter for each invalid one (worded by `CVDNInstance`), a batch of the rest."""
    errors, kept, valid = [], [], []
    for n, obj in enumerate(items):
        obj = exact_item(items, n)
        if isinstance(obj, RecordError):
            errors.append(obj)
            continue
        reason = CVDN_INSTANCE.reason(obj)
        if reason is not None:
            key = obj.get("inst_idx") if isinstance(obj, dict) else None
            key = (key, -1) if isinstance(key, int) and not isinstance(key, bool) and -(2**63) <= key < 2**63 else None
            errors.append(
                RecordError(source, f"#{start + n}" if parquet else cvdn_label(obj, start + n), reason, key=key)
            )
            continue
        kept.append(start + n)
        valid.append(obj)
    c = _cvdn_columns(valid, target_path)
    if c is None:
        c = ReferenceChunk(np.zeros(0, np.int64), [], np.zeros(0, np.int64), np.zeros(0, np.int64), [], -1, extras={})
        c.extras = {name: (np.zeros(0, np.int64), []) for name in CVDN_EXTRAS}
    batch = ReferenceBatch(
        np.full(len(kept), rank, np.int64),
        np.asarray(kept, np.int64),
        c.path_id,
        np.asarray(c.scans, dtype=str) if c.scans else np.zeros(0, "U1"),
        c.instructions,
        Paths.from_flat(c.lengths, c.viewpoints, vocab),
        first_k=np.full(len(kept), -1, np.int64),
        extras=_with_paths(c.extras, vocab),
    )
    return batch, errors
