"""Reading scoring inputs as bucketed columnar batches.

`ReadScoringInputs`: PBegin -> (bucket, ("p", PredictionBatch) | ("r", ReferenceBatch)), plus dead
letters and per-agent totals: prediction files and dataset files read by one step.
`ReadPredictionBatches` and `ReadReferenceBatches` read one kind each.

A plain JSON Lines file is planned as byte ranges of whole lines (`plan_line_ranges`, with the item
and line numbers at which each range starts), and the ranges are spread over the workers; any other
file is one piece, read in chunks of lines, whole (a JSON list) or by record batches (Parquet); gzip
and bzip2 files are decompressed on the fly (Beam's filesystems detect them by extension). When one
process runs every step (`range_bytes=None`), files are read whole without planning. Prediction
lines in the R2R submission layout and dataset lines are decoded by msgspec straight into checked
columns (`submission_chunk`, `reference_chunk`); a dataset file is R2R-format or RxR guide lines,
told apart by its first record (`vlnkit.datasets.rxr`), an RxR follower file is a prediction file
(`InstructionPrediction`). Chunks become `vlnkit.datasets.columns`
batches whose paths are global viewpoint numbers, gathered to BATCH_ROWS rows and split by bucket (a
stable hash of path_id), so the join that follows moves a few thousand compact batches, never one
element per episode. Both kinds go through one read step so the join's shuffle takes them straight
from it (a Flatten of two read steps cost a copy of every batch on the portable runners).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.worker_cache import per_worker
from vlnkit.datasets.columns import PredictionBatch, ReferenceBatch, Vocabulary, split_by_bucket
from vlnkit.datasets.json_chunks import RANGE_BYTES, gc_paused, json_chunks, json_line_range, plan_line_ranges
from vlnkit.datasets.prediction_batches import parquet_prediction_items, prediction_batch, submission_chunk
from vlnkit.datasets.reference_batches import FileFormat, reference_batch
from vlnkit.datasets.rxr import FOLLOWER_AS_DATASET, R2R, RXR_FOLLOWER_FORMAT, file_format
from vlnkit.datasets.trajectories import PREDICTION_COLUMNS, is_parquet, prediction_table
from vlnkit.evaluation.score_summary import agent_key
from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError

TOTALS = "totals"
PARQUET_BATCH = 65536
BATCH_ROWS = 32768  # rows gathered from the small parsed chunks before a batch is split by bucket
COMPRESSED = (".gz", ".bz2")  # read whole: a compressed stream cannot seek to a byte range


def worker_vocabulary(connectivity_dir: str) -> Vocabulary:
    """One viewpoint vocabulary per connectivity folder per worker process."""
    return per_worker("vocabulary", connectivity_dir, lambda: Vocabulary.load(connectivity_dir))


def _read_parquet_table(path: str):
    import pyarrow.parquet as pq

    with fileio.open_read(path) as f:
        return pq.read_table(f)


def _table_chunks(table, to_items, strict: bool):
    """(start, items, strict) per record batch of a Parquet table, like `json_chunks` gives for JSON."""
    start = 0
    for rb in table.to_batches(PARQUET_BATCH):
        yield start, to_items(rb), strict
        start += rb.num_rows


class _PlanRanges(beam.DoFn):
    """(kind, agent, rank, path) -> (kind, agent, rank, path, LineRange or None): a plain JSON Lines
    file as byte ranges that workers read in parallel (`plan_line_ranges`), any other file (Parquet,
    compressed, a JSON list, anything unusual) as one piece read whole. With `range_bytes=None`
    every file is one piece (nothing is read to plan)."""

    def __init__(self, range_bytes: int | None = RANGE_BYTES):
        super().__init__()
        self.range_bytes = range_bytes
        self.ranges = Metrics.counter("read", "file_ranges")

    def process(self, element):
        path = element[-1]
        plan = None
        if self.range_bytes and not is_parquet(path) and not path.endswith(COMPRESSED):
            try:
                with fileio.open_read(path) as f:
                    plan = plan_line_ranges(f, self.range_bytes)
            except OSError:  # read whole: the reader reports it, as for any unreadable file
                pass
        self.ranges.inc(len(plan or [None]))
        for line_range in plan or [None]:
            yield (*element, line_range)


def _json_pieces(path: str, line_range, what: str, typed=None):
    """The `json_chunks` chunks of a whole JSON file, or of one planned range of it."""
    with fileio.open_read(path) as f:
        if line_range is None:
            yield from json_chunks(f, path, what, typed=typed)
        else:
            yield from json_line_range(f, line_range, path, typed=typed)


def _prediction_chunks(path: str, line_range):
    if is_parquet(path):
        table = prediction_table(lambda: _read_parquet_table(path), path)
        if isinstance(table, RecordError):
            yield table
            return
        yield from _table_chunks(table.select(list(PREDICTION_COLUMNS)), parquet_prediction_items, False)
        return
    # Lines in the R2R submission layout are decoded straight into checked columns (`submission_chunk`).
    yield from _json_pieces(path, line_range, "predictions", submission_chunk)


def _reference_chunks(path: str, line_range, fmt: FileFormat):
    """The chunks of a dataset file (or of one range of it); `fmt` learns the file's format from its
    first record (a range past the start reads the file's first line to know it beforehand)."""
    if is_parquet(path):
        try:
            table = _read_parquet_table(path)
        except Exception as exc:  # unreadable or not Parquet: the file is the dead letter
            yield RecordError(path, "", f"cannot read Parquet ({exc})")
            return
        fmt.fmt = R2R  # build_r4r's paths
        yield from _table_chunks(table, lambda rb: rb.to_pylist(), True)
        return
    try:
        if line_range is not None and line_range.index > 0:
            fmt.fmt = file_format(path)
        # Dataset lines are decoded straight into checked columns too (`reference_chunk`).
        yield from _json_pieces(path, line_range, "records", fmt.typed)
    except OSError as exc:
        yield RecordError(path, "", f"cannot read file ({exc})")


class _ReadScoringFile(beam.DoFn):
    """(kind, agent, rank, path, LineRange or None) -> (bucket, (kind, batch)); dead letters; totals.

    kind "p": a prediction file of `agent` (its rank within the agent orders duplicates); kind "r":
    a dataset file (`agent` unused). Counters: score/predictions_read, read/records, */dead_letter.
    """

    def __init__(self, connectivity_dir: str, buckets: int):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.buckets = buckets
        self.predictions_read = Metrics.counter("score", "predictions_read")
        self.predictions_bad = Metrics.counter("score", "dead_letter")
        self.records_read = Metrics.counter("read", "records")
        self.records_bad = Metrics.counter("read", "dead_letter")

    def setup(self):
        self.vocab = worker_vocabulary(self.connectivity_dir)

    def process(self, element):
        # The cyclic collector stays off while a file is read: a chunk's parsed objects form no
        # cycles and are freed by reference counting, but a collection while a chunk is alive
        # would scan every one of them (it cost 3.7 s of a 32 s run on a million predictions).
        with gc_paused():
            if element[0] == "p":
                yield from self._predictions(*element[1:])
            else:
                yield from self._references(*element[2:])

    def _in_buckets(self, kind: str, parts: list, concat):
        """The gathered small batches as one batch, split by bucket: (bucket, (kind, batch)) pairs."""
        for b, part in split_by_bucket(concat(parts) if len(parts) > 1 else parts[0], self.buckets):
            yield b, (kind, part)

    def _predictions(self, agent, rank, path, line_range):
        read = dead = 0
        parts, rows = [], 0
        concat = lambda ps: PredictionBatch.concat(agent, ps)  # noqa: E731
        try:
            for chunk in _prediction_chunks(path, line_range):
                if isinstance(chunk, RecordError):
                    dead += 1
                    yield beam.pvalue.TaggedOutput(DEAD_LETTER, chunk.to_dict())
                    continue
                start, items, strict = chunk
                batch, errors, unknown = prediction_batch(items, start, path, agent, rank, self.vocab, strict)
                for e in errors:
                    yield beam.pvalue.TaggedOutput(DEAD_LETTER, e.to_dict())
                for index, instr_id in unknown:
                    yield beam.pvalue.TaggedOutput(
                        DEAD_LETTER,
                        dead_letter(
                            "match",
                            path,
                            f"#{index} (instr_id={instr_id})",
                            f"unknown instr_id {instr_id!r}: not in the dataset",
                        ),
                    )
                dead += len(errors) + len(unknown)
                read += len(batch) + len(unknown)
                if len(batch):
                    parts.append(batch)
                    rows += len(batch)
                if rows >= BATCH_ROWS:
                    yield from self._in_buckets("p", parts, concat)
                    parts, rows = [], 0
        except OSError as exc:  # the file itself could not be read
            dead += 1
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read file ({exc})"))
        if parts:
            yield from self._in_buckets("p", parts, concat)
        self.predictions_read.inc(read)
        self.predictions_bad.inc(dead)
        yield beam.pvalue.TaggedOutput(
            TOTALS, {agent_key(agent, "predictions_read"): read, agent_key(agent, "dead_letters"): dead}
        )

    def _references(self, rank, path, line_range):
        parquet = is_parquet(path)
        parts, rows = [], 0
        fmt = FileFormat()
        for chunk in _reference_chunks(path, line_range, fmt):
            if isinstance(chunk, RecordError):
                self.records_bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, chunk.to_dict())
                continue
            start, items, strict = chunk
            if fmt.fmt_of(items) == RXR_FOLLOWER_FORMAT:  # refused as a whole, once (by its first range)
                if start == 0:
                    self.records_bad.inc()
                    yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", FOLLOWER_AS_DATASET))
                return
            batch, errors = reference_batch(items, start, path, rank, self.vocab, parquet, strict, fmt.fmt_of(items))
            self.records_bad.inc(len(errors))
            self.records_read.inc(len(batch))
            for e in errors:
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, e.to_dict())
            if len(batch):
                parts.append(batch)
                rows += len(batch)
            if rows >= BATCH_ROWS:
                yield from self._in_buckets("r", parts, ReferenceBatch.concat)
                parts, rows = [], 0
        if parts:
            yield from self._in_buckets("r", parts, ReferenceBatch.concat)


