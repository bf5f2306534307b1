"""Reading scoring inputs as bucketed columnar batches.

`ReadPredictionBatches`: PBegin -> (bucket, ("p", PredictionBatch)), plus dead letters and totals.
`ReadReferenceBatches`: PBegin -> (bucket, ("r", ReferenceBatch)), plus dead letters.

Each file is read by one DoFn call in chunks of lines (JSON Lines), whole (a JSON list) or by
record batches (Parquet); gzip and bzip2 files are decompressed on the fly (Beam's filesystems
detect them by extension). A chunk becomes a `vlnkit.datasets.episode_batches` batch whose paths
are global viewpoint numbers, split at once by bucket (a stable hash of path_id), so the join
that follows moves a few thousand compact batches, never one element per episode.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.worker_cache import per_worker
from vlnkit.datasets.episode_batches import (
    PredictionBatch,
    ReferenceBatch,
    Vocabulary,
    gc_paused,
    json_chunks,
    parquet_prediction_items,
    prediction_batch,
    reference_batch,
    split_by_bucket,
)
from vlnkit.datasets.trajectories import PREDICTION_COLUMNS, is_parquet, prediction_table
from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError

TOTALS = "totals"
PARQUET_BATCH = 65536
BATCH_ROWS = 32768  # rows gathered from the small parsed chunks before a batch is split by bucket
SEP = "\x1f"  # agent / counter separator in totals keys (never printed)


def worker_vocabulary(connectivity_dir: str) -> Vocabulary:
    """One viewpoint vocabulary per connectivity folder per worker process."""
    return per_worker("vocabulary", connectivity_dir, lambda: Vocabulary.load(connectivity_dir))


def agent_key(agent: str, name: str) -> str:
    """The totals key of one agent's counter."""
    return f"{agent}{SEP}{name}"


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


class _ReadFileBatches(beam.DoFn):
    """Shared by the two file readers: the bucket count, the worker's vocabulary, the two counters."""

    def __init__(self, connectivity_dir: str, buckets: int, namespace: str, read_counter: str):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.buckets = buckets
        self.read = Metrics.counter(namespace, read_counter)
        self.bad = Metrics.counter(namespace, "dead_letter")

    def setup(self):
        self.vocab = worker_vocabulary(self.connectivity_dir)

    def process(self, element):
        # The cyclic collector stays off while a file is read: a chunk's parsed objects form no
        # cycles and are freed by reference counting, but a collection while a chunk is alive
        # would scan every one of them (it cost 3.7 s of a 32 s run on a million predictions).
        with gc_paused():
            yield from self.read_file(element)

    def in_buckets(self, parts: list, concat):
        """The gathered small batches as one batch, split by bucket: (bucket, batch) pairs."""
        yield from split_by_bucket(concat(parts) if len(parts) > 1 else parts[0], self.buckets)


class _ReadPredictionFile(_ReadFileBatches):
    """(agent, rank, path) -> (bucket, ("p", PredictionBatch)); dead letters; per-agent totals."""

    def __init__(self, connectivity_dir: str, buckets: int):
        super().__init__(connectivity_dir, buckets, "score", "predictions_read")

    def _chunks(self, path: str):
        if is_parquet(path):
            table = prediction_table(lambda: _read_parquet_table(path), path)
            if isinstance(table, RecordError):
                yield table
                return
            yield from _table_chunks(table.select(list(PREDICTION_COLUMNS)), parquet_prediction_items, False)
            return
        with fileio.open_read(path) as f:
            yield from json_chunks(f, path, "predictions")

    def read_file(self, element):
        agent, rank, path = element
        read = dead = 0
        parts, rows = [], 0
        concat = lambda ps: PredictionBatch.concat(agent, ps)  # noqa: E731
        try:
            for chunk in self._chunks(path):
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
                    for b, part in self.in_buckets(parts, concat):
                        yield b, ("p", part)
                    parts, rows = [], 0
        except OSError as exc:  # the file itself could not be read
            dead += 1
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read file ({exc})"))
        if parts:
            for b, part in self.in_buckets(parts, concat):
                yield b, ("p", part)
        self.read.inc(read)
        self.bad.inc(dead)
        yield beam.pvalue.TaggedOutput(
            TOTALS, {agent_key(agent, "predictions_read"): read, agent_key(agent, "dead_letters"): dead}
        )


