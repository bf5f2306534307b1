"""Bootstrap sums of slices of an episode table: merged, they equal the one-process computation bit for bit."""

import numpy as np
import pytest

from vlnkit.comparison.accumulate import breakdowns, comparisons, merge_sums, pairs_of, slice_sums
from vlnkit.comparison.episodes import agent_sums, breakdown, compare


def random_table(rng, n, agents=("a", "b", "c")):
    """Agents scoring random subsets of n episodes, with NaN (null) and +inf (unreachable) values."""
    rows = {"agent": [], "instr_id": [], "scan": [], "x": [], "y": []}
    for agent in agents:
        for i in np.flatnonzero(rng.random(n) < 0.8):
            rows["agent"].append(agent)
            rows["instr_id"].append(f"{i // 3}_{i % 3}")
            rows["scan"].append(f"s{i % 4}")
            u = rng.random()
            rows["x"].append(np.nan if u < 0.15 else np.inf if u < 0.25 else rng.random() * 10)
            rows["y"].append(float(rng.integers(2)))
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_slices_merged_equal_the_whole_and_the_library(seed):
    rng = np.random.default_rng(seed)
    table = random_table(rng, int(rng.integers(2, 80)))
    pairs = pairs_of(["a", "b", "c"])
    whole = slice_sums(table, ["x", "y"], replicates=40, seed=seed, pairs=pairs, by=("scan",), group_metrics=("x", "y"))
    # Slices by path id (as the job's buckets), in a shuffled order.
    path = np.array([int(i.split("_")[0]) % 3 for i in table["instr_id"]])
    parts = []
    for p in rng.permutation(3):
        rows = np.flatnonzero(path == p)
        if len(rows):
            part = {k: [v[i] for i in rows] for k, v in table.items()}
            parts.append(
                slice_sums(
                    part, ["x", "y"], replicates=40, seed=seed, pairs=pairs, by=("scan",), group_metrics=("x", "y")
                )
            )
    merged = merge_sums(*parts)
    assert merged == whole
    library = agent_sums(table, ["x", "y"], replicates=40, seed=seed)
    for agent, sums in library.items():
        assert merged[("agent", agent)] == sums
    got = [r for r in comparisons(merged, ["x", "y"], pairs=pairs)]
    want = [r for r in compare(table, ["x", "y"], replicates=40, seed=seed) if r["episodes"]]
    assert got == want
    by_scan = sorted(
        breakdown(table, "scan", ["x", "y"], replicates=40, seed=seed), key=lambda r: (r["group"], r["agent"])
    )
    assert breakdowns(merged)["scan"] == by_scan


def test_pairs_of_rejects_an_unknown_baseline():
    with pytest.raises(ValueError, match="baseline agent 'z'"):
        pairs_of(["x", "y"], baseline="z")


@pytest.mark.parametrize("seed", range(4))
def test_agent_sums_added_up_from_groups_equal_a_pass_of_their_own(seed):
    """The first grouping carries every metric and the agents' sums are its groups' sums added up:
    equal to the agents' own pass, with the breakdown keeping only the group metrics."""
    rng = np.random.default_rng(seed)
    table = random_table(rng, 60)
    folded = slice_sums(table, ["x", "y"], replicates=30, seed=seed, by=("scan",), group_metrics=("y",))
    alone = slice_sums(table, ["x", "y"], replicates=30, seed=seed)
    for agent in ("a", "b", "c"):
        assert folded[("agent", agent)] == alone[("agent", agent)]
    assert all(set(s.totals) == {"y"} for k, s in folded.items() if k[0] == "by")


def test_pairs_of_agents_scoring_the_same_episodes_carry_nothing():
    """Every pair is derived from the agents' own sums: with all agents scoring every episode, the
    pair entries hold no columns at all (so all-pairs sums of many agents cost almost nothing)."""
    rng = np.random.default_rng(3)
    agents = [f"agent{k}" for k in range(8)]
    ids = [f"{p}_{k}" for p in range(50) for k in range(3)]
    table = {"agent": [a for a in agents for _ in ids], "instr_id": ids * len(agents)}
    table["scan"] = ["s"] * len(table["agent"])
    table["sr"] = list((rng.random(len(table["agent"])) < 0.5).astype(float))
    sums = slice_sums(table, ["sr"], replicates=50, pairs=pairs_of(agents))
    pairs = [s for k, s in sums.items() if k[0] == "pair"]
    assert len(pairs) == 28 and all(not s.totals for s in pairs)
    rows = comparisons(sums, ["sr"])
    assert len(rows) == 28 and rows == compare(table, ["sr"], replicates=50)


