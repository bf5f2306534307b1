"""Writing score outputs beside the Parquet shards (`transforms.write.WriteTables`): sorted line files.

`WriteLines`: strings -> one sorted text file, one per line (empty file when there are none).
"""

from __future__ import annotations

import apache_beam as beam

from vlnkit.io import fileio


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
