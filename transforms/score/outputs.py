"""What the score job writes: the episode rows, the two episode lists, and the partials gathered for the summary.

`WriteEpisodeTables(prefix, schema)`: Arrow tables -> `<prefix>-SSSSS-of-NNNNN.parquet`, each bundle's tables
into one file written on a background thread while the step before it goes on computing the next table
(the score step and this one run fused), renamed to their final names once every bundle is done.
`WriteEpisodeLists(paths)`: (list name, lines) pairs -> one sorted text file per list name in `paths` (an
empty file for a list without lines). `MergeBootstrap()` and `MergeFollowerComparisons()`: the score step's
per-bucket partials -> one dict each, added exactly in any order (`MergeWith`), for the summary.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import apache_beam as beam
import pyarrow as pa
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from transforms.gather import GatherToOne
from transforms.tally import MergeWith
from vlnkit.comparison.accumulate import merge_sums
from vlnkit.hashing import stable_bucket
from vlnkit.io import fileio
from vlnkit.io.parquet_encoding import dictionary_columns
from vlnkit.scoring.followers import merge_by_agent

SHARD = "{prefix}-{index:05d}-of-{count:05d}.parquet"
# As Beam's Parquet sink writes lists (child "item"), so the files read back with the declared schema.
PARQUET_OPTIONS = {"compression": "snappy", "use_compliant_nested_type": False}


class _WriteTables(beam.DoFn):
    """Tables (or, after a shuffle into shards, (shard, tables)) -> one temporary Parquet file per bundle or
    shard, written on one background thread: while a table is encoded and compressed (Arrow releases the
    GIL), the fused step before this one computes the next. At most one table waits, so memory stays that
    of two tables. Yields (temporary path, rows) when the bundle ends."""

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
        import pyarrow.parquet as pq

        if self._writer is None:
            self._path = f"{self.prefix}.tmp-{uuid.uuid4().hex}.parquet"
            self._file = fileio.open_write(self._path)
            # Dictionaries only for the columns whose values repeat in the file's first table.
            dictionary = dictionary_columns(table, **PARQUET_OPTIONS)
            self._writer = pq.ParquetWriter(self._file, self.schema, use_dictionary=dictionary, **PARQUET_OPTIONS)
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
    import pyarrow.parquet as pq

    done = sorted(written)
    count = max(len(done), shards, 1)
    for index, (path, _) in enumerate(done):
        fileio.rename(path, SHARD.format(prefix=prefix, index=index, count=count))
    for index in range(len(done), count):
        with fileio.open_write(SHARD.format(prefix=prefix, index=index, count=count)) as f:
            pq.write_table(schema.empty_table(), f, **PARQUET_OPTIONS)
    kept = {path for path, _ in done}
    for path, _ in fileio.match(f"{prefix}.tmp-*.parquet"):
        if path not in kept:
            fileio.remove_tree(path)
    return sum(rows for _, rows in done)


@dataclass
class WriteEpisodeTables(beam.PTransform):
    """Arrow tables -> `<prefix>-SSSSS-of-NNNNN.parquet` (see the module docstring). `num_shards` > 0 asks for
    exactly that many files: the tables are shuffled into as many groups first."""

    prefix: str
    schema: pa.Schema
    num_shards: int = 0

    def expand(self, tables):
        if self.num_shards:
            n = self.num_shards
            tables = (
                tables
                | "KeyShards" >> beam.Map(lambda t: (stable_bucket(t.column("instr_id")[0].as_py(), buckets=n), t))
                | "GroupShards" >> beam.GroupByKey()
            )
        written = tables | "WriteFiles" >> beam.ParDo(_WriteTables(self.prefix, self.schema))
        return (
            written
            | "GatherFiles" >> GatherToOne()
            | "NameShards" >> beam.Map(_name_shards, self.prefix, self.schema, self.num_shards)
        )


def _write_lists(pairs: list, paths: dict[str, str]) -> dict[str, int]:
    lines: dict[str, list[str]] = {name: [] for name in paths}
    for name, part in pairs:
        lines[name] += part
    for name, path in paths.items():
        with fileio.open_write(path) as f:
            f.write("".join(x + "\n" for x in sorted(lines[name])).encode("utf-8"))
    return {name: len(found) for name, found in lines.items()}


@dataclass
class WriteEpisodeLists(beam.PTransform):
    """(list name, lines) -> one sorted text file per name of `paths` ({name: file path}), one line each."""

    paths: dict[str, str]

    def expand(self, pairs):
        return pairs | "Gather" >> GatherToOne() | "Write" >> beam.Map(_write_lists, self.paths)


class MergeBootstrap(beam.PTransform):
    """Per-bucket bootstrap sums -> one dict (`vlnkit.comparison.accumulate.merge_sums`), or nothing when
    there are none: read it as `AsSingleton(..., default_value={})`."""

    def expand(self, sums):
        return sums | "MergeSums" >> beam.CombineGlobally(MergeWith(merge_sums)).without_defaults()


class MergeFollowerComparisons(beam.PTransform):
    """Per-bucket {agent: comparison} -> one (`vlnkit.scoring.followers.merge_by_agent`), or nothing when
    there are none: read it as `AsSingleton(..., default_value={})`."""

    def expand(self, parts):
        return parts | "MergeComparisons" >> beam.CombineGlobally(MergeWith(merge_by_agent)).without_defaults()
