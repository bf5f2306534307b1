"""Kendall's tau-b against scipy, and its bootstrap on zhao2023's human outcomes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from vlnkit.captioning.agreement import instance_tau, multinomial_counts, system_tau, weighted_tau_b

values = st.lists(st.integers(0, 4), min_size=3, max_size=30)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_tau_b_is_scipys_with_ties(data):
    x = data.draw(values)
    y = data.draw(st.lists(st.integers(0, 4), min_size=len(x), max_size=len(x)))
    expected = kendalltau(x, y).statistic
    got = weighted_tau_b(x, y)
    assert (np.isnan(expected) and np.isnan(got)) or got == pytest.approx(expected, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_integer_weights_are_tau_b_of_the_resampled_data(data):
    """A replicate's weights (how often each unit is drawn) give tau-b of the data with repeats."""
    x = np.array(data.draw(values), float)
    y = np.array(data.draw(st.lists(st.integers(0, 4), min_size=len(x), max_size=len(x))), float)
    w = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(x), max_size=len(x))))
    expected = kendalltau(np.repeat(x, w), np.repeat(y, w)).statistic if w.sum() > 1 else np.nan
    got = weighted_tau_b(x, y, w[None, :].astype(float))[0]
    assert (np.isnan(expected) and np.isnan(got)) or got == pytest.approx(expected, abs=1e-12)


def test_bootstrap_counts_are_seeded_draws_of_n():
    c = multinomial_counts(7, 5, seed=3)
    assert c.shape == (5, 7) and (c.sum(axis=1) == 7).all()
    assert (c == multinomial_counts(7, 5, seed=3)).all()


def test_zhao2023_instance_and_system_level(speaker_dir):
    """On the 13 systems x 75 paths: tau-b between follower success and the quality rating, both levels."""
    data = json.loads((speaker_dir / "zhao2023_coop_human_eval" / "human_eval_dataset.json").read_text())
    systems = sorted(data)
    paths = sorted(data[systems[0]])
    nd = np.array([[data[s][p]["human_scores"]["ndtw"] for p in paths] for s in systems])
    q = np.array([[data[s][p]["human_scores"]["quality"] for p in paths] for s in systems], float)
    inst = instance_tau(q.ravel(), nd.ravel(), replicates=200, seed=1)
    assert inst["n"] == 975
    assert inst["tau_b"] == pytest.approx(kendalltau(q.ravel(), nd.ravel()).statistic, abs=1e-12)
    low, high = inst["interval"]
    assert low < inst["tau_b"] < high

    def mean_quality(weights):
        return (weights @ q.T) / weights.sum(axis=1, keepdims=True)

    sys_level = system_tau(mean_quality, nd, n_paths=len(paths), replicates=200, seed=1)
    assert sys_level["tau_b"] == pytest.approx(kendalltau(q.mean(1), nd.mean(1)).statistic, abs=1e-12)
    assert sys_level["n"] == 13 and sys_level["interval"][0] <= sys_level["tau_b"] <= sys_level["interval"][1]
