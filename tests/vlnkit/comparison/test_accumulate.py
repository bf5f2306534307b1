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
