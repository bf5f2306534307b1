"""Writing outputs: Parquet shards with a declared schema, single JSON files, the run summary."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import apache_beam as beam
import orjson
import pyarrow as pa
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from transforms.gather import GatherToOne
from transforms.tally import SumDicts
from vlnkit.io import fileio

SHARD_TEMPLATE = "-SSSSS-of-NNNNN"


@dataclass
class _ToArrowTables(beam.DoFn):
    """Lists of record dicts -> pyarrow Tables of about `rows` rows (columnar conversion in C++).

    Input lists may be tiny (one join group), so rows are buffered across the bundle: each
    table becomes one Parquet row group, and row groups should not be tiny. Columns are built
    one at a time (`pa.table` of lists), about twice as fast as `Table.from_pylist` of row dicts.
    """

    schema: pa.Schema
    name: str  # the output's name: the counter of rows written
    rows: int = 16384

    def setup(self):
        self.written = Metrics.counter("write", self.name)

    def start_bundle(self):
        self._buffer = []

    def _table(self):
        rows = self._buffer
        table = pa.table({name: [r[name] for r in rows] for name in self.schema.names}, schema=self.schema)
        self.written.inc(len(rows))
        self._buffer = []
        return table

    def process(self, batch):
        self._buffer.extend(batch)
        if len(self._buffer) >= self.rows:
            yield self._table()

    def finish_bundle(self):
        if self._buffer:
            yield WindowedValue(self._table(), MIN_TIMESTAMP, [GlobalWindow()])


@dataclass
class WriteParquetShards(beam.PTransform):
    """Records (or, with `batched=True`, lists of records) -> `<prefix>-SSSSS-of-NNNNN.parquet`."""

    file_path_prefix: str
    schema: pa.Schema
    num_shards: int = 0
    batched: bool = False

    def expand(self, records):
        batches = records if self.batched else records | "Batch" >> beam.BatchElements(256, 8192)
        return (
            batches
            | "ToTables" >> beam.ParDo(_ToArrowTables(self.schema, self.file_path_prefix.rsplit("/", 1)[-1]))
            | "WriteParquet" >> WriteTables(self.file_path_prefix, self.schema, self.num_shards)
        )


@dataclass
class WriteTables(beam.PTransform):
    """pyarrow Tables -> `<prefix>-SSSSS-of-NNNNN.parquet` (tables are written as they come, no per-row work)."""

    file_path_prefix: str
    schema: pa.Schema
    num_shards: int = 0

    def expand(self, tables):
        return tables | "WriteParquet" >> beam.io.WriteToParquetBatched(
            self.file_path_prefix,
            schema=self.schema,
            codec="snappy",
            file_name_suffix=".parquet",
            num_shards=self.num_shards,
            shard_name_template=SHARD_TEMPLATE,
        )


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
