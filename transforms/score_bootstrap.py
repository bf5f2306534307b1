"""Poisson bootstrap sums of the score job's episode tables, merged into one dict for the summary.

Each scored bucket table (every agent's rows of the bucket's paths) becomes its `slice_sums`
(`vlnkit.comparison.accumulate`); a CombineGlobally adds them exactly, so the merged sums, and the
intervals and p-values computed from them, are the same bits on any runner and worker count.
"""

from __future__ import annotations

import apache_beam as beam

from vlnkit.comparison.accumulate import GROUP_COLUMNS, merge_sums, slice_sums


class _MergeSums(beam.CombineFn):
    def create_accumulator(self):
        return {}

    def add_input(self, accumulator, element):
        return merge_sums(accumulator, element)

    def merge_accumulators(self, accumulators):
        return merge_sums(*accumulators)

    def extract_output(self, accumulator):
        return accumulator


class BootstrapSums(beam.PTransform):
    """Episode tables -> one dict {key: ReplicateSums} (see `slice_sums`) of every agent, pair and group."""

    def __init__(self, metrics, replicates: int, seed: int, unit: str, pairs, by=GROUP_COLUMNS):
        super().__init__()
        self.metrics, self.replicates, self.seed, self.unit = list(metrics), replicates, seed, unit
        self.pairs, self.by = list(pairs), tuple(by)

    def expand(self, tables):
        metrics, replicates, seed, unit, pairs, by = (
            self.metrics,
            self.replicates,
            self.seed,
            self.unit,
            self.pairs,
            self.by,
        )

        def sums(table):
            return slice_sums(table, metrics, replicates=replicates, seed=seed, unit=unit, pairs=pairs, by=by)

        return tables | "SliceSums" >> beam.Map(sums) | "MergeSums" >> beam.CombineGlobally(_MergeSums())
