"""Reading the score job's input files into columnar batches: predictions of an agent, and reference paths.

`read_predictions(path, agent, rank, vocab)` and `read_references(path, rank, vocab)` read one file (or one
planned byte range of it, `vlnkit.datasets.json_chunks.plan_line_ranges`) and yield `PredictionBatch` /
`ReferenceBatch` pieces and `RecordError`s for what cannot be used, in file order. Plain JSON Lines are
read by the compiled scanners where they can (`vlnkit.datasets.line_scan`), else by the typed decoders,
else record by record; JSON lists and Parquet files whole; gzip and bzip2 on the fly. Whichever way a
record is read, its batch row or its dead letter is the same.

`in_buckets(pieces, buckets)` gathers the small pieces of a file into batches of BATCH_ROWS rows and
splits them by bucket (a stable hash of path_id): what one worker sends to the join.

The rules declared here (and nowhere else):
- a dataset file's rank: JSON files first, then Parquet, each in the order given (`dataset_ranks`); a
  prediction file's rank is its place among its agent's files. Ranks order duplicates (the first file,
  then the first record, wins: `vlnkit.scoring.join`).
- a prediction whose instr_id can match no episode (neither "<path_id>_<k>" nor one integer) is a
  "match" dead letter here: "unknown instr_id ...: not in the dataset", as the join words an id it
  does not find.
- an RxR follower file given as a dataset is refused as a whole, once.

    >>> from vlnkit.datasets.columns import Vocabulary
    >>> import tempfile, os
    >>> vocab = Vocabulary(["s"], [["a", "b"]])
    >>> path = os.path.join(tempfile.mkdtemp(), "p.jsonl")
    >>> _ = open(path, "w").write('{"instr_id": "7_0", "trajectory": [["a", 0, 0]]}\\n{"instr_id": "x"}\\n')
    >>> [type(p).__name__ for p in read_predictions(path, "agent", 0, vocab)]
    ['RecordError', 'PredictionBatch']
"""

from __future__ import annotations

from collections.abc import Iterator

from vlnkit.datasets.buckets import split_by_bucket
from vlnkit.datasets.columns import (
    PredictionBatch,
    ReferenceBatch,
    RefusedPredictions,
    RefusedReferences,
    Vocabulary,
)
from vlnkit.datasets.cvdn import DEFAULT_TARGET_PATH
from vlnkit.datasets.formats import R2R, RXR_FOLLOWER_FORMAT, file_format
from vlnkit.datasets.json_chunks import gc_paused, json_chunks, json_line_range
from vlnkit.datasets.line_scan import scan_submissions
from vlnkit.datasets.prediction_batches import (
    parquet_prediction_items,
    prediction_batch,
    refused_predictions,
    submission_chunk,
)
from vlnkit.datasets.reference_batches import FileFormat, reference_batch
from vlnkit.datasets.reverie import REVERIE_TEST_FORMAT, TEST_SPLIT_REFUSED
from vlnkit.datasets.rxr import FOLLOWER_AS_DATASET
from vlnkit.datasets.trajectories import PREDICTION_COLUMNS, is_parquet, prediction_table
from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError

PARQUET_BATCH = 65536
# Rows gathered from the small parsed chunks before a batch is split by bucket. Every piece then goes
# through the shuffle as one element (encoded, grouped, decoded): 131,072 rows make a quarter of the
# pieces 32,768 do, and a million-prediction score run 0.15 s faster (eight interleaved runs, measured);
# 262,144 is no faster and takes 50 MB more.
BATCH_ROWS = 1 << 17
MATCH = "match"  # the dead-letter stage of a prediction that matches no episode
# Dataset files refused as a whole, by their format (the first record): one dead letter each.
WHOLE_FILE_REFUSALS = {RXR_FOLLOWER_FORMAT: FOLLOWER_AS_DATASET, REVERIE_TEST_FORMAT: TEST_SPLIT_REFUSED}


def dataset_ranks(files: list[str]) -> list[tuple[int, str]]:
    """(rank, path): JSON files first, then Parquet, each in the order given.

    >>> dataset_ranks(["b.parquet", "a.json", "c.jsonl"])
    [(0, 'a.json'), (1, 'c.jsonl'), (2, 'b.parquet')]
    """
    json_files = [p for p in files if not is_parquet(p)]
    return list(enumerate(json_files + [p for p in files if is_parquet(p)]))


def unknown_id(source: str, index: int, instr_id: str) -> RecordError:
    """The dead letter of a prediction whose instr_id is not in the dataset (the one wording of it)."""
    return RecordError(
        source, f"#{index} (instr_id={instr_id})", f"unknown instr_id {instr_id!r}: not in the dataset", MATCH
    )


def _read_parquet(path: str):
    import pyarrow.parquet as pq

    with fileio.open_read(path) as f:
        return pq.read_table(f)


def _table_chunks(table, to_items, strict: bool):
    """(start, items, strict) per record batch of a Parquet table, like `json_chunks` gives for JSON."""
    start = 0
    for rb in table.to_batches(PARQUET_BATCH):
        yield start, to_items(rb), strict
        start += rb.num_rows


def _json_pieces(path: str, line_range, what: str, typed=None, scan=None):
    """The `json_chunks` chunks of a whole JSON file, or of one planned range of it."""
    with fileio.open_read(path) as f:
        if line_range is None:
            yield from json_chunks(f, path, what, typed=typed, scan=scan)
        else:
            yield from json_line_range(f, line_range, path, typed=typed, scan=scan)


