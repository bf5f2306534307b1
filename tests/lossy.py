"""Test doubles of sinks that lose what they are given, silently, as a buggy runner, a full network
filesystem or a broken upload can: the writer believes it wrote everything and nothing raises.

- `lose_parquet_rows(monkeypatch, keep)`: pyarrow's `ParquetWriter.write_table` (what every job's
  Parquet writer calls) keeps only part of what it is given: `keep="first_table"` keeps each writer's first
  table and drops the rest; `keep="half"` writes the first half of every table
  (so even a run whose writers get one table each loses rows).
- `cut_json_short(monkeypatch)`: every `.json` file but a run's own `summary.json` and `manifest.json`
  (the R4R JSON, the probe episodes JSON, a report's tables) is cut to half its bytes when it is closed.

Both patch the process they run in: use them with in-process runs (`pipelines.<job>.main`).
"""

from __future__ import annotations

import io
import os

RUN_FILES = ("summary.json", "manifest.json")


def lose_parquet_rows(monkeypatch, keep: str = "half") -> None:
    import pyarrow.parquet as pq

    real = pq.ParquetWriter.write_table

    def write_table(self, table, *args, **kwargs):
        if keep == "first_table":
            if getattr(self, "_lossy_wrote", False):
                return None
            self._lossy_wrote = True
            return real(self, table, *args, **kwargs)
        return real(self, table.slice(0, table.num_rows // 2), *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_table)


class _CutShort(io.BytesIO):
    def __init__(self, real):
        super().__init__()
        self._real = real

    def close(self):
        if not self.closed:
            data = self.getvalue()
            self._real.write(data[: len(data) // 2])
            self._real.close()
        super().close()


def cut_json_short(monkeypatch) -> None:
    from vlnkit.io import fileio

    real = fileio.open_write

    def open_write(path: str):
        name = os.path.basename(path)
        if name.endswith(".json") and name not in RUN_FILES:
            return _CutShort(real(path))
        return real(path)

    monkeypatch.setattr(fileio, "open_write", open_write)
