"""Writing score outputs: pyarrow Tables straight to Parquet shards, and sorted line files.

`WriteTables`: pyarrow Tables -> `<prefix>-SSSSS-of-NNNNN.parquet` (no per-row work).
`WriteLines`: strings -> one sorted text file, one per line (empty file when there are none).
"""

from __future__ import annotations

import apache_beam as beam
import pyarrow as pa

from transforms.write import SHARD_TEMPLATE
from vlnkit.io import fileio


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


class WriteLines(beam.PTransform):
    """Gather strings into one sorted text file, one per line (empty file when there are none)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, lines):
        path = self.path

        def write(kv):
            items = sorted(x for x in kv[1] if x is not None)
            with fileio.open_write(path) as f:
                f.write("".join(x + "\n" for x in items).encode("utf-8"))
            return len(items)

        always = lines.pipeline | "AlwaysOneGroup" >> beam.Create([(0, None)])
        return (
            (lines | "KeyAll" >> beam.Map(lambda x: (0, x)), always)
            | "FlattenLines" >> beam.Flatten()
            | "Gather" >> beam.GroupByKey()
            | "Write" >> beam.Map(write)
        )