def _prediction_chunks(path: str, line_range, vocab: Vocabulary, parts: int = 2):
    if is_parquet(path):
        table = prediction_table(lambda: _read_parquet(path), path)
        if isinstance(table, RecordError):
            yield table
            return
        yield from _table_chunks(table.select(list(PREDICTION_COLUMNS)), parquet_prediction_items, False)
        return
    if parts == 2:
        scan = lambda block: scan_submissions(block, vocab)  # noqa: E731
    else:
        scan = lambda block: scan_submissions(block, vocab, parts)  # noqa: E731
    yield from _json_pieces(path, line_range, "predictions", submission_chunk if parts == 2 else None, scan)


def read_predictions(
    path: str, agent: str, rank: int, vocab: Vocabulary, line_range=None, parts: int = 2
) -> Iterator[PredictionBatch | RecordError]:
    """The usable predictions of one file (or byte range) of `agent`, as batches, and a dead letter for
    every other record: unreadable ("read"), or with an instr_id no dataset holds ("match"). `parts` is the
    task's instr_id form (`vlnkit.scoring.task.Task.id_parts`; 3: REVERIE's)."""
    try:
        # The cyclic collector stays off while a file is read: a chunk's parsed objects form no cycles
        # and are freed by reference counting, but a collection while a chunk is alive would scan every
        # one of them (3.7 s of a 32 s run on a million predictions, measured).
        with gc_paused():
            for chunk in _prediction_chunks(path, line_range, vocab, parts):
                if isinstance(chunk, RecordError):
                    yield chunk
                    continue
                start, items, strict = chunk
                batch, errors, unknown = prediction_batch(items, start, path, agent, rank, vocab, strict, parts)
                yield from errors
                if errors:  # the episodes they name were given a prediction: without a usable one, not missing
                    refused = refused_predictions(agent, errors)
                    if len(refused):
                        yield refused
                for index, instr_id in unknown:
                    yield unknown_id(path, index, instr_id)
                if len(batch):
                    yield batch
    except OSError as exc:  # the file itself could not be read
        yield RecordError(path, "", f"cannot read file ({exc})")


def _reference_chunks(path: str, line_range, fmt: FileFormat, vocab: Vocabulary):
    """The chunks of a dataset file (or of one range of it); `fmt` learns the file's format from its
    first record (a range past the start reads the file's first line to know it beforehand)."""
    if is_parquet(path):
        try:
            table = _read_parquet(path)
        except Exception as exc:  # unreadable or not Parquet: the file is the dead letter
            yield RecordError(path, "", f"cannot read Parquet ({exc})")
            return
        fmt.fmt = R2R  # build_r4r's paths
        yield from _table_chunks(table, lambda rb: rb.to_pylist(), True)
        return
    try:
        if line_range is not None and line_range.index > 0:
            fmt.fmt = file_format(path)
        scan = lambda block: fmt.scan(block, vocab)  # noqa: E731
        yield from _json_pieces(path, line_range, "records", fmt.typed, scan)
    except OSError as exc:
        yield RecordError(path, "", f"cannot read file ({exc})")


def read_references(
    path: str,
    rank: int,
    vocab: Vocabulary,
    line_range=None,
    instruction_set: str = "instructions",
    target_path: str = DEFAULT_TARGET_PATH,
) -> Iterator[ReferenceBatch | RecordError]:
    """The valid reference paths of one dataset file (or byte range), as batches, and a dead letter for
    every other record (with the keys of refused records that still name one: `RefusedReferences`). R2R/R4R
    records, RxR guide lines and REVERIE records are told apart by the file's first record; an RxR follower
    file and a REVERIE test split are refused as a whole (once, by the range that holds its start).
    `instruction_set`: REVERIE's episodes come from `instructions` or `instructions_l`; `target_path`: a
    CVDN instance's reference path is its planner's, its player's or the trusted one (`vlnkit.datasets.cvdn`)."""
    parquet = is_parquet(path)
    fmt = FileFormat(instruction_set=instruction_set, target_path=target_path)
    with gc_paused():
        for chunk in _reference_chunks(path, line_range, fmt, vocab):
            if isinstance(chunk, RecordError):
                yield chunk
                continue
            start, items, strict = chunk
            if fmt.fmt_of(items) in WHOLE_FILE_REFUSALS:
                if start == 0:
                    yield RecordError(path, "", WHOLE_FILE_REFUSALS[fmt.fmt_of(items)])
                return
            batch, errors = reference_batch(
                items, start, path, rank, vocab, parquet, strict, fmt.fmt_of(items), instruction_set, target_path
            )
            yield from errors
            refused = RefusedReferences.of(errors)
            if len(refused):
                yield refused
            if len(batch):
                yield batch


def in_buckets(pieces, buckets: int, rows: int = BATCH_ROWS) -> Iterator[tuple[int, object] | RecordError]:
    """Pieces of one file (batches and RecordErrors) -> (bucket, batch of that bucket's rows), the batches of
    each kind gathered to about `rows` rows first; RecordErrors pass through as they come."""
    parts: dict[type, list] = {}
    counts: dict[type, int] = {}

    def flush(kind):
        found = parts.pop(kind)
        counts.pop(kind)
        batch = found[0] if len(found) == 1 else kind.concat(*_concat_args(found))
        yield from split_by_bucket(batch, buckets)

    for piece in pieces:
        if isinstance(piece, RecordError):
            yield piece
            continue
        kind = type(piece)
        parts.setdefault(kind, []).append(piece)
        counts[kind] = counts.get(kind, 0) + len(piece)
        if counts[kind] >= rows:
            yield from flush(kind)
    for kind in list(parts):
        yield from flush(kind)


def _concat_args(parts: list) -> tuple:
    if isinstance(parts[0], (PredictionBatch, RefusedPredictions)):
        return parts[0].agent, parts
    return (parts,)
