"""Gathering partial results into one: run statistics, report partials, bootstrap sums, comparisons.

Every such gathering is one combine of dicts by an associative, commutative merge, so it is declared
once (`MergeWith`) and each kind of partial names only its merge function.
"""

from __future__ import annotations

import apache_beam as beam


class MergeWith(beam.CombineFn):
    """Partial-result dicts -> one, by `merge(acc, part) -> acc` (associative and commutative; it may
    update `acc` in place or return a new dict). An empty input gives {}. `merge` must pickle (a
    module-level function)."""

    def __init__(self, merge):
        self.merge = merge

    def create_accumulator(self):
        return {}

    def add_input(self, acc, item):
        return self.merge(acc, item)

    def merge_accumulators(self, accs):
        out = {}
        for acc in accs:
            out = self.merge(out, acc)
        return out

    def extract_output(self, acc):
        return acc


def add_counts(acc: dict, item: dict) -> dict:
    """{name: number} added into `acc` key by key."""
    for k, v in item.items():
        acc[k] = acc.get(k, 0) + v
    return acc


class SumDicts(MergeWith):
    """{name: number} dicts -> one dict of sums (an empty input gives {})."""

    def __init__(self):
        super().__init__(add_counts)


def tally(name: str, batched: bool = False):
    """A Map that turns each element into {name: 1} (with `batched=True`, each list into {name: len(list)})."""
    if batched:
        return beam.Map(lambda batch: {name: len(batch)})
    return beam.Map(lambda _: {name: 1})
