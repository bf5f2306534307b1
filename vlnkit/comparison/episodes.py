"""Intervals, comparisons and breakdowns from a table of per-episode scores, in one process.

The input is the score job's episode table (`episodes-*.parquet`, or a dict of columns): one row per
(agent, episode) with `agent`, `instr_id`, `scan` and one float column per metric (null or NaN where
a distance is infinite). Weights are computed once per distinct episode and shared by every agent,
so comparisons are paired (`vlnkit.comparison.paired`).

>>> import numpy as np
>>> table = {"agent": ["a"] * 3 + ["b"] * 3, "instr_id": ["1_0", "2_0", "3_0"] * 2,
...          "scan": ["s"] * 6, "sr": [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]}
>>> sums = agent_sums(table, ["sr"], replicates=50)
>>> sums["a"].mean("sr"), sums["b"].mean("sr")
(0.6666666666666666, 0.3333333333333333)
>>> [row["difference"] for row in compare(table, ["sr"], replicates=50)]
[0.3333333333333333]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from vlnkit.comparison.paired import PairedSums, comparison_rows
from vlnkit.comparison.replicates import DEFAULT_CONFIDENCE, DEFAULT_REPLICATES, ReplicateSums
from vlnkit.comparison.resampling import episode_keys, poisson_weights

LENGTH_EDGES = (8.0, 10.0, 12.0, 14.0)  # metres: R2R reference paths are 5 to 25 m, half of them 8 to 12 m


def columns(table) -> dict[str, np.ndarray]:
    """{name: numpy array} from a pyarrow Table or a dict of sequences (float nulls become NaN)."""
    if isinstance(table, pa.Table):
        out = {}
        for name in table.column_names:
            column = table[name]
            if pa.types.is_floating(column.type) or pa.types.is_integer(column.type):
                out[name] = column.to_numpy().astype(np.float64) if column.null_count else column.to_numpy()
            else:
                out[name] = np.asarray(column.to_pylist(), dtype=object)
        return out
    return {name: _array(values) for name, values in table.items()}


def _array(values) -> np.ndarray:
    """Text stays text (object array); numbers and None become float64 with NaN for None."""
    array = (
        values
        if isinstance(values, np.ndarray) and values.ndim == 1
        else np.fromiter(values, dtype=object, count=len(values))
    )
    if array.dtype.kind in "iufb":
        return array.astype(np.float64)
    if any(isinstance(v, (str, list, tuple, np.ndarray)) for v in array.tolist()):
        return array
    return np.array([np.nan if v is None else v for v in array.tolist()], dtype=np.float64)


def episode_weights(cols: dict, replicates: int, seed: int = 0, unit: str = "episode") -> np.ndarray:
    """(rows, replicates) weights of every row: rows of one episode (of any agent) get the same weights."""
    ids, first, which = np.unique(cols["instr_id"].astype(str), return_index=True, return_inverse=True)
    scans = cols["scan"][first] if unit == "path" else None
    keys = episode_keys(ids, unit=unit, scans=scans)
    return poisson_weights(keys, replicates, seed)[which]


def _agents(cols: dict) -> list[str]:
    return list(dict.fromkeys(cols["agent"].tolist()))  # input order


def agent_sums(
    table, metrics, *, replicates: int = DEFAULT_REPLICATES, seed: int = 0, unit: str = "episode"
) -> dict[str, ReplicateSums]:
    """{agent: ReplicateSums of its metrics} (`.mean(m)`, `.interval(m, confidence)`)."""
    cols = columns(table)
    weights = episode_weights(cols, replicates, seed, unit)
    out = {}
    for agent in _agents(cols):
        rows = cols["agent"] == agent
        out[agent] = ReplicateSums.of({m: cols[m][rows] for m in metrics}, weights[rows])
    return out


def compare(
    table,
    metrics,
    *,
    baseline: str | None = None,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = 0,
    unit: str = "episode",
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[dict]:
    """Comparison rows (`comparison_rows`) of every pair of agents in input order (a before b), or of
    every agent against `baseline` (a = agent, b = baseline), each on the episodes both scored."""
    cols = columns(table)
    weights = episode_weights(cols, replicates, seed, unit)
    agents = _agents(cols)
    if baseline is not None and baseline not in agents:
        raise ValueError(f"baseline agent {baseline!r} is not among the agents {agents}")
    if baseline is None:
        pairs = [(a, b) for i, a in enumerate(agents) for b in agents[i + 1 :]]
    else:
        pairs = [(a, baseline) for a in agents if a != baseline]
    ids = cols["instr_id"].astype(str)
    rows_of = {agent: np.flatnonzero(cols["agent"] == agent) for agent in agents}
    paired = []
    for a, b in pairs:
        _, ia, ib = np.intersect1d(ids[rows_of[a]], ids[rows_of[b]], assume_unique=True, return_indices=True)
        ra, rb = rows_of[a][ia], rows_of[b][ib]
        scores_a = {m: cols[m][ra] for m in metrics}
        scores_b = {m: cols[m][rb] for m in metrics}
        paired.append(PairedSums.of(a, b, scores_a, scores_b, weights[ra]))
    return comparison_rows(paired, list(metrics), confidence)


def length_labels(edges=LENGTH_EDGES) -> list[str]:
    """The bucket labels of `length_buckets`, shortest first.

    >>> length_labels((8.0, 10.0))
    ['<8 m', '8-10 m', '>=10 m']
    """
    return [f"<{edges[0]:g} m"] + [f"{lo:g}-{hi:g} m" for lo, hi in zip(edges, edges[1:])] + [f">={edges[-1]:g} m"]


def length_buckets(lengths, edges=LENGTH_EDGES) -> np.ndarray:
    """Labels of reference path lengths in metres: '<8 m', '8-10 m', ..., '>=14 m' (sortable by edge).

    >>> length_buckets([5.0, 9.5, 30.0]).tolist()
    ['<8 m', '8-10 m', '>=14 m']
    """
    return np.asarray(length_labels(edges), dtype=object)[length_bucket_codes(lengths, edges)]


def length_bucket_codes(lengths, edges=LENGTH_EDGES) -> np.ndarray:
    """The index into `length_labels(edges)` of each length's bucket (no string per row).

    >>> length_bucket_codes([5.0, 9.5, 30.0]).tolist()
    [0, 1, 4]
    """
    return np.searchsorted(np.asarray(edges), np.asarray(lengths), side="right")


def breakdown(
    table,
    by: str,
    metrics,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = 0,
    unit: str = "episode",
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[dict]:
    """Per (group of column `by`, agent): {"group", "agent", "episodes", "<m>", "<m>_ci"} for each metric.

    Groups are any column of the table: `scan`, `language`, or `length_bucket` (`length_buckets` of
    the reference lengths). A group's interval uses the same weights as the whole set, so it is the
    interval of that subset's mean; small groups give wide (and, below some tens of episodes,
    unreliable) intervals.
    """
    cols = columns(table)
    if by not in cols:
        raise ValueError(f"cannot break down by {by!r}: the episode table has no such column ({sorted(cols)})")
    weights = episode_weights(cols, replicates, seed, unit)
    groups = cols[by].astype(str)
    out = []
    for group in sorted(set(groups.tolist())):
        for agent in _agents(cols):
            rows = (groups == group) & (cols["agent"] == agent)
            if not rows.any():
                continue
            sums = ReplicateSums.of({m: cols[m][rows] for m in metrics}, weights[rows])
            row = {"group": group, "agent": agent, "episodes": int(rows.sum())}
            for m in metrics:
                row[m] = sums.mean(m)
                row[f"{m}_ci"] = sums.interval(m, confidence)
            out.append(row)
    return out
