import json
import random

import numpy as np
import pytest

from vlnkit.datasets.r2r import RecordError
from vlnkit.probes.scoring import (
    ScoreError,
    correct_mass,
    hierarchical_bootstrap,
    parse_agent_outputs,
    summarize_skills,
)


def test_correct_mass_sums_the_correct_actions():
    cands = ["a", "b", "c", "STOP"]
    assert correct_mass({"a": 0.5, "b": 0.25, "c": 0.25}, cands, ["a", "c"]) == (0.75, False)
    assert correct_mass({"STOP": 1.0}, cands, ["STOP"]) == (1.0, False)
    mass, renorm = correct_mass({"a": 2.0, "b": 2.0}, cands, ["a"])
    assert mass == 0.5 and renorm
    for probs, message in [
        ({"z": 1.0}, "not candidates"),
        ({"a": -0.1, "b": 1.1}, "probability of 'a' must be >= 0"),
        ({"a": float("nan")}, "probability of 'a' must be finite"),
        ({"a": "high"}, "probability of 'a' must be a number"),
        ({"a": 0.0}, "sum to 0"),
    ]:
        with pytest.raises(ScoreError, match=message):
            correct_mass(probs, cands, ["a"])


def test_parse_agent_outputs_jsonl_and_errors():
    text = '{"episode_id": "e1", "probs": {"STOP": 1}}\n\nnot json\n{"probs": {}}\n{"episode_id": "e2", "probs": {}}\n'
    out = list(parse_agent_outputs(text, "out.jsonl"))
    assert out[0] == ("e1", {"STOP": 1})
    errors = [e for e in out if isinstance(e, RecordError)]
    assert [e.record for e in errors] == ["line 3", "line 4", "line 5 (e2)"]
    assert list(parse_agent_outputs(json.dumps([{"episode_id": "x", "probs": {"a": 1}}]), "o.json")) == [
        ("x", {"a": 1})
    ]


def naive_bootstrap(values, scans, trajs, n_boot, seed):
    """The two-stage resampling written out directly, for comparison."""
    rng = random.Random(seed)
    by_scan = {}
    for v, s, t in zip(values, scans, trajs):
        by_scan.setdefault(s, {}).setdefault(t, []).append(v)
    scan_ids = sorted(by_scan)
    out = []
    for _ in range(n_boot):
        picked = []
        for _ in scan_ids:
            trajs_of = by_scan[rng.choice(scan_ids)]
            keys = sorted(trajs_of)
            for _ in keys:
                picked += trajs_of[rng.choice(keys)]
        out.append(sum(picked) / len(picked))
    return np.array(out)


def clustered_data(seed=0):
    rng = np.random.default_rng(seed)
    values, scans, trajs = [], [], []
    for s in range(6):
        scan_effect = rng.normal(0, 0.2)
        for t in range(int(rng.integers(1, 6))):
            traj_effect = rng.normal(0, 0.1)
            for _ in range(int(rng.integers(1, 5))):
                values.append(0.5 + scan_effect + traj_effect + rng.normal(0, 0.05))
                scans.append(f"s{s}")
                trajs.append(t)
    return values, scans, trajs


def test_vectorized_bootstrap_matches_the_naive_two_stage_resampling_in_distribution():
    values, scans, trajs = clustered_data()
    fast = hierarchical_bootstrap(values, scans, trajs, 4000, np.random.default_rng(1))
    slow = naive_bootstrap(values, scans, trajs, 4000, 1)
    assert fast.mean() == pytest.approx(slow.mean(), abs=0.01)
    assert fast.std() == pytest.approx(slow.std(), rel=0.08)
    assert np.quantile(fast, 0.025) == pytest.approx(np.quantile(slow, 0.025), abs=0.02)
    # Resampling only episodes would ignore the clustering and give a far narrower interval.
    iid = np.random.default_rng(2).choice(values, size=(4000, len(values))).mean(axis=1)
    assert fast.std() > 2 * iid.std()


