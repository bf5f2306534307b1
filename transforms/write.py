"""Writing outputs: Parquet shards with a declared schema, single JSON files, the run summary."""

from __future__ import annotations

import uuid

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
from vlnkit.io.schemas import row

SHARD_TEMPLATE = "-SSSSS-of-NNNNN"


class _ToArrowTables(beam.DoFn):
    """Lists of record dicts -> pyarrow Tables of about `rows` rows (columnar conversion in C++).

    Input lists may be tiny (one join group), so rows are buffered across the bundle: each
    table becomes one Parquet row group, and row groups should not be tiny.
    """

    def __init__(self, schema: pa.Schema, name: str, rows: int = 16384):
        super().__init__()
        self.schema = schema
        self.rows = rows
        self.written = Metrics.counter("write", name)

    def start_bundle(self):
        self._buffer = []

    def _table(self):
        table = pa.Table.from_pylist(self._buffer, schema=self.schema)
        self.written.inc(len(self._buffer))
        self._buffer = []
        return table

    def process(self, batch):
        self._buffer.extend(row(self.schema, r) for r in batch)
        if len(self._buffer) >= self.rows:
            yield self._table()

    def finish_bundle(self):
        if self._buffer:
            yield WindowedValue(self._table(), MIN_TIMESTAMP, [GlobalWindow()])


class WriteParquetShards(beam.PTransform):
    """Records (or, with `batched=True`, lists of records) -> `<prefix>-SSSSS-of-NNNNN.parquet`."""

    def __init__(self, file_path_prefix: str, schema: pa.Schema, num_shards: int = 0, batched: bool = False):
        super().__init__()
        self.file_path_prefix = file_path_prefix
        self.schema = schema
        self.num_shards = num_shards
        self.batched = batched

    def expand(self, records):
        batches = records if self.batched else records | "Batch" >> beam.BatchElements(256, 8192)
        return (
            batches
            | "ToTables" >> beam.ParDo(_ToArrowTables(self.schema, self.file_path_prefix.rsplit("/", 1)[-1]))
            | "WriteParquet" >> WriteTables(self.file_path_prefix, self.schema, self.num_shards)
        )


class WriteTables(beam.PTransform):
    """pyarrow Tables -> `<prefix>-SSSSS-of-NNNNN.parquet` (tables are written as they come, no per-row work)."""

    def __init__(self, file_path_prefix: str, schema: pa.Schema, num_shards: int = 0):
        super().__init__()
        self.file_path_prefix = file_path_prefix
        self.schema = schema
        self.num_shards = num_shards

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


class _WriteFragments(beam.DoFn):
    """Serialize a bundle's records into one fragment file; emit one index of (sort key, offset, length)."""

    def __init__(self, temp_dir: str, project, sort_key):
        super().__init__()
        self.temp_dir = temp_dir
        self.project = project
        self.sort_key = sort_key
        self._file = None

    def start_bundle(self):
        self._path = fileio.join(self.temp_dir, f"fragment-{uuid.uuid4().hex}.jsonl")
        self._file = None
        self._offset = 0
        self._index = []

    def process(self, batch):
        if self._file is None:
            self._file = fileio.open_write(self._path)
        for record in batch:
            blob = orjson.dumps(self.project(record), option=orjson.OPT_SORT_KEYS)
            self._file.write(blob)
            self._index.append((self.sort_key(record), self._offset, len(blob)))
            self._offset += len(blob)

    def finish_bundle(self):
        if self._file is None:
            return
        self._file.close()
        self._file = None
        yield WindowedValue((self._path, self._index), MIN_TIMESTAMP, [GlobalWindow()])


class WriteJsonFile(beam.PTransform):
    """Gather records (or, with `batched=True`, lists of records) into one JSON list file, one
    record per line, ordered by `sort_key`.

    Records are serialized where they are made, into per-bundle fragment files next to the
    output; only one small index per bundle (sort keys, offsets, lengths) travels to the single writer,
    which assembles the file in order and removes the fragments. Fragments of a retried
    bundle are never referenced and are removed with the rest.
    `sort_key(record)` is a picklable tuple; `final_key(key, **side)` may refine it with side inputs.
    """

    def __init__(
        self, path: str, project, sort_key, final_key=None, side_inputs: dict | None = None, batched: bool = False
    ):
        super().__init__()
        self.batched = batched
        self.path = path
        self.project = project
        self.sort_key = sort_key
        self.final_key = final_key or (lambda key: key)
        self.side_values = side_inputs or {}

    def expand(self, records):
        path, final_key = self.path, self.final_key
        temp_dir = f"{path}.fragments-{uuid.uuid4().hex[:12]}"

        def write(indexes, **side):
            entries = sorted(
                (final_key(key, **side), frag, offset, length)
                for frag, index in (x for x in indexes if x)
                for key, offset, length in index
            )
            blobs = {frag: fileio.read_bytes(frag) for frag in {e[1] for e in entries}}
            with fileio.open_write(path) as f:
                f.write(b"[\n")
                for n, (_, frag, offset, length) in enumerate(entries):
                    f.write((b",\n" if n else b"") + blobs[frag][offset : offset + length])
                f.write(b"\n]\n" if entries else b"]\n")
            fileio.remove_tree(temp_dir)
            return len(entries)

        batches = records if self.batched else records | "Batch" >> beam.BatchElements(256, 8192)
        keyed = batches | "Serialize" >> beam.ParDo(_WriteFragments(temp_dir, self.project, self.sort_key))
        # Always one group, so an empty input still writes `[]`.
        return keyed | "Gather" >> GatherToOne() | "WriteJson" >> beam.Map(write, **self.side_values)


class WriteSummary(beam.PTransform):
    """Sum {name: number} dicts (one PCollection or several) into totals; write `finish(totals)` as `summary.json`."""

    def __init__(self, path: str, finish, side_inputs: dict | None = None):
        super().__init__()
        self.path = path
        self.finish = finish
        self.side_values = side_inputs or {}

    def expand(self, tallies):
        path, finish = self.path, self.finish

        def write(totals, **side):
            summary = finish(totals, **side)
            write_json(path, summary, indent=True)
            return summary

        if isinstance(tallies, (tuple, list)):
            tallies = tuple(tallies) | "FlattenTallies" >> beam.Flatten()
        return (
            tallies
            | "Totals" >> beam.CombineGlobally(SumDicts())
            | "WriteSummary" >> beam.Map(write, **self.side_values)
        )
