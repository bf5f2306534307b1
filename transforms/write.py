"""Writing outputs: Parquet shards with a declared schema, single JSON files, the run summary."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import apache_beam as beam
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from transforms.coders import BulkCoder  # noqa: F401 -- registers the coder of the declared tables
from transforms.gather import GatherToOne
from transforms.tally import SumDicts
from vlnkit.io import fileio
from vlnkit.io.parquet_encoding import WRITER_OPTIONS, parquet_writer

SHARD = "{prefix}-{index:05d}-of-{count:05d}.parquet"


@dataclass
class _ToArrowTables(beam.DoFn):
    """Lists of record dicts -> pyarrow Tables of about `rows` rows (columnar conversion in C++).

    Input lists may be tiny (one join group), so rows are buffered across the bundle: each
    table becomes one Parquet row group, and row groups should not be tiny. Columns are built
    one at a time (`pa.table` of lists), about twice as fast as `Table.from_pylist` of row dicts.
    """

    schema: pa.Schema
    rows: int = 16384

    def start_bundle(self):
        self._buffer = []

    def _table(self):
        rows = self._buffer
        self._buffer = []
        return pa.table({name: [r[name] for r in rows] for name in self.schema.names}, schema=self.schema)

    def process(self, batch):
        self._buffer.extend(batch)
        if len(self._buffer) >= self.rows:
            yield self._table()

    def finish_bundle(self):
        if self._buffer:
            yield WindowedValue(self._table(), MIN_TIMESTAMP, [GlobalWindow()])


@dataclass
class WriteParquetShards(beam.PTransform):
    """Records (or, with `batched=True`, lists of records) -> `<prefix>-SSSSS-of-NNNNN.parquet` (`WriteTables`)."""

    file_path_prefix: str
    schema: pa.Schema
    num_shards: int = 0
    batched: bool = False

    def expand(self, records):
        batches = records if self.batched else records | "Batch" >> beam.BatchElements(256, 8192)
        return (
            batches
            | "ToTables" >> beam.ParDo(_ToArrowTables(self.schema)).with_output_types(pa.Table)
            | "WriteParquet" >> WriteTables(self.file_path_prefix, self.schema, self.num_shards)
        )


class _WriteTableFiles(beam.DoFn):
    """Tables (or, after a shuffle into shards, (shard, tables)) -> one temporary Parquet file per bundle or
    shard, written on one background thread: while a table is encoded and compressed (Arrow releases the
    GIL), the fused step before this one computes the next. At most one table waits, so memory stays that
    of two tables. Yields (temporary path, rows) when the bundle or shard ends."""

    def __init__(self, prefix: str, schema: pa.Schema):
        super().__init__()
        self.prefix = prefix
        self.schema = schema
        self.rows = Metrics.counter("write", prefix.rsplit("/", 1)[-1])

    def setup(self):
        self._pool = ThreadPoolExecutor(1)

    def teardown(self):
        self._pool.shutdown(wait=True)

    def start_bundle(self):
        self._file = self._writer = self._pending = None
        self._written = 0

    def _write(self, table: pa.Table) -> None:
        if self._writer is None:
            self._path = f"{self.prefix}.tmp-{uuid.uuid4().hex}.parquet"
            self._file = fileio.open_write(self._path)
            self._writer = parquet_writer(self._file, self.schema, table)
        self._writer.write_table(table)

    def _wait(self) -> None:
        if self._pending is not None:
            self._pending.result()  # a failed write fails the bundle here
            self._pending = None

    def process(self, element):
        tables = element[1] if isinstance(element, tuple) else [element]
        for table in tables:
            self._wait()
            self._pending = self._pool.submit(self._write, table)
            self._written += table.num_rows
        if isinstance(element, tuple):  # a shard is one file of its own
            yield from self._close()

    def _close(self):
        self._wait()
        if self._writer is not None:
            self._writer.close()
            self._file.close()
            self.rows.inc(self._written)
            yield self._path, self._written
        self._file = self._writer = None
        self._written = 0

    def finish_bundle(self):
        for found in self._close():
            yield WindowedValue(found, MIN_TIMESTAMP, [GlobalWindow()])


def _name_shards(written: list, prefix: str, schema: pa.Schema, shards: int) -> int:
    """Rename the temporary files to their shard names (in a stable order) and remove every other temporary
    file (of a retried bundle); with no table at all, or fewer files than `shards`, empty files with the
    schema stand for the rest, so a reader always finds the declared shards. Returns the rows written."""
    done = sorted(written)
    count = max(len(done), shards, 1)
    for index, (path, _) in enumerate(done):
        fileio.rename(path, SHARD.format(prefix=prefix, index=index, count=count))
    for index in range(len(done), count):
        with fileio.open_write(SHARD.format(prefix=prefix, index=index, count=count)) as f:
            pq.write_table(schema.empty_table(), f, **WRITER_OPTIONS)
    kept = {path for path, _ in done}
    for path, _ in fileio.match(f"{prefix}.tmp-*.parquet"):
        if path not in kept:
            fileio.remove_tree(path)
    return sum(rows for _, rows in done)


class _ShardKeys(beam.DoFn):
    """Tables -> (shard, table), dealt round the `shards` in turn from a random start per bundle (as Beam's
    file sinks deal records), so shards get about as many tables each."""

    def __init__(self, shards: int):
        super().__init__()
        self.shards = shards

    def start_bundle(self):
        self._next = random.randrange(self.shards)

    def process(self, table):
        yield self._next, table
        self._next = (self._next + 1) % self.shards


@dataclass
class WriteTables(beam.PTransform):
    """pyarrow Tables of `schema` -> `<prefix>-SSSSS-of-NNNNN.parquet`; the PCollection of the rows written.

    Each bundle's tables go into one file, written on a background thread while the step before goes on
    computing the next table (the two steps run fused), with a dictionary only for the columns whose
    values repeat (`vlnkit.io.parquet_encoding`); the files get their shard names once every bundle is
    done. `num_shards` > 0 asks for exactly that many files: the tables are shuffled into as many groups
    first. Against Beam's own Parquet sink on the score job's episode rows: benchmarks/RESULTS.md.
    """

    file_path_prefix: str
    schema: pa.Schema
    num_shards: int = 0

    def expand(self, tables):
        prefix, n = self.file_path_prefix, self.num_shards
        if n:
            tables = tables | "KeyShards" >> beam.ParDo(_ShardKeys(n)) | "GroupShards" >> beam.GroupByKey()
        written = tables | "WriteFiles" >> beam.ParDo(_WriteTableFiles(prefix, self.schema))
        return written | "GatherFiles" >> GatherToOne() | "NameShards" >> beam.Map(_name_shards, prefix, self.schema, n)


def write_json(path: str, obj, indent: bool = False) -> None:
    """Write one JSON document (keys sorted) through Beam-compatible file access.

    orjson keeps multi-hundred-MB datasets fast; its float output is the shortest round-trip
    form, the same as Python's `repr`.
    """
    option = orjson.OPT_SORT_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    with fileio.open_write(path) as f:
        f.write(orjson.dumps(obj, option=option))


@dataclass
class _WriteFragments(beam.DoFn):
    """Serialize a bundle's records into one fragment file; emit its index: (first key, last key, offset, length, records).

    An index entry covers one record, or with `runs=True` one whole input list (a run), written as
    its records joined by `,\n`; `last key` is None for a single record.
    """

    temp_dir: str
    project: Callable
    sort_key: Callable
    runs: bool = False

    def start_bundle(self):
        self._path = fileio.join(self.temp_dir, f"fragment-{uuid.uuid4().hex}.jsonl")
        self._file = None
        self._offset = 0
        self._index = []

    def process(self, batch):
        if not batch:
            return
        blobs = [orjson.dumps(self.project(record), option=orjson.OPT_SORT_KEYS) for record in batch]
        keys = [self.sort_key(record) for record in batch]
        if self.runs and any(a > b for a, b in zip(keys, keys[1:])):
            raise ValueError(f"WriteJsonFile(runs=True): a list is not sorted by its sort key ({keys[:3]}...)")
        if self._file is None:
            self._file = fileio.open_write(self._path)
        if self.runs:
            chunk = b",\n".join(blobs)
            self._index.append((keys[0], keys[-1], self._offset, len(chunk), len(batch)))
            self._offset += len(chunk)
            self._file.write(chunk)
            return
        for key, blob in zip(keys, blobs):
            self._index.append((key, None, self._offset, len(blob), 1))
            self._offset += len(blob)
        self._file.write(b"".join(blobs))

    def finish_bundle(self):
        if self._file is None:
            return
        self._file.close()
        self._file = None
        yield WindowedValue((self._path, self._index), MIN_TIMESTAMP, [GlobalWindow()])


@dataclass
class WriteJsonFile(beam.PTransform):
    """Gather records (or, with `batched=True`, lists of records) into one JSON list file, one
    record per line, ordered by `sort_key`.

    Records are serialized where they are made, into per-bundle fragment files next to the
    output; only one small index per bundle (sort keys, offsets, lengths) travels to the single writer,
    which assembles the file in order and removes the fragments. Fragments of a retried
    bundle are never referenced and are removed with the rest.
    `sort_key(record)` is a picklable tuple; `final_key(key, **side)` may refine it with side inputs
    (it must keep the order of keys that differ only in what it does not refine).

    With `runs=True` (and `batched=True`) each input list must already be sorted by `sort_key`, and
    no two lists may interleave: then the index holds one entry per list, not per record, and
    the file is assembled from whole lists. Both conditions are checked; a violation stops the
    run with an error instead of writing a misordered file.
    """

    path: str
    project: Callable
    sort_key: Callable
    final_key: Callable | None = None  # None: the sort key as it is
    side: dict = field(default_factory=dict)  # side inputs of `final_key`, by keyword
    batched: bool = False
    runs: bool = False

    def __post_init__(self):
        if self.runs and not self.batched:
            raise ValueError("WriteJsonFile: runs=True needs batched=True (a run is an input list)")

    def expand(self, records):
        path, final_key = self.path, self.final_key or _same_key
        temp_dir = f"{path}.fragments-{uuid.uuid4().hex[:12]}"

        def write(indexes, **side):
            entries = sorted(
                (final_key(first, **side), frag, offset, length, last, count)
                for frag, index in (x for x in indexes if x)
                for first, last, offset, length, count in index
            )
            ends = [key if last is None else final_key(last, **side) for key, _, _, _, last, _ in entries]
            for n in range(1, len(entries)):
                if ends[n - 1] > entries[n][0]:
                    fileio.remove_tree(temp_dir)
                    raise ValueError(
                        f"{path}: record lists interleave (one ends at {ends[n - 1]!r}, the next starts at "
                        f"{entries[n][0]!r}); not written"
                    )
            blobs = {frag: memoryview(fileio.read_bytes(frag)) for frag in {e[1] for e in entries}}
            with fileio.open_write(path) as f:
                f.write(b"[\n")
                for start in range(0, len(entries), 4096):  # a few MB per write, not one write per entry
                    part = entries[start : start + 4096]
                    f.write(
                        (b",\n" if start else b"") + b",\n".join(blobs[fr][o : o + n] for _, fr, o, n, _, _ in part)
                    )
                f.write(b"\n]\n" if entries else b"]\n")
            fileio.remove_tree(temp_dir)
            return sum(entry[-1] for entry in entries)

        batches = records if self.batched else records | "Batch" >> beam.BatchElements(256, 8192)
        keyed = batches | "Serialize" >> beam.ParDo(_WriteFragments(temp_dir, self.project, self.sort_key, self.runs))
        # Always one group, so an empty input still writes `[]`.
        return keyed | "Gather" >> GatherToOne() | "WriteJson" >> beam.Map(write, **self.side)


def _same_key(key):
    return key


@dataclass
class WriteSummary(beam.PTransform):
    """Sum {name: number} dicts (one PCollection or several) into totals; write `finish(totals, **side)` as
    `summary.json` (`side`: Beam side inputs by keyword, e.g. `AsSingleton(skills)`)."""

    path: str
    finish: Callable
    side: dict = field(default_factory=dict)

    def expand(self, tallies):
        path, finish = self.path, self.finish

        def write(totals, **side):
            summary = finish(totals, **side)
            write_json(path, summary, indent=True)
            return summary

        if isinstance(tallies, (tuple, list)):
            tallies = tuple(tallies) | "FlattenTallies" >> beam.Flatten()
        totals = tallies | "Totals" >> beam.CombineGlobally(SumDicts()).without_defaults()
        # One Impulse element writes the summary, reading the totals as a side input ({} when nothing
        # was tallied, as the combine's own default would give): one stage fewer than that default.
        return (
            tallies.pipeline
            | "Once" >> beam.Impulse()
            | "WriteSummary"
            >> beam.Map(_write_once, write, totals=beam.pvalue.AsSingleton(totals, default_value={}), **self.side)
        )


def _write_once(_impulse, write, totals, **side):
    return write(totals, **side)
