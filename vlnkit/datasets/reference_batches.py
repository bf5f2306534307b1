"""Chunks of dataset records -> `ReferenceBatch`es of valid reference paths and the records' dead letters.

A chunk of JSON Lines is decoded by msgspec straight into checked columns (`reference_chunk`); a
chunk of objects parsed by orjson (or Parquet rows, or records handed over by a pipeline) is checked
in one call against the same declaration (`vlnkit.datasets.records.R2RRecord`). A chunk that holds
one record those refuse goes record by record through `vlnkit.datasets.records.validate_record`,
which words every refusal: a dead letter is the same whichever way its chunk was read.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

import numpy as np

from vlnkit.datasets.columns import Paths, ReferenceBatch, Vocabulary
from vlnkit.datasets.json_chunks import exact_item, gc_paused
from vlnkit.datasets.r2r import record_label
from vlnkit.datasets.records import R2R_RECORD, validate_record
from vlnkit.io.dead_letters import RecordError


@dataclass
class ReferenceChunk:
    """Dataset records of a chunk, already checked: the columns `reference_batch` builds from."""

    path_id: np.ndarray
    scans: list[str]
    instructions: np.ndarray
    lengths: np.ndarray
    viewpoints: list[str]

    def __len__(self) -> int:
        return len(self.scans)


def _reference_columns(records: list | None) -> ReferenceChunk | None:
    """The columns of valid `R2RRecord`s (None for none)."""
    if not records:
        return None
    pids = np.fromiter(map(attrgetter("path_id"), records), dtype=np.int64, count=len(records))
    paths = list(map(attrgetter("path"), records))
    lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
    counts = np.fromiter(map(len, map(attrgetter("instructions"), records)), dtype=np.int64, count=len(records))
    return ReferenceChunk(
        pids, list(map(attrgetter("scan"), records)), counts, lengths, list(chain.from_iterable(paths))
    )


def reference_chunk(lines: list[bytes]) -> ReferenceChunk | None:
    """The records of JSON Lines `lines` (non-blank), when every line is one valid `R2RRecord`; else
    None (the caller then parses the chunk the general way, where every refusal gets its dead letter).

    The dataset side of `submission_chunk`: msgspec checks the types while decoding, one line at a
    time, and builds no dicts.

        >>> c = reference_chunk([b'{"path_id": 7, "scan": "s", "path": ["a", "b"], "heading": 0, "instructions": ["go"]}'])
        >>> c.path_id.tolist(), c.scans, c.instructions.tolist(), c.lengths.tolist(), c.viewpoints
        ([7], ['s'], [1], [2], ['a', 'b'])
        >>> reference_chunk([b'{"path_id": 7, "scan": "s", "path": ["a"], "heading": 0, "instructions": []}']) is None
        True
    """
    return _reference_columns(R2R_RECORD.decode_lines(lines))


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

    Validation is `vlnkit.datasets.records.R2RRecord`; refusals are worded by `validate_record`
    (labels as the JSON reader gives them, or `#<index>` for Parquet as the Parquet reader does).
    `strict` says every item was parsed by orjson (see `json_chunks`), so the chunk may be checked
    as a whole first.
    """
    if isinstance(items, ReferenceChunk):
        fast = items
    else:
        with gc_paused():
            fast = _reference_columns(R2R_RECORD.convert_all(items)) if strict and items else None
    if fast is not None:
        return (
            ReferenceBatch(
                np.full(len(items), rank, np.int64),
                np.arange(start, start + len(items), dtype=np.int64),
                fast.path_id,
                np.asarray(fast.scans, dtype=str),
                fast.instructions,
                Paths.from_flat(fast.lengths, fast.viewpoints, vocab),
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
        if reason is not None:
            errors.append(RecordError(source, f"#{start + n}" if parquet else record_label(obj, start + n), reason))
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
