"""Poisson bootstrap sums of the score job's episode tables, merged into one dict for the summary.

Each scored bucket table (every agent's rows of the bucket's paths) becomes its `slice_sums`
(`vlnkit.comparison.accumulate`); a CombineGlobally adds them exactly, so the merged sums, and the
intervals and p-values computed from them, are the same bits on any runner and worker count.
"""

from __future__ import annotations

import apache_beam as beam
import pyarrow as pa

from transforms.tally import MergeWith
from vlnkit.comparison.accumulate import GROUP_COLUMNS, merge_sums, slice_sums
from vlnkit.comparison.episodes import length_buckets

LENGTH_COLUMN = "reference_length"  # the breakdown by reference path length (buckets in metres)


class SliceSums:
    """The score step's bootstrap hook: a bucket's table and reference lengths -> its `slice_sums`, with
    the breakdown by reference path length (`length_buckets`) next to scan and language."""

    def __init__(self, metrics, replicates: int, seed: int, unit: str, pairs, by=GROUP_COLUMNS):
        self.metrics, self.replicates, self.seed, self.unit = list(metrics), replicates, seed, unit
        self.pairs, self.by = list(pairs), (*by, LENGTH_COLUMN)

    def __call__(self, table, reference_lengths):
        table = table.select(["agent", "instr_id", *(c for c in self.by if c in table.column_names), *self.metrics])
        table = table.append_column(LENGTH_COLUMN, pa.array(length_buckets(reference_lengths), pa.string()))
        return slice_sums(
            table,
            self.metrics,
            replicates=self.replicates,
            seed=self.seed,
            unit=self.unit,
            pairs=self.pairs,
            by=self.by,
        )


class MergeSums(beam.PTransform):
    """Bucket sums (the BOOTSTRAP output of ScoreBuckets) -> one dict, added exactly in any order."""

    def expand(self, sums):
        return sums | "MergeSums" >> beam.CombineGlobally(MergeWith(merge_sums))