def dataset_ranks(files: list[str]) -> list[tuple[int, str]]:
    """(rank, path): JSON files first, then Parquet, as the record reader orders them."""
    json_files = [p for p in files if not is_parquet(p)]
    return list(enumerate(json_files + [p for p in files if is_parquet(p)]))


class ReadScoringInputs(beam.PTransform):
    """Prediction files of several agents and dataset files -> {"batches": (bucket, ("p",
    PredictionBatch) | ("r", ReferenceBatch)), "dead_letter": dicts, "totals": per-agent counter dicts}.

    `agents` is [(agent name, [file, ...])]; a file's rank within its agent orders duplicates (the
    first file, then the first record, wins). Dataset files are R2R/R4R JSON or JSON Lines, RxR guide
    JSON Lines, or build_r4r Parquet; duplicate path_ids (instruction_ids) among them are resolved by the join. `range_bytes` is
    the size of the byte ranges plain JSON Lines files are read in (`plan_line_ranges`).
    """

    def __init__(
        self,
        agents: list[tuple[str, list[str]]],
        dataset_files: list[str],
        connectivity_dir: str,
        buckets: int,
        range_bytes: int | None = RANGE_BYTES,
    ):
        super().__init__()
        self.range_bytes = range_bytes
        self.files = [("p", agent, rank, path) for agent, paths in agents for rank, path in enumerate(paths)]
        self.files += [("r", "", rank, path) for rank, path in dataset_ranks(dataset_files)]
        self.connectivity_dir = connectivity_dir
        self.buckets = buckets

    def expand(self, pbegin):
        out = (
            pbegin
            | "Files" >> beam.Create(self.files)
            | "SpreadFiles" >> beam.Reshuffle()
            | "PlanRanges" >> beam.ParDo(_PlanRanges(self.range_bytes))
            | "SpreadRanges" >> beam.Reshuffle()
            | "ReadChunks"
            >> beam.ParDo(_ReadScoringFile(self.connectivity_dir, self.buckets)).with_outputs(
                DEAD_LETTER, TOTALS, main="batches"
            )
        )
        return {"batches": out.batches, DEAD_LETTER: out[DEAD_LETTER], TOTALS: out[TOTALS]}


class ReadPredictionBatches(ReadScoringInputs):
    """Prediction files of several agents -> {"batches": (bucket, ("p", PredictionBatch)),
    "dead_letter": dicts, "totals": per-agent counter dicts} (see `ReadScoringInputs`)."""

    def __init__(self, agents: list[tuple[str, list[str]]], connectivity_dir: str, buckets: int):
        super().__init__(agents, [], connectivity_dir, buckets)


class ReadReferenceBatches(ReadScoringInputs):
    """Dataset files (R2R/R4R JSON or JSON Lines, build_r4r Parquet) -> {"batches": (bucket,
    ("r", ReferenceBatch)), "dead_letter": dicts}. Duplicate path_ids are resolved by the join."""

    def __init__(self, files: list[str], connectivity_dir: str, buckets: int):
        super().__init__([], files, connectivity_dir, buckets)

    def expand(self, pbegin):
        out = super().expand(pbegin)
        return {"batches": out["batches"], DEAD_LETTER: out[DEAD_LETTER]}
