"""BLEU-1..4, ROUGE-L and CIDEr-D against pycocoevalcap 1.2's own scorers, on the shared sets.

The sets are checks/SOURCE.md's: the 13 zhao2023 systems with their own references and with the common
held-out references, the 8 acgg sets and the T5 greedy set. Both sides score the same tokens (this
package's tokenizer, checked against the official one in test_ptb.py); "equal" is to 1e-9.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.oracles.coco_caption import reference_scores
from tests.vlnkit.captioning import shared_sets
from vlnkit.captioning.ptb import tokenize
from vlnkit.captioning.scores import METRICS, score_set

TOLERANCE = 1e-9


def _tokens(hyps, refs):
    return [tokenize(h) for h in hyps], [[tokenize(r) for r in rs] for rs in refs]


def _max_diff(hyps, refs) -> dict[str, float]:
    h, r = _tokens(hyps, refs)
    ours = score_set(h, r)
    theirs = reference_scores(h, r)
    diffs = {}
    for metric in METRICS:
        corpus, items = theirs[metric]
        assert ours.per_item[metric].shape == items.shape
        diffs[metric] = max(abs(ours.corpus[metric] - corpus), float(np.max(np.abs(ours.per_item[metric] - items))))
    return diffs


@pytest.mark.parametrize("common", [False, True], ids=["own_refs", "common2refs"])
def test_zhao2023_thirteen_systems(speaker_dir, common):
    sets = shared_sets.zhao_sets(speaker_dir, common)
    assert len(sets) == 13
    for system, (_, hyps, refs) in sets.items():
        diffs = _max_diff(hyps, refs)
        assert max(diffs.values()) <= TOLERANCE, (system, diffs)


@pytest.mark.parametrize("name", shared_sets.ACGG)
def test_acgg_sets(speaker_dir, name):
    _, hyps, refs = shared_sets.acgg_set(speaker_dir, name)
    diffs = _max_diff(hyps, refs)
    assert max(diffs.values()) <= TOLERANCE, diffs


def test_t5_greedy_set(speaker_dir):
    _, hyps, refs = shared_sets.t5_greedy_set(speaker_dir)
    assert len(hyps) == 340
    diffs = _max_diff(hyps, refs)
    assert max(diffs.values()) <= TOLERANCE, diffs


def test_corner_cases_against_the_oracle():
    """Empty hypotheses and references, repeated words, ties of reference length, one-item sets."""
    hyps = [[], ["a"], ["a", "a", "a", "b"], ["x", "y", "z", "w", "v"], ["a", "b"]]
    refs = [[["a", "b"]], [[], ["a"]], [["a", "b", "a"], ["a", "a", "c", "d", "e"]], [["x", "y"], ["z", "w", "v", "u"]], [["b", "a"], ["a", "b"]]]  # fmt: skip
    diffs = _max_diff([" ".join(h) for h in hyps], [[" ".join(x) for x in r] for r in refs])
    assert max(diffs.values()) <= TOLERANCE, diffs
    single = _max_diff(["the cat sat"], [["the cat sat on the mat"]])
    assert max(single.values()) <= TOLERANCE, single
