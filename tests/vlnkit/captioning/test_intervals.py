"""Bootstrap intervals from sufficient statistics, and paired comparisons of systems."""

from __future__ import annotations

import numpy as np
import pytest

from tests.vlnkit.captioning import shared_sets
from vlnkit.captioning.bleu import BleuStats, corpus_bleu
from vlnkit.captioning.intervals import SystemItems, compare, path_weights, replicate_scores, system_intervals
from vlnkit.captioning.ptb import tokenize
from vlnkit.captioning.scores import score_set


def _system(ids, hyps, refs) -> SystemItems:
    s = score_set([tokenize(h) for h in hyps], [[tokenize(r) for r in rs] for rs in refs])
    return SystemItems(np.array(ids), s.per_item, s.bleu_stats)


@pytest.fixture(scope="module")
def zhao(speaker_dir):
    return {k: _system(*v) for k, v in shared_sets.zhao_sets(speaker_dir, common=True).items()}


def test_replicate_bleu_is_bleu_of_the_resampled_set(zhao):
    """Replicate b's corpus BLEU from the weighted sufficient statistics = BLEU of the set with each item
    repeated w times (recomputed from scratch)."""
    items = zhao["speaker-lstm_greedy"]
    w = path_weights(items.path_ids, 3, seed=5)
    reps = replicate_scores(items, w)
    for b in range(3):
        k = w[:, b].astype(int)
        st = items.bleu
        repeated = BleuStats(
            np.repeat(st.testlen, k), np.repeat(st.reflen, k), np.repeat(st.guess, k, 0), np.repeat(st.correct, k, 0)
        )
        assert reps["bleu_4"][b] == pytest.approx(corpus_bleu(repeated)[3], rel=1e-12)
        assert reps["cider_d"][b] == pytest.approx(np.repeat(items.per_item["cider_d"], k).mean(), rel=1e-12)


def test_same_path_same_weights_across_systems(zhao):
    a, b = zhao["speaker-lstm_greedy"], zhao["speaker-gpt_beam"]
    oa, ob = np.argsort(a.path_ids), np.argsort(b.path_ids)  # the file lists each system's paths in its own order
    assert (a.path_ids[oa] == b.path_ids[ob]).all()
    assert (path_weights(a.path_ids, 50, 0)[oa] == path_weights(b.path_ids, 50, 0)[ob]).all()


def test_intervals_hold_the_point_and_comparisons_are_holm_corrected(zhao):
    out = system_intervals(zhao["speaker-lstm_greedy"], replicates=300, seed=0, confidence=0.95)
    for metric, row in out.items():
        assert row["interval"][0] <= row["score"] <= row["interval"][1], metric
    three = {k: zhao[k] for k in ["human-reference", "speaker-lstm_greedy", "speaker-gpt_beam"]}
    rows = compare(three, replicates=300, seed=0, confidence=0.95)
    assert len(rows) == 3 * 6
    for r in rows:
        assert r["p_holm"] >= r["p_value"] and 0 < r["p_value"] <= 1
    same = compare({"x": three["speaker-gpt_beam"], "y": three["speaker-gpt_beam"]}, 100, 0, 0.95)
    assert all(r["difference"] == 0 and r["p_value"] == 1 and not r["significant"] for r in same)