def test_bootstrap_edge_cases_and_determinism():
    assert np.all(hierarchical_bootstrap([0.3, 0.3, 0.3], ["a", "b", "b"], [1, 2, 3], 50) == pytest.approx(0.3))
    assert np.isnan(hierarchical_bootstrap([], [], [], 5)).all()
    values, scans, trajs = clustered_data(3)
    a = hierarchical_bootstrap(values, scans, trajs, 100, np.random.default_rng(7))
    b = hierarchical_bootstrap(values, scans, trajs, 100, np.random.default_rng(7))
    assert np.array_equal(a, b)


# ---------------------------------------------------------------------------- synthetic agents
def episodes(seed=0, n=300):
    """Direction episodes in 5 scans with known correct sets and relative headings."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        n_nb = rng.randint(3, 6)
        rel = [rng.uniform(-180, 180) for _ in range(n_nb)]
        region = rng.choice(["left", "forward"])
        cands = [f"v{k}_{j}" for j in range(n_nb)] + ["STOP"]
        correct = [c for c, r in zip(cands, rel) if (abs(r) <= 15 if region == "forward" else -90 <= r < -15)]
        if not correct:
            correct, rel[0] = [cands[0]], (0.0 if region == "forward" else -45.0)
        for variant in ("intervention", "control"):
            out.append(
                {
                    "pair_id": f"p{k}",
                    "variant": variant,
                    "skill": f"direction:{region}",
                    "scan": f"s{k % 5}",
                    "trajectory": str(k // 3),
                    "candidates": cands,
                    "correct": correct,
                    "rel": rel,
                }
            )
    return out


def score(eps, agent, seed=0):
    rows = []
    for e in eps:
        mass, _ = correct_mass(agent(e), e["candidates"], e["correct"])
        rows.append({**e, "mass": mass})
    return summarize_skills(rows, seed=seed, n_boot=300)


def oracle(e):
    return {c: 1 / len(e["correct"]) for c in e["correct"]}


def uniform(e):
    return {c: 1 / len(e["candidates"]) for c in e["candidates"]}


def forward_biased(e):
    """80% on the neighbour straightest ahead, the rest uniform over all actions."""
    k = int(np.argmin(np.abs(e["rel"])))
    probs = {c: 0.2 / len(e["candidates"]) for c in e["candidates"]}
    probs[e["candidates"][k]] += 0.8
    return probs


def test_oracle_agent_scores_one_with_a_degenerate_interval():
    s = score(episodes(), oracle)
    for skill in ("direction:left", "direction:forward"):
        assert s[skill]["score"] == 1.0 and s[skill]["ci"] == [1.0, 1.0] and s[skill]["shift"] == 0.0


def test_uniform_agent_scores_the_expected_fraction():
    eps = episodes()
    s = score(eps, uniform)
    for skill in ("direction:left", "direction:forward"):
        inter = [e for e in eps if e["skill"] == skill and e["variant"] == "intervention"]
        expected = sum(len(e["correct"]) / len(e["candidates"]) for e in inter) / len(inter)
        assert s[skill]["score"] == pytest.approx(expected)
        assert s[skill]["ci"][0] <= expected <= s[skill]["ci"][1]
        assert s[skill]["episodes"] == len(inter) and s[skill]["pairs"] == len(inter)


def test_forward_biased_agent_shows_its_bias():
    s = score(episodes(), forward_biased)
    assert s["direction:forward"]["score"] > 0.8
    assert s["direction:left"]["score"] < 0.5
    assert s["direction:left"]["ci"][1] < s["direction:forward"]["ci"][0]


def test_shift_against_control_and_order_independence():
    eps = episodes(1)

    def obedient(e):  # follows the appended text only in the intervention
        return oracle(e) if e["variant"] == "intervention" else uniform(e)

    rows = [{**e, "mass": correct_mass(obedient(e), e["candidates"], e["correct"])[0]} for e in eps]
    s = summarize_skills(rows, seed=4, n_boot=200)
    for skill, entry in s.items():
        ctrl = [r["mass"] for r in rows if r["skill"] == skill and r["variant"] == "control"]
        assert entry["shift"] == pytest.approx(1 - np.mean(ctrl))
        assert entry["control_score"] == pytest.approx(np.mean(ctrl))
        assert entry["shift_ci"][0] > 0
    shuffled = rows[:]
    random.Random(0).shuffle(shuffled)
    assert summarize_skills(shuffled, seed=4, n_boot=200) == s
    # An unpaired intervention counts in the score but not in the shift.
    partial = summarize_skills([r for r in rows if not (r["pair_id"] == "p0" and r["variant"] == "control")], 4, 50)
    skill = rows[0]["skill"]
    assert partial[skill]["pairs"] == s[skill]["pairs"] - 1 and partial[skill]["episodes"] == s[skill]["episodes"]


# ----------------------------------------------------------------------------- the class: unusable probabilities
BAD_PROBABILITIES = {
    "true": (True, "must be a number, got True"),
    "false": (False, "must be a number, got False"),
    "string": ("0.5", "must be a number, got '0.5'"),
    "null": (None, "must be a number, got None"),
    "list": ([0.5], "must be a number, got list"),
    "object": ({"p": 0.5}, "must be a number, got dict"),
    "NaN": (float("nan"), "must be finite, got nan"),
    "Infinity": (float("inf"), "must be finite, got inf"),
    "-Infinity": (float("-inf"), "must be finite, got -inf"),
    "1e400 (reads as inf)": ("RAW:1e400", "must be finite, got inf"),
    "400-digit integer": (10**400, "overflows a float (an integer of 401 digits)"),
    "negative": (-1e-12, "must be >= 0"),
    "negative zero-ish int": (-1, "must be >= 0"),
}


def _jsonl(probs_text: str) -> str:
    return '{"episode_id": "ok", "probs": {"STOP": 1}}\n{"episode_id": "e", "probs": ' + probs_text + "}\n"


@pytest.mark.parametrize("name", sorted(BAD_PROBABILITIES))
def test_every_unusable_probability_is_a_dead_letter_with_its_reason(name):
    value, reason = BAD_PROBABILITIES[name]
    raw = value[4:] if isinstance(value, str) and value.startswith("RAW:") else json.dumps(value)
    probs_text = '{"a": 0.5, "b": ' + raw + "}"
    out = list(parse_agent_outputs(_jsonl(probs_text), "out.jsonl"))
    assert out[0] == ("ok", {"STOP": 1})
    (err,) = out[1:]
    assert isinstance(err, RecordError) and err.stage == "agent_output"
    assert err.record == "line 2 (e)"
    assert err.reason.startswith("probability of 'b' ") and reason in err.reason, err.reason
    # The scorer refuses the same output the same way (never an exception other than ScoreError).
    with pytest.raises(ScoreError, match="probability of 'b'"):
        correct_mass(json.loads(probs_text), ["a", "b", "STOP"], ["a"])


def test_a_sum_that_overflows_is_refused_not_scored_as_zero():
    probs = {"a": 1e308, "b": 1e308}
    with pytest.raises(ScoreError, match="sum overflows"):
        correct_mass(probs, ["a", "b"], ["a"])
    (err,) = parse_agent_outputs(json.dumps({"episode_id": "e", "probs": probs}), "o.jsonl")
    assert "sum overflows" in err.reason


def test_large_but_finite_probabilities_are_renormalized_exactly():
    mass, renormalized = correct_mass({"a": 3e307, "b": 1e307}, ["a", "b"], ["a"])
    assert mass == 0.75 and renormalized


def test_agent_outputs_with_a_bom_or_indented_are_read():
    rows = [{"episode_id": "x", "probs": {"a": 1}}, {"episode_id": "y", "probs": {"STOP": 0.5, "a": 0.5}}]
    for text in ("\ufeff" + json.dumps(rows, indent=2), "\ufeff" + "\n".join(json.dumps(r) for r in rows)):
        assert list(parse_agent_outputs(text, "o")) == [("x", {"a": 1}), ("y", {"STOP": 0.5, "a": 0.5})]