class ReadPredictionBatches(beam.PTransform):
    """Prediction files of several agents -> {"batches": (bucket, ("p", PredictionBatch)),
    "dead_letter": dicts, "totals": per-agent counter dicts}.

    `agents` is [(agent name, [file, ...])]; a file's rank within its agent orders duplicates
    (the first file, then the first record, wins).
    """

    def __init__(self, agents: list[tuple[str, list[str]]], connectivity_dir: str, buckets: int):
        super().__init__()
        self.files = [(agent, rank, path) for agent, paths in agents for rank, path in enumerate(paths)]
        self.connectivity_dir = connectivity_dir
        self.buckets = buckets

    def expand(self, pbegin):
        out = (
            pbegin
            | "Files" >> beam.Create(self.files)
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadChunks"
            >> beam.ParDo(_ReadPredictionFile(self.connectivity_dir, self.buckets)).with_outputs(
                DEAD_LETTER, TOTALS, main="batches"
            )
        )
        return {"batches": out.batches, DEAD_LETTER: out[DEAD_LETTER], TOTALS: out[TOTALS]}


def dataset_ranks(files: list[str]) -> list[tuple[int, str]]:
    """(rank, path): JSON files first, then Parquet, as the record reader orders them."""
    json_files = [p for p in files if not is_parquet(p)]
    return list(enumerate(json_files + [p for p in files if is_parquet(p)]))


class _ReadReferenceFile(_ReadFileBatches):
    """(rank, path) -> (bucket, ("r", ReferenceBatch)); dead letters."""

    def __init__(self, connectivity_dir: str, buckets: int):
        super().__init__(connectivity_dir, buckets, "read", "records")

    def _chunks(self, path: str):
        if is_parquet(path):
            try:
                table = _read_parquet_table(path)
            except Exception as exc:  # unreadable or not Parquet: the file is the dead letter
                yield RecordError(path, "", f"cannot read Parquet ({exc})")
                return
            yield from _table_chunks(table, lambda rb: rb.to_pylist(), True)
            return
        try:
            with fileio.open_read(path) as f:
                yield from json_chunks(f, path, "records")
        except OSError as exc:
            yield RecordError(path, "", f"cannot read file ({exc})")

    def read_file(self, element):
        rank, path = element
        parquet = is_parquet(path)
        parts, rows = [], 0
        for chunk in self._chunks(path):
            if isinstance(chunk, RecordError):
                self.bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, chunk.to_dict())
                continue
            start, items, strict = chunk
            batch, errors = reference_batch(items, start, path, rank, self.vocab, parquet, strict)
            self.bad.inc(len(errors))
            self.read.inc(len(batch))
            for e in errors:
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, e.to_dict())
            if len(batch):
                parts.append(batch)
                rows += len(batch)
            if rows >= BATCH_ROWS:
                for b, part in self.in_buckets(parts, ReferenceBatch.concat):
                    yield b, ("r", part)
                parts, rows = [], 0
        if parts:
            for b, part in self.in_buckets(parts, ReferenceBatch.concat):
                yield b, ("r", part)


class ReadReferenceBatches(beam.PTransform):
    """Dataset files (R2R/R4R JSON or JSON Lines, build_r4r Parquet) -> {"batches": (bucket,
    ("r", ReferenceBatch)), "dead_letter": dicts}. Duplicate path_ids are resolved by the join."""

    def __init__(self, files: list[str], connectivity_dir: str, buckets: int):
        super().__init__()
        self.files = dataset_ranks(files)
        self.connectivity_dir = connectivity_dir
        self.buckets = buckets

    def expand(self, pbegin):
        out = (
            pbegin
            | "Files" >> beam.Create(self.files)
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadChunks"
            >> beam.ParDo(_ReadReferenceFile(self.connectivity_dir, self.buckets)).with_outputs(
                DEAD_LETTER, main="batches"
            )
        )
        return {"batches": out.batches, DEAD_LETTER: out[DEAD_LETTER]}
