"""Reference batches for scoring from a PCollection of records, so scoring can follow a join with no file between.

`ReferenceBatchesFromRecords`: record dicts -> {"batches": (bucket, ("r", ReferenceBatch)),
"dead_letter": dicts}, the same pieces `transforms.score_read.ReadReferenceBatches` makes from
dataset files: both validate and convert through `vlnkit.datasets.reference_batches.reference_batch`
and split by `split_by_bucket`, so a record scores the same whichever way it arrives.

Records are gathered into batches (`beam.BatchElements`), one `reference_batch` call each: the
conversion is columnar, never one element per episode downstream.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER
from transforms.score_read import worker_vocabulary
from vlnkit.datasets.columns import split_by_bucket
from vlnkit.datasets.reference_batches import reference_batch
from vlnkit.datasets.rxr import R2R, RXR_GUIDE_FORMAT, items_format

RECORDS_SOURCE = "<records>"


class _RecordsToBatches(beam.DoFn):
    """A list of record dicts -> (bucket, ("r", ReferenceBatch)); dead letters for invalid records."""

    def __init__(self, connectivity_dir: str, buckets: int, source: str):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.buckets = buckets
        self.source = source
        self.read = Metrics.counter("read", "records")
        self.bad = Metrics.counter("read", "dead_letter")

    def setup(self):
        self.vocab = worker_vocabulary(self.connectivity_dir)

    def process(self, items):
        # rank 0: a PCollection is one source; strict: check the whole list against the record declaration first.
        items = list(items)
        fmt = RXR_GUIDE_FORMAT if items_format(items) == RXR_GUIDE_FORMAT else R2R
        batch, errors = reference_batch(items, 0, self.source, 0, self.vocab, parquet=False, strict=True, fmt=fmt)
        self.read.inc(len(batch))
        self.bad.inc(len(errors))
        for e in errors:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, e.to_dict())
        for b, part in split_by_bucket(batch, self.buckets):
            yield b, ("r", part)


class ReferenceBatchesFromRecords(beam.PTransform):
    """Reference record dicts (R2R/R4R: path_id, scan, path, heading, instructions; or RxR guide lines,
    told apart per batch by its first record) -> {"batches":
    (bucket, ("r", ReferenceBatch)), "dead_letter": dicts}.

    Flatten "batches" with `ReadPredictionBatches(...)["batches"]` built with the same `buckets`,
    then apply `ScoreBuckets(connectivity_dir, agents, [source], config)`: `source` names these
    records in dead letters (it stands where a dataset file name would). Extra keys (`_order`,
    `distance`, ...) are ignored. Dead letters label a record "#<position in its batch>
    (path_id=...)". A PCollection has no order, so when two records share a path_id the one kept
    is not specified (`ReadReferenceBatches` keeps the first in file order): give unique records,
    as `ReadUniqueR2R` and `JoinR4R` do.

        refs = r4r_records | ReferenceBatchesFromRecords(connectivity_dir, buckets=1)
        pieces = (preds["batches"], refs["batches"]) | beam.Flatten()
        scored = pieces | ScoreBuckets(connectivity_dir, {"agent": [pred_file]}, [RECORDS_SOURCE], config)
    """

    def __init__(self, connectivity_dir: str, buckets: int, source: str = RECORDS_SOURCE, batch_size: int = 4096):
        super().__init__()
        if buckets < 1:
            raise ValueError(f"buckets must be >= 1, got {buckets}")
        self.connectivity_dir = connectivity_dir
        self.buckets = buckets
        self.source = source
        self.batch_size = batch_size

    def expand(self, records):
        out = (
            records
            | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=self.batch_size)
            | "ToBatches"
            >> beam.ParDo(_RecordsToBatches(self.connectivity_dir, self.buckets, self.source)).with_outputs(
                DEAD_LETTER, main="batches"
            )
        )
        return {"batches": out.batches, DEAD_LETTER: out[DEAD_LETTER]}
