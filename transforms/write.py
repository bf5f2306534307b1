"""Writing outputs: Parquet shards with a declared schema, single JSON files, the run summary."""

from __future__ import annotations

import uuid

import apache_beam as beam
import orjson
import pyarrow as pa
from apache_beam.metrics import Metrics

from transforms.tally import SumDicts
from vlnkit import fileio
from vlnkit.schemas import row

SHARD_TEMPLATE = "-SSSSS-of-NNNNN"


class _ToArrowTable(beam.DoFn):
    """A batch of record dicts -> one pyarrow Table (columnar conversion in C++, not per row)."""

    def __init__(self, schema: pa.Schema, name: str):
        self.schema = schema
        self.written = Metrics.counter("write", name)

    def process(self, batch):
        self.written.inc(len(batch))
        yield pa.Table.from_pylist([row(self.schema, r) for r in batch], schema=self.schema)


class WriteParquetShards(beam.PTransform):
    """Records -> `<prefix>-SSSSS-of-NNNNN.parquet` with the given pyarrow schema."""

    def __init__(self, file_path_prefix: str, schema: pa.Schema, num_shards: int = 0):
        super().__init__()
        self.file_path_prefix = file_path_prefix
        self.schema = schema
        self.num_shards = num_shards

    def expand(self, records):
        return (
            records
            | "Batch" >> beam.BatchElements(min_batch_size=256, max_batch_size=8192)
            | "ToTable" >> beam.ParDo(_ToArrowTable(self.schema, self.file_path_prefix.rsplit("/", 1)[-1]))
            | "WriteParquet"
            >> beam.io.WriteToParquetBatched(
                self.file_path_prefix,
                schema=self.schema,
                codec="snappy",
                file_name_suffix=".parquet",
                num_shards=self.num_shards,
                shard_name_template=SHARD_TEMPLATE,
            )
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
    """Serialize records into a per-bundle fragment file; emit only (sort key, fragment, offset, length)."""

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

    def process(self, record):
        if self._file is None:
            self._file = fileio.open_write(self._path)
        blob = orjson.dumps(self.project(record), option=orjson.OPT_SORT_KEYS)
        self._file.write(blob)
        yield 0, (self.sort_key(record), self._path, self._offset, len(blob))
        self._offset += len(blob)

    def finish_bundle(self):
        if self._file is not None:
            self._file.close()
            self._file = None


class WriteJsonFile(beam.PTransform):
    """Gather a PCollection into one JSON list file, one record per line, ordered by `sort_key`.

    Records are serialized where they are made, into per-bundle fragment files next to the
    output; only small (key, fragment, offset, length) tuples travel to the single writer,
    which assembles the file in order and removes the fragments. Fragments of a retried
    bundle are never referenced and are removed with the rest.
    `sort_key(record)` is a picklable tuple; `final_key(key, **side)` may refine it with side inputs.
    """

    def __init__(self, path: str, project, sort_key, final_key=None, side_inputs: dict | None = None):
        super().__init__()
        self.path = path
        self.project = project
        self.sort_key = sort_key
        self.final_key = final_key or (lambda key: key)
        self.side_values = side_inputs or {}

    def expand(self, records):
        path, final_key = self.path, self.final_key
        temp_dir = f"{path}.fragments-{uuid.uuid4().hex[:12]}"

        def write(kv, **side):
            entries = sorted(
                (final_key(key, **side), frag, offset, length) for key, frag, offset, length in (x for x in kv[1] if x)
            )
            blobs = {frag: fileio.read_bytes(frag) for frag in {e[1] for e in entries}}
            with fileio.open_write(path) as f:
                f.write(b"[\n")
                for n, (_, frag, offset, length) in enumerate(entries):
                    f.write((b",\n" if n else b"") + blobs[frag][offset : offset + length])
                f.write(b"\n]\n" if entries else b"]\n")
            fileio.remove_tree(temp_dir)
            return len(entries)

        keyed = records | "Serialize" >> beam.ParDo(_WriteFragments(temp_dir, self.project, self.sort_key))
        # Always one group, so an empty input still writes `[]`.
        always = records.pipeline | "AlwaysOneGroup" >> beam.Create([(0, None)])
        return (
            (keyed, always)
            | "FlattenForJson" >> beam.Flatten()
            | "Gather" >> beam.GroupByKey()
            | "WriteJson" >> beam.Map(write, **self.side_values)
        )


class WriteSummary(beam.PTransform):
    """Sum {name: number} dicts into totals and write `finish(totals)` as `summary.json`."""

    def __init__(self, path: str, finish):
        super().__init__()
        self.path = path
        self.finish = finish

    def expand(self, tallies):
        path, finish = self.path, self.finish

        def write(totals):
            summary = finish(totals)
            write_json(path, summary, indent=True)
            return summary

        return tallies | "Totals" >> beam.CombineGlobally(SumDicts()) | "WriteSummary" >> beam.Map(write)
