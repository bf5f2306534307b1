"""The Poisson bootstrap on real agents (R2R val_unseen, 2,349 episodes), against independent computations."""

from __future__ import annotations

import numpy as np
import pytest

from vlnkit.comparison import HEADLINE, agent_sums, breakdown, compare, length_buckets

pytestmark = pytest.mark.real_data

B = 1000


def test_intervals_agree_with_a_numpy_percentile_bootstrap(val_unseen):
    """Same B, classical resampling of episodes with replacement (multinomial) from numpy's generator.

    Monte-Carlo error: a 2.5% quantile of B = 1000 replicates has a standard error of about 0.085
    bootstrap standard deviations (sd), so two independent estimates differ by about 0.12 sd;
    0.6 sd is five of those."""
    table = val_unseen["table"]
    sums = agent_sums(table, HEADLINE, replicates=B, seed=0)
    agents = np.array(table["agent"])
    rng = np.random.default_rng(2024)
    checked = 0
    for agent in ("random", "stop"):
        for metric in HEADLINE:
            x = np.array(table[metric], dtype=float)[agents == agent]
            x = x[np.isfinite(x)]
            if x.std() == 0:
                assert sums[agent].interval(metric) == [x[0], x[0]]  # stop: SR is 0 on every episode
                continue
            replicates = x[rng.integers(0, len(x), size=(B, len(x)))].mean(axis=1)
            low, high = np.quantile(replicates, [0.025, 0.975])
            sd = replicates.std()
            ours = sums[agent].interval(metric)
            assert abs(ours[0] - low) < 0.6 * sd and abs(ours[1] - high) < 0.6 * sd, (agent, metric, ours, low, high)
            assert sums[agent].mean(metric) == pytest.approx(x.mean(), rel=1e-12)
            assert ours[0] < sums[agent].mean(metric) < ours[1]
            checked += 1
    assert checked >= 6
    # the random agent's SR interval is the textbook one for a proportion, +-1.96 sqrt(p(1-p)/n)
    p = sums["random"].mean("sr")
    half = 1.96 * np.sqrt(p * (1 - p) / 2349)
    low, high = sums["random"].interval("sr")
    assert abs((high - low) / 2 - half) < 0.15 * half


def test_identical_copy_and_shortest_against_random(val_unseen):
    table = {k: list(v) for k, v in val_unseen["table"].items()}
    rows = [i for i, a in enumerate(table["agent"]) if a == "random"]
    for name, values in table.items():
        values += [values[i] for i in rows] if name != "agent" else ["random copy"] * len(rows)
    results = compare(table, HEADLINE, replicates=B, seed=0)
    by_pair = {(r["a"], r["b"], r["metric"]): r for r in results}
    for metric in HEADLINE:
        same = by_pair[("random", "random copy", metric)]
        assert same["difference"] == 0.0 and same["interval"] == [0.0, 0.0] and not same["significant"]
        assert same["episodes"] == 2349 and same["p_value"] == 1.0
        better = by_pair[("shortest", "random", metric)]
        assert better["significant"] and better["p_holm"] < 0.05, better
        low, high = better["interval"]
        assert (low > 0) if metric != "ne" else (high < 0)  # shortest is better: higher scores, lower NE
        assert low <= better["difference"] <= high


def test_path_unit_and_breakdowns(val_unseen):
    table = dict(val_unseen["table"])
    table["length_bucket"] = length_buckets(table["length_m"])
    by_scan = breakdown(table, "scan", ["sr", "ne"], replicates=200)
    agents = np.array(table["agent"])
    for agent in ("shortest", "random", "stop"):
        mine = [r for r in by_scan if r["agent"] == agent]
        assert len(mine) == 11 and sum(r["episodes"] for r in mine) == 2349
    scans = np.array(table["scan"])
    sr = np.array(table["sr"])
    for r in by_scan:
        rows = (scans == r["group"]) & (agents == r["agent"])
        assert r["sr"] == pytest.approx(sr[rows].mean(), rel=1e-12)
        assert r["sr_ci"][0] <= r["sr"] <= r["sr_ci"][1]
    by_length = breakdown(table, "length_bucket", ["sr"], replicates=200)
    assert {r["group"] for r in by_length} <= {"<8 m", "8-10 m", "10-12 m", "12-14 m", ">=14 m"}
    assert sum(r["episodes"] for r in by_length if r["agent"] == "random") == 2349
    with pytest.raises(ValueError, match="no such column"):
        breakdown(table, "floor", ["sr"], replicates=10)
    # resampling whole paths: each path's three instructions move together, and the random agent's
    # walks from one start are alike, so the interval is not narrower than the episode-unit one
    episode_unit = agent_sums(table, ["ndtw"], replicates=B)["random"].interval("ndtw")
    path_unit = agent_sums(table, ["ndtw"], replicates=B, unit="path")["random"].interval("ndtw")
    assert path_unit[1] - path_unit[0] > 0.9 * (episode_unit[1] - episode_unit[0])