@pytest.mark.parametrize("wide", [False, True], ids=["counted_cells", "sorted_cells"])
@pytest.mark.parametrize("seed", range(6))
def test_every_breakdown_of_one_pass_equals_the_sums_of_its_rows_alone(seed, wide):
    """One pass over cells (agent x scan x language x length group) gives, for every target, the sums
    of exactly the rows that belong to it, summed on their own (nulls leave a row out of a breakdown only).
    `wide` adds a breakdown with a group per row, so that the cells' code span (agents x the groups + 1 of
    every breakdown) is past what `slice_sums` numbers by counting, and its cells are numbered by a sort."""
    from vlnkit.comparison.replicates import ReplicateSums
    from vlnkit.comparison.resampling import episode_keys, poisson_weights

    rng = np.random.default_rng(seed)
    table = random_table(rng, 200 if wide else int(rng.integers(30, 200)))
    n = len(table["agent"])
    table["language"] = [None if u < 0.3 else f"l{int(u * 3)}" for u in rng.random(n)]
    table["length"] = [f"g{k}" for k in rng.integers(0, 3, n)]
    by = ("scan", "language", "length")
    if wide:
        table["site"] = [f"p{k}" for k in range(n)]
        by += ("site",)
        span = len(set(table["agent"])) * np.prod([len({v for v in table[c] if v is not None}) + 1 for c in by])
        assert span > max(n, 1 << 16)
    sums = slice_sums(table, ["x", "y"], replicates=25, seed=seed, by=by, group_metrics=("y",))
    weights = poisson_weights(episode_keys(table["instr_id"]), 25, seed)
    columns = {m: np.array(table[m], dtype=float) for m in ("x", "y")}
    agents = np.array(table["agent"])
    expected = {("agent", a): (agents == a, ["x", "y"]) for a in set(table["agent"])}
    for column in by:
        values = np.array(table[column], dtype=object)
        for group in {v for v in values if v is not None}:
            for a in set(table["agent"]):
                rows = (values == group) & (agents == a)
                if rows.any():
                    expected[("by", column, group, a)] = (rows, ["y"])
    assert set(sums) == set(expected)
    for key, (rows, metrics) in expected.items():
        alone = ReplicateSums.of({m: columns[m][rows] for m in metrics}, weights[rows])
        assert sums[key] == alone, key


def test_long_cells_at_the_largest_weights_stay_exact():
    """A cell longer than the kernel's exact float run (4,096 rows), at weights up to 31 and values up
    to 1,000 (the float accumulators' bound): equal to Python-integer sums."""
    from vlnkit.comparison.replicates import REPLICATE_BITS, ReplicateSums

    rng = np.random.default_rng(11)
    x = rng.random(9_001) * 1000.0
    w = rng.integers(0, 32, size=(len(x), 3)).astype(np.uint8)
    sums = ReplicateSums.of({"x": x}, w)
    grid = [round(float(v) * 2**REPLICATE_BITS) for v in x]
    for b in range(3):
        assert sums.weighted_totals["x"][b] == sum(int(wb) * g for wb, g in zip(w[:, b], grid))


@pytest.mark.parametrize("seed", range(4))
def test_a_row_per_episode_sums_with_weights_made_in_the_kernel_as_with_the_matrix(seed, monkeypatch):
    """One agent (a row per episode: its weights are made inside the sums kernel, `KeyedWeights`) with
    breakdowns and a pair whose other agent is in another slice (its left-out rows take the keyed weights
    of those rows): the same sums as with the weights matrix of the numpy definition."""
    import vlnkit.comparison.accumulate as accumulate
    from tests.oracles.poisson_weights import poisson_weights as numpy_weights

    rng = np.random.default_rng(seed)
    table = random_table(rng, int(rng.integers(30, 300)), agents=("a",))
    table["language"] = [None if u < 0.3 else f"l{int(u * 3)}" for u in rng.random(len(table["agent"]))]
    args = dict(replicates=int(rng.integers(1, 700)), seed=seed, pairs=[("a", "z")], by=("scan", "language"))
    keyed = slice_sums(table, ["x", "y"], **args)
    monkeypatch.setattr(accumulate, "KeyedWeights", numpy_weights)
    assert keyed == slice_sums(table, ["x", "y"], **args) and ("pair", "a", "z") in keyed
