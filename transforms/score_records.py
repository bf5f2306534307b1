"""Reading datasets as validated record dicts, for the jobs that walk records one by one.

`ReadDataset`: PBegin -> {"records": record dicts unique by path_id (R2R) or instruction_id (RxR guide
lines; `transforms.read.episode_key`), with `_source`, `_index`, `_order`; "dead_letter": dicts}. The
random baseline and reports use it; the score job reads columnar batches instead (`transforms.score_read`).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.read import BATCH_RECORDS, ReadR2R, UniqueBy, episode_key, episode_key_text, in_lists
from vlnkit.datasets.records import validate_record
from vlnkit.datasets.rxr import episode_ids
from vlnkit.datasets.trajectories import is_parquet
from vlnkit.io import fileio


class _ReadParquetPaths(beam.DoFn):
    """`build_r4r`'s paths-*.parquet -> lists of validated record dicts, like ReadR2R(batched=True) does for JSON."""

    def __init__(self):
        self.read = Metrics.counter("read", "records")
        self.bad = Metrics.counter("read", "dead_letter")

    def process(self, element):
        import pyarrow.parquet as pq

        rank, path = element
        try:
            with fileio.open_read(path) as f:
                rows = pq.read_table(f).to_pylist()
        except Exception as exc:  # unreadable or not Parquet: the file is the dead letter
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read Parquet ({exc})"))
            return
        kept = []
        for index, row in enumerate(rows):
            reason = validate_record(row)
            if reason is not None:
                self.bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, f"#{index}", reason))
                continue
            kept.append({**row, "_source": path, "_index": index, "_order": (rank, index)})
        yield from in_lists(kept, BATCH_RECORDS, self.read)


class ReadDataset(beam.PTransform):
    """Dataset files (R2R/R4R JSON or JSON Lines, RxR guide files, or build_r4r Parquet) -> records unique
    by `episode_key` (path_id for R2R-format records, instruction_id for RxR guide lines: one episode each).

    Records are read and deduplicated in lists (see `ReadUniqueR2R`); `batched=True` hands the lists
    on, otherwise single records, spread over workers.
    """

    def __init__(self, files: list[str], batched: bool = False):
        super().__init__()
        self.files = list(files)
        self.batched = batched

    def expand(self, pbegin):
        ranked = list(enumerate(self.files))
        json_files = [p for _, p in ranked if not is_parquet(p)]
        parquet = [(r, p) for r, p in ranked if is_parquet(p)]
        pieces, dead = [], []
        if json_files:
            read = pbegin | "ReadJson" >> ReadR2R(json_files, reshuffle=False, batched=True, rxr_guides=True)
            pieces.append(read["records"])
            dead.append(read[DEAD_LETTER])
        if parquet:
            # Ranks continue after the JSON files' so `_order` stays a total order.
            parquet = [(len(json_files) + n, p) for n, (_, p) in enumerate(parquet)]
            read = (
                pbegin
                | "ParquetFiles" >> beam.Create(parquet)
                | "ReadParquet" >> beam.ParDo(_ReadParquetPaths()).with_outputs(DEAD_LETTER, main="records")
            )
            pieces.append(read.records)
            dead.append(read[DEAD_LETTER])
        records = tuple(pieces) | "AllRecords" >> beam.Flatten()
        unique = records | "UniquePathIds" >> UniqueBy(episode_key, episode_key_text, self.files, self.batched)
        dead.append(unique[DEAD_LETTER])
        return {"records": unique["records"], DEAD_LETTER: tuple(dead) | "DatasetDeadLetters" >> beam.Flatten()}


def reference_episodes(record: dict):
    """(instr_id, reference) for each instruction of a dataset record."""
    ref = {"scan": record["scan"], "path": list(record["path"]), "_source": record.get("_source", "")}
    for instr_id in episode_ids(record):
        yield instr_id, ref
