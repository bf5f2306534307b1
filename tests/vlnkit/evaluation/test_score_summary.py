"""The score summary from totals and bootstrap sums: agent blocks, the pairs the job sums, tie marks judged on
the adjacent pairs of the ranking (Holm over that family, by hand) and breakdowns in natural order."""

import numpy as np
import pytest

from vlnkit.comparison.accumulate import slice_sums
from vlnkit.comparison.episodes import compare, length_labels
from vlnkit.evaluation.batch import totals
from vlnkit.evaluation.common import METRICS
from vlnkit.evaluation.score_summary import (
    agent_key,
    bootstrap_pairs,
    language_key,
    ordered_breakdowns,
    score_summary,
    tie_marks,
)


def test_agent_blocks_and_languages_from_totals():
    summed = {}
    for agent, values, language in (("a", [1.0, 0.0, 1.0], "hi-IN"), ("b", [0.0, np.inf], "en-US")):
        own = totals({m: np.asarray(values) for m in METRICS})
        summed.update({agent_key(agent, k): v for k, v in own.items()})
        summed.update({agent_key(agent, language_key(language, k)): v for k, v in own.items()})
    summed[agent_key("a", "predictions_read")] = 3
    summed["reference_episodes"] = 3
    summary = score_summary({"dataset": ["d.json"]}, summed, ["a", "b"])
    a, b = summary["agents"]["a"], summary["agents"]["b"]
    assert a["metrics"]["sr"] == pytest.approx(2 / 3) and a["predictions_read"] == 3 and b["predictions_read"] == 0
    assert b["metrics"]["ne"] == 0.0 and b["null_counts"]["ne"] == 1
    assert a["by_language"] == {"hi-IN": {"count": 3, "metrics": a["metrics"]}}
    assert "count" not in summary and [r["agent"] for r in summary["leaderboard"]] == ["a", "b"]
    assert "comparisons" not in summary and "bootstrap" not in summary


def test_the_job_sums_every_pair_with_the_asked_ones_first_and_oriented_as_asked():
    agents = ["w", "x", "y", "z"]
    assert bootstrap_pairs(agents) == [("w", "x"), ("w", "y"), ("w", "z"), ("x", "y"), ("x", "z"), ("y", "z")]
    pairs = bootstrap_pairs(agents, baseline="x")
    assert pairs[:3] == [("w", "x"), ("y", "x"), ("z", "x")]
    assert set(map(frozenset, pairs)) == set(map(frozenset, bootstrap_pairs(agents))) and len(pairs) == 6


def episode_table(rng, agents: dict[str, float], n=60):
    """Per agent, n episodes of SPL drawn around its level (the same episode ids for every agent)."""
    table = {"agent": [], "instr_id": [], "scan": [], **{m: [] for m in METRICS}}
    base = rng.random(n)
    for agent, level in agents.items():
        spl = np.clip(base * 0.2 + level + rng.normal(0, 0.15, n), 0, 1)
        table["agent"] += [agent] * n
        table["instr_id"] += [f"{i}_0" for i in range(n)]
        table["scan"] += [f"s{i % 3}" for i in range(n)]
        for m in METRICS:
            table[m] += list(spl if m in ("spl", "sr") else rng.random(n))
    return table


@pytest.mark.parametrize("baseline", [None, "d", "b"])
def test_tie_marks_use_holm_over_the_adjacent_pairs_whatever_the_baseline(baseline):
    rng = np.random.default_rng(3)
    table = episode_table(rng, {"a": 0.50, "b": 0.48, "c": 0.30, "d": 0.29})
    agents = ["a", "b", "c", "d"]
    sums = slice_sums(table, METRICS, replicates=400, seed=1, pairs=bootstrap_pairs(agents, baseline))
    summed = {}
    for agent in agents:
        rows = [i for i, a in enumerate(table["agent"]) if a == agent]
        own = totals({m: np.asarray(table[m])[rows] for m in METRICS})
        summed.update({agent_key(agent, k): v for k, v in own.items()})
    options = {"confidence": 0.95, "baseline": baseline}
    summary = score_summary({"dataset": []}, summed, agents, sums, options)
    ranking = [r["agent"] for r in summary["leaderboard"]]
    assert ranking == ["a", "b", "c", "d"]
    tied = {r["agent"]: r["tied_with_above"] for r in summary["leaderboard"]}
    # By hand: each adjacent pair on its own, Holm over the three p-values.
    p = np.array([compare({k: [v[i] for i in range(len(table["agent"])) if table["agent"][i] in pair]
                           for k, v in table.items()}, ["spl"], replicates=400, seed=1)[0]["p_value"]
                  for pair in (("a", "b"), ("b", "c"), ("c", "d"))])  # fmt: skip
    order = np.argsort(p, kind="stable")
    p_holm = np.empty(3)
    p_holm[order] = np.maximum.accumulate(np.minimum(1.0, p[order] * np.array([3, 2, 1])))
    assert [tied[a] for a in ranking] == [False, *(bool(q >= 0.05) for q in p_holm)]
    assert tied["b"] is True and tied["c"] is False and tied["d"] is True  # the data gives both kinds
    assert tie_marks(sums, ranking) == tied
    reported = {(r["a"], r["b"]) for r in summary["comparisons"]}
    if baseline is None:
        assert reported == {(a, b) for i, a in enumerate(agents) for b in agents[i + 1 :]}
    else:
        assert reported == {(a, baseline) for a in agents if a != baseline}


def test_breakdown_groups_in_natural_order():
    labels = length_labels()
    rows = [{"group": g, "agent": a} for g in reversed(labels) for a in ("y", "x")]
    out = ordered_breakdowns({"reference_length": rows, "scan": [{"group": g, "agent": "x"} for g in ("b", "a", "C")]})
    assert [(r["group"], r["agent"]) for r in out["reference_length"]] == [(g, a) for g in labels for a in ("x", "y")]
    assert [r["group"] for r in out["scan"]] == ["C", "a", "b"]
