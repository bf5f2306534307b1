"""The CVDN metrics on hand-worked distance matrices: every rule of `vlnkit.evaluation.cvdn` with its number."""

from __future__ import annotations

import numpy as np
import pytest

from vlnkit.evaluation.cvdn import (
    CVDN_EVAL_METRICS,
    EVALUATOR_KEYS,
    evaluator_summary,
    first_non_edges,
    flat_indices,
    matrix_distance,
    nearest,
    score_cvdn,
)


def line(n: int, step: float = 1.0) -> np.ndarray:
    """Distances of n nodes on a line, `step` metres apart."""
    x = np.arange(n) * step
    return np.abs(x[:, None] - x[None, :])


def one(d, target, planner_goal, ends, query) -> dict[str, float]:
    s = score_cvdn(d, [target], np.array([planner_goal]), [ends], [query])
    return {m: float(s[m][0]) for m in CVDN_EVAL_METRICS}


def test_stopping_at_the_goal_is_success_with_spl_one():
    s = one(line(5), [0, 1, 2, 3], 3, [4], [0, 1, 2, 3])
    assert s == {"pl": 3.0, "ne": 0.0, "one": 0.0, "sr": 1.0, "osr": 1.0, "spl": 1.0, "ops": 1.0, "gp": 3.0, "sgp": 3.0}


def test_success_is_strictly_below_three_metres():
    # Standing still 3 m from the goal: NE = 3.0 exactly, which eval.py's `< 3.0` does not count.
    s = one(line(5), [0, 1, 2, 3], 3, [3], [0])
    assert (s["ne"], s["sr"], s["osr"], s["ops"], s["spl"]) == (3.0, 0.0, 0.0, 0.0, 0.0)
    s = one(line(5, 0.999), [0, 1, 2, 3], 3, [3], [0])
    assert (s["sr"], s["spl"]) == (1.0, 1.0)  # d(start, goal) > 0 and pl = 0: sp / max(0, sp)


def test_spl_when_the_start_is_the_goal():
    # eval.py: with a shortest distance of 0, SPL is 1 for not moving and 0 for any walk (even one back).
    assert one(line(3), [1], 1, [1], [1])["spl"] == 1.0
    s = one(line(3), [1], 1, [1], [1, 2, 1])
    assert (s["sr"], s["spl"], s["pl"]) == (1.0, 0.0, 2.0)


def test_revisits_and_repeats():
    s = one(line(5), [0, 1, 2, 3], 3, [4], [0, 0, 1, 2, 3, 3, 2, 1])
    assert s["pl"] == 5.0 and s["ne"] == 2.0 and s["one"] == 0.0
    assert s["spl"] == pytest.approx(3 / 5)
    assert s["gp"] == 4.0 - 3.0


def test_oracle_path_success_uses_the_planner_goal_and_osr_the_target_goal():
    # Target (e.g. the player's path) ends at 4, the planner's goal is 0: passing near 0 is oracle path success.
    s = one(line(9), [0, 1, 2, 3, 4], 0, [8], [0, 1, 2, 3, 4, 5, 6, 7, 8])
    assert (s["osr"], s["ops"], s["sr"]) == (1.0, 1.0, 0.0)
    s = one(line(9), [4, 5], 0, [8], [4, 5, 6])
    assert (s["osr"], s["ops"]) == (1.0, 0.0)


def test_goal_progress_is_against_the_nearest_end_pano_and_may_be_negative():
    s = one(line(9), [4, 5], 5, [0, 8], [4, 5, 6, 7])
    assert s["gp"] == 4.0 - 1.0
    s = one(line(9), [4, 5], 5, [8], [4, 3, 2])
    assert s["gp"] == 4.0 - 6.0 and s["sgp"] == 0.0


def test_unreachable_goals_give_infinite_distances_not_errors():
    d = line(3)
    d[2, :2] = d[:2, 2] = np.inf  # node 2 in another component
    s = one(d, [0, 2], 2, [2], [0, 1])
    assert s["ne"] == np.inf and s["sr"] == 0.0 and s["spl"] == 0.0
    assert np.isnan(s["gp"])  # inf - inf: goal progress is undefined with no end pano in reach


def test_first_non_edges():
    adj = np.zeros((4, 4), bool)
    adj[[0, 1, 2], [1, 2, 3]] = adj[[1, 2, 3], [0, 1, 2]] = True
    paths = [[0, 1, 2, 3], [0, 0, 1, 3, 1], [2, 0], [3], [1, 1, 1], [2, 1]]
    assert first_non_edges(adj, *flat_indices(paths)).tolist() == [-1, 2, 0, -1, -1, -1]
    # a path's last node and the next path's first are not a move (3 -> 0 would be no edge)
    assert first_non_edges(adj, *flat_indices([[2, 3], [0, 1]])).tolist() == [-1, -1]
    assert first_non_edges(lambda e, a, b: adj[a, b], *flat_indices(paths)).tolist() == [-1, 2, 0, -1, -1, -1]
    assert first_non_edges(adj, *flat_indices([])).tolist() == []


def test_nearest_keeps_the_evaluators_orientation():
    d = np.array([[0.0, 1.0], [2.0, 0.0]])  # an asymmetric table shows which row is read
    offsets, values = flat_indices([[0, 1], [1]])
    assert nearest(matrix_distance(d), offsets, values, np.array([1, 0])).tolist() == [0.0, 2.0]
    assert nearest(matrix_distance(d), offsets, values, np.array([1, 0]), towards=False).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="episode #1 has no nodes"):
        nearest(matrix_distance(d), np.array([0, 1, 1]), np.array([0]), np.array([0, 0]))


def test_the_inputs_must_agree_in_number():
    with pytest.raises(ValueError, match="one of each per episode"):
        score_cvdn(line(3), [[0, 1]], np.array([1, 2]), [[1]], [[0]])
    with pytest.raises(ValueError, match="an episode has no end panos"):
        score_cvdn(line(3), [[0, 1]], np.array([1]), [[]], [[0]])


def test_evaluator_summary_uses_the_evaluators_keys():
    s = score_cvdn(line(5), [[0, 1, 2, 3], [0, 1]], np.array([3, 1]), [[4], [4]], [[0, 1, 2, 3], [0]])
    summary = evaluator_summary(s)
    assert list(summary) == list(EVALUATOR_KEYS.values())
    # The second episode stays 1 m from its goal: success, and SPL = 1 / max(0, 1).
    assert summary["success_rate"] == 1.0 and summary["length"] == 1.5 and summary["spl"] == 1.0
    assert summary["dist_to_end_reduction"] == 1.5 and summary["sc_dr"] == 1.5
