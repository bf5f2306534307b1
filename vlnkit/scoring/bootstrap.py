"""The score job's bootstrap sums of one scored bucket, mergeable across buckets in any order.

`bucket_sums(scores, config, pairs)` turns a bucket's episode rows into the `vlnkit.comparison.accumulate`
sums the summary needs: each agent's metrics, the pairs of agents, and the breakdowns by scan, language
and reference path length (`length_buckets` of each row's reference path length in metres). Buckets
hold whole paths (they are cut by path_id), so resampling a path's episodes together
(`unit="path"`) sees all of them in one bucket. Sums are exact integers: merged with `merge_sums`, they
give the same intervals on every runner and worker count.
"""

from __future__ import annotations

import pyarrow as pa

from vlnkit.comparison.accumulate import GROUP_COLUMNS, slice_sums
from vlnkit.comparison.config import BootstrapConfig
from vlnkit.comparison.episodes import length_bucket_codes, length_labels
from vlnkit.comparison.paired import HEADLINE
from vlnkit.evaluation.common import METRICS

LENGTH_COLUMN = "reference_length"  # the breakdown by reference path length (buckets in metres)
BREAKDOWN_COLUMNS = (*GROUP_COLUMNS, LENGTH_COLUMN)


def bucket_sums(
    table: pa.Table, reference_length, config: BootstrapConfig, pairs, metrics=METRICS, group_metrics=HEADLINE
) -> dict:
    """The bootstrap sums of one bucket's episode rows (`reference_length`: metres, per row): EPISODE_SCORES
    rows and `metrics`, or a continuous dataset's rows and theirs; the breakdowns carry `group_metrics`."""
    names = table.column_names
    table = table.select(["agent", "instr_id", *(c for c in GROUP_COLUMNS if c in names), *metrics])
    codes = pa.array(length_bucket_codes(reference_length), pa.int32())
    labels = pa.DictionaryArray.from_arrays(codes, pa.array(length_labels(), pa.string()))  # no string per row
    table = table.append_column(LENGTH_COLUMN, labels)
    return slice_sums(
        table,
        list(metrics),
        replicates=config.replicates,
        seed=config.seed,
        unit=config.unit,
        pairs=list(pairs),
        by=BREAKDOWN_COLUMNS,
        group_metrics=group_metrics,
    )
