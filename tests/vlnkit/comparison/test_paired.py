"""Paired differences, the bootstrap p-value, Holm's correction and the tie marks, by hand."""

from __future__ import annotations

import numpy as np

from vlnkit.comparison import compare, comparison_rows, holm, rank, ties
from vlnkit.comparison.paired import PairedSums
from vlnkit.comparison.resampling import episode_keys, poisson_weights


def test_holm_by_hand():
    # Holm 1979: sorted p 0.01, 0.02, 0.03, 0.04 times 4, 3, 2, 1 = 0.04, 0.06, 0.06, 0.04 -> monotone 0.04, 0.06, 0.06, 0.06
    assert holm([0.04, 0.01, 0.03, 0.02]) == [0.06, 0.04, 0.06, 0.06]
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == []


def test_identical_copy_is_zero_and_not_significant():
    rng = np.random.default_rng(3)
    n = 400
    table = {
        "agent": ["x"] * n + ["copy"] * n,
        "instr_id": [f"{i}_0" for i in range(n)] * 2,
        "scan": ["s"] * 2 * n,
        "sr": np.tile((rng.random(n) < 0.4).astype(float), 2),
        "ne": np.tile(rng.exponential(5.0, n), 2),
    }
    for row in compare(table, ["sr", "ne"], replicates=300):
        assert row["difference"] == 0.0 and row["interval"] == [0.0, 0.0]
        assert row["p_value"] == 1.0 and row["p_holm"] == 1.0 and not row["significant"]
        assert row["episodes"] == n


def test_p_value_is_the_centred_bootstrap_tail():
    rng = np.random.default_rng(4)
    n = 300
    a, b = rng.random(n), rng.random(n) + 0.05
    w = poisson_weights(episode_keys([f"{i}_0" for i in range(n)]), 500, seed=0)
    pair = PairedSums.of("a", "b", {"m": a}, {"m": b}, w)
    row = comparison_rows([pair], ["m"])[0]
    d = a.mean() - b.mean()
    d_b = (w * a[:, None]).sum(0) / w.sum(0) - (w * b[:, None]).sum(0) / w.sum(0)
    assert abs(row["difference"] - d) < 1e-12
    expected = (1 + np.sum(np.abs(d_b - d) >= abs(d) - 1e-12)) / 501
    assert abs(row["p_value"] - expected) < 2 / 501  # float ties at the boundary aside
    lo, hi = np.quantile(d_b, [0.025, 0.975])
    assert abs(row["interval"][0] - lo) < 1e-9 and abs(row["interval"][1] - hi) < 1e-9
    assert row["significant"] == (row["p_holm"] < 0.05)


def test_common_episodes_only_and_nulls_dropped_per_pair():
    table = {
        "agent": ["a", "a", "a", "b", "b"],
        "instr_id": ["1_0", "2_0", "3_0", "2_0", "3_0"],
        "scan": ["s"] * 5,
        "ne": [1.0, 2.0, None, 5.0, 4.0],
    }
    (row,) = compare(table, ["ne"], replicates=20)
    assert row["episodes"] == 1 and row["difference"] == 2.0 - 5.0  # only 2_0: 3_0 is null for a
    (row,) = compare(table, ["ne"], baseline="a", replicates=20)
    assert (row["a"], row["b"]) == ("b", "a")


def test_ties_follow_the_ranking():
    means = {"x": {"sr": 0.60}, "y": {"sr": 0.61}, "z": {"sr": 0.30}}
    order = rank(means, by=("sr",))
    assert order == ["y", "x", "z"]
    rows = [
        {"a": "x", "b": "y", "metric": "sr", "p_value": 0.4, "p_holm": 0.8, "significant": False},
        {"a": "x", "b": "z", "metric": "sr", "p_value": 0.001, "p_holm": 0.002, "significant": True},
    ]
    assert ties(order, rows, "sr") == {"y": False, "x": True, "z": False}
    assert ties(order, rows[:1], "sr")["z"] is None


def test_adjacent_ties_correct_over_the_adjacent_pairs_only():
    """Holm over the two adjacent pairs (p 0.02 and 0.03 -> 0.04 and 0.04: both steps real), where the rows'
    own correction over all three pairs (0.06, 0.06) would have called both ties."""
    from vlnkit.comparison import adjacent_ties

    rows = [
        {"a": "x", "b": "y", "metric": "sr", "p_value": 0.02, "p_holm": 0.06, "significant": False},
        {"a": "y", "b": "z", "metric": "sr", "p_value": 0.03, "p_holm": 0.06, "significant": False},
        {"a": "x", "b": "z", "metric": "sr", "p_value": 0.001, "p_holm": 0.003, "significant": True},
        {"a": "x", "b": "y", "metric": "spl", "p_value": 0.9, "p_holm": 0.9, "significant": False},
    ]
    assert ties(["x", "y", "z"], rows, "sr") == {"x": False, "y": True, "z": True}
    assert adjacent_ties(["x", "y", "z"], rows, "sr") == {"x": False, "y": False, "z": False}
    assert adjacent_ties(["x", "y", "z"], rows, "sr", confidence=0.99) == {"x": False, "y": True, "z": True}
    assert adjacent_ties(["z", "x", "y"], rows, "sr")["x"] is False  # one adjacent pair: 0.001, no correction
    assert adjacent_ties(["x", "y", "z"], rows[:1], "sr")["z"] is None  # no row for (y, z): unknown
    assert rows[0]["p_holm"] == 0.06  # the rows themselves are left as they were
