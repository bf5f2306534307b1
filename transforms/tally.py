"""Summing dicts of counters into one: how every job gathers its run statistics in one combine."""

from __future__ import annotations

import apache_beam as beam


class SumDicts(beam.CombineFn):
    """{name: number} dicts -> one dict of sums (an empty input gives {})."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, item):
        for k, v in item.items():
            acc[k] = acc.get(k, 0) + v
        return acc

    def merge_accumulators(self, accs):
        out = {}
        for acc in accs:
            self.add_input(out, acc)
        return out

    def extract_output(self, acc):
        return acc


def tally(name: str, batched: bool = False):
    """A Map that turns each element into {name: 1} (with `batched=True`, each list into {name: len(list)})."""
    if batched:
        return beam.Map(lambda batch: {name: len(batch)})
    return beam.Map(lambda _: {name: 1})
