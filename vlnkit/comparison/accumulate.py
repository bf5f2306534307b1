"""Bootstrap sums of one slice of the score job's episode table, mergeable across slices, and what they give.

The score job cuts its episode table into buckets (by path_id, so every agent's row of one episode,
and every instruction of one path, are in the same bucket). `slice_sums` computes, for one such
slice, the `ReplicateSums` the summary needs, keyed:

- `("agent", agent)`: the agent's metrics (its intervals);
- `("pair", a, b)`: columns `a:<metric>`, `b:<metric>` of the rows of a and b left out of their pair
  (not scored by both, or the other agent's value missing): usually none, so a pair costs almost
  nothing to carry; `paired_sums` makes the pair's sums (`PairedSums`) from the agents' own sums
  minus these;
- `("by", column, group, agent)`: the agent's headline metrics on one group (a scan, a language).

The weights are computed once per slice for all agents (a pure function of seed, key, replicate),
so the dicts of any slices merge with `merge_sums` (exact integer sums, any order, same bits), and
`agent_intervals`, `comparisons` and `breakdowns` read the merged dict.

>>> table = {"agent": ["a"] * 3 + ["b"] * 3, "instr_id": ["1_0", "2_0", "3_0"] * 2,
...          "scan": ["s"] * 6, "sr": [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]}
>>> whole = slice_sums(table, ["sr"], replicates=50, pairs=[("a", "b")])
>>> rows = comparisons(whole, ["sr"])
>>> rows[0]["difference"], rows[0]["episodes"]
(0.3333333333333333, 3)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vlnkit.comparison.paired import HEADLINE, PairedSums, comparison_rows
from vlnkit.comparison.replicates import DEFAULT_CONFIDENCE, ReplicateSums, cell_sums
from vlnkit.comparison.resampling import KeyedWeights, episode_keys, poisson_weights
from vlnkit.counting import unique_ints

GROUP_COLUMNS = ("scan", "language")  # breakdown columns of the episode table (language: RxR only)


def pairs_of(agents, baseline: str | None = None) -> list[tuple[str, str]]:
    """Every pair of agents in the given order (a before b), or every agent against `baseline` (b).

    >>> pairs_of(["x", "y", "z"])
    [('x', 'y'), ('x', 'z'), ('y', 'z')]
    >>> pairs_of(["x", "y", "z"], baseline="y")
    [('x', 'y'), ('z', 'y')]
    """
    agents = list(agents)
    if baseline is None:
        return [(a, b) for i, a in enumerate(agents) for b in agents[i + 1 :]]
    if baseline not in agents:
        raise ValueError(f"baseline agent {baseline!r} is not among the agents {agents}")
    return [(a, baseline) for a in agents if a != baseline]


def _column(table, name: str) -> pa.Array:
    if isinstance(table, pa.Table):
        column = table[name]
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return pa.array(table[name])


def _floats(table, name: str) -> np.ndarray:
    """A metric column as float64 with NaN for nulls (a float64 column without nulls: a view of it)."""
    column = _column(table, name)
    if column.type == pa.float64() and not column.null_count:
        return column.to_numpy()
    return pc.fill_null(pc.cast(column, pa.float64()), np.nan).to_numpy(zero_copy_only=False)


def _codes(column: pa.Array) -> tuple[np.ndarray, list]:
    """(per-row code into the distinct values, -1 for null; the distinct values) in one Arrow call."""
    if column.null_count == len(column):  # e.g. R2R's language: no group at all
        return np.full(len(column), -1, np.int64), []
    encoded = column.dictionary_encode()
    indices = pc.fill_null(encoded.indices, -1) if encoded.indices.null_count else encoded.indices
    return indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


def slice_sums(
    table,
    metrics,
    *,
    replicates: int,
    seed: int = 0,
    unit: str = "episode",
    pairs=(),
    by=(),
    group_metrics=HEADLINE,
) -> dict[tuple, ReplicateSums]:
    """The bootstrap sums of one slice of the episode table (a pyarrow Table or dict of columns with
    `agent`, `instr_id`, `scan` and the metrics): see the module docstring for the keys."""
    agent_codes, agent_names = _codes(_column(table, "agent"))
    id_column = _column(table, "instr_id")
    if id_column.null_count:
        raise ValueError("the episode table has a row without instr_id")
    if len(agent_names) > 1:  # weights once per distinct episode, shared by its agents
        encoded = id_column.dictionary_encode()
        id_codes, ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary
    else:  # one agent: a row per episode (a repeated id gets the same weights: they depend on the key only)
        id_codes, ids = np.arange(len(id_column)), id_column
    scans = None
    if unit == "path":
        scan_codes, scan_names = _codes(_column(table, "scan"))
        first = np.full(len(ids), -1, np.int64)
        first[id_codes[::-1]] = np.arange(len(id_codes))[::-1]
        scans = [scan_names[c] for c in scan_codes[first].tolist()]
    keys = episode_keys(ids, unit=unit, scans=scans)
    if len(id_codes) > len(keys):  # an episode in several rows (agents): its weights made once, shared
        unique_weights = poisson_weights(keys, replicates, seed)
    else:  # a row per episode: the sums kernel makes each row's weights as it adds the row
        unique_weights = KeyedWeights(keys, replicates, seed)
    values = {m: _floats(table, m) for m in metrics}
    present = [c for c in by if (c in table.column_names if isinstance(table, pa.Table) else c in table)]
    n_agents = len(agent_names)
    kept = [m for m in group_metrics if m in values]
    # A cell is an agent and one group (or none, for a null) of every breakdown; its rows are summed
    # once and counted in the agent's target and in each of its groups' targets.
    cell, width, n_targets = agent_codes.copy(), n_agents, n_agents
    groupings = []  # (column, its groups, its stride in the cell code, its first target)
    for column_name in present:
        group_codes, groups = _codes(_column(table, column_name))
        cell += width * np.where(group_codes >= 0, group_codes, len(groups))
        groupings.append((column_name, groups, width, n_targets))
        width *= len(groups) + 1
        n_targets += len(groups) * n_agents
    cells, cell = unique_ints(cell, return_inverse=True)  # a sort here was a tenth of a bucket's sums
    targets = [cells % n_agents]  # target a: agent a; then each breakdown's (group, agent) targets
    for _, groups, stride, offset in groupings:
        group = cells // stride % (len(groups) + 1)
        targets.append(np.where(group < len(groups), offset + group * n_agents + cells % n_agents, -1))
    metrics_of = [list(values)] * n_agents + [kept] * (n_targets - n_agents)
    per_target = cell_sums(unique_weights, id_codes, cell, np.stack(targets, axis=1), values, metrics_of)
    out: dict[tuple, ReplicateSums] = {}
    for (column_name, groups, _, offset), reached in zip(groupings, targets[1:]):
        for target in np.unique(reached[reached >= 0]).tolist():
            group, agent = groups[(target - offset) // n_agents], agent_names[(target - offset) % n_agents]
            out[("by", column_name, str(group), agent)] = per_target[target]
    per_agent = per_target[:n_agents]
    rows_of = {}
    for code, agent in enumerate(agent_names):
        rows_of[agent] = np.flatnonzero(agent_codes == code)
        out[("agent", agent)] = per_agent[code]
    empty = np.zeros(0, np.int64)
    for a, b in pairs:
        if a in rows_of or b in rows_of:
            out[("pair", a, b)] = _left_out(
                rows_of.get(a, empty), rows_of.get(b, empty), id_codes, values, unique_weights
            )
    return out


def _left_out(ra, rb, id_codes, values, weights) -> ReplicateSums:
    """Sums of the rows of agents a (`ra`) and b (`rb`) that their pair leaves out, as columns `a:<m>`,
    `b:<m>`: a row is left out of metric m when the other agent has no row of its episode or no finite
    value of m there. Exact integers subtract exactly, so the agents' sums minus these are the pair's."""
    common, ia, ib = np.intersect1d(id_codes[ra], id_codes[rb], assume_unique=True, return_indices=True)
    out = ReplicateSums(weights.shape[1])
    for side, rows, mine, other, theirs in (("a", ra, ia, rb, ib), ("b", rb, ib, ra, ia)):
        dropped = {}
        in_pair = np.zeros(len(rows), bool)
        in_pair[mine] = True
        for m, v in values.items():
            partner = np.full(len(rows), np.nan)
            partner[mine] = v[other[theirs]]
            drop = np.isfinite(v[rows]) & ~(in_pair & np.isfinite(partner))
            dropped[f"{side}:{m}"] = np.where(drop, v[rows], np.nan)
        keep = np.flatnonzero(np.any([np.isfinite(d) for d in dropped.values()], axis=0))
        if len(keep):
            out = out + ReplicateSums.of({m: d[keep] for m, d in dropped.items()}, weights[id_codes[rows[keep]]])
    return out


def paired_sums(sums: dict, a: str, b: str) -> PairedSums | None:
    """The pair (a, b)'s sums from merged slice sums: each agent's own sums minus the rows the pair
    leaves out (bit for bit what summing the pair's rows gives); None when they share no episode."""
    left_out = sums.get(("pair", a, b))
    own_a, own_b = sums.get(("agent", a)), sums.get(("agent", b))
    if left_out is None or own_a is None or own_b is None:
        return None
    both = own_a.renamed({m: f"a:{m}" for m in own_a.totals}) + own_b.renamed({m: f"b:{m}" for m in own_b.totals})
    pair = both - left_out
    if not any(n for name, n in pair.counts.items() if name.startswith("a:")):
        return None
    return PairedSums(a, b, pair)


def merge_sums(*parts: dict) -> dict[tuple, ReplicateSums]:
    """The sums of the union of slices: `+` per key (exact, so in any order).

    >>> t = {"agent": ["a", "a"], "instr_id": ["1_0", "2_0"], "scan": ["s", "s"], "sr": [1.0, 0.0]}
    >>> one = {k: v for k, v in t.items()}
    >>> halves = [slice_sums({k: v[i : i + 1] for k, v in t.items()}, ["sr"], replicates=20) for i in (0, 1)]
    >>> merge_sums(*halves) == slice_sums(t, ["sr"], replicates=20)
    True
    """
    out: dict[tuple, ReplicateSums] = {}
    for part in parts:
        for key, sums in part.items():
            out[key] = out[key] + sums if key in out else sums
    return out


def agent_intervals(sums: dict, agent: str, metrics, confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """{"<metric>_ci": [low, high] or None} of one agent from merged sums."""
    own = sums.get(("agent", agent))
    return {f"{m}_ci": (own.interval(m, confidence) if own is not None else None) for m in metrics}


def comparisons(sums: dict, metrics, confidence: float = DEFAULT_CONFIDENCE, pairs=None) -> list[dict]:
    """The summary's comparison rows (`comparison_rows`, Holm per metric) of the pairs in `sums`
    (in the order of `pairs` when given)."""
    keys = [("pair", a, b) for a, b in pairs] if pairs is not None else [k for k in sums if k[0] == "pair"]
    paired = (paired_sums(sums, k[1], k[2]) for k in keys if k in sums)  # made one at a time
    return comparison_rows((p for p in paired if p is not None), list(metrics), confidence)


def breakdowns(sums: dict, confidence: float = DEFAULT_CONFIDENCE) -> dict[str, list[dict]]:
    """{column: [{"group", "agent", "episodes", "<m>", "<m>_ci"}]} sorted by group, then agent."""
    out: dict[str, list[dict]] = {}
    for key in sorted(k for k in sums if k[0] == "by"):
        _, column_name, group, agent = key
        s = sums[key]
        metrics = list(s.counts)
        row = {"group": group, "agent": agent, "episodes": max(s.counts.values(), default=0)}
        for m in metrics:
            row[m] = s.mean(m)
            row[f"{m}_ci"] = s.interval(m, confidence)
        out.setdefault(column_name, []).append(row)
    return out
