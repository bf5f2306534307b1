"""A set scored in batches (document frequencies merged from the batches' Arrow tables, then each batch
scored with them) gives the rows and corpus scores of `score_set` on the whole set, and pycocoevalcap's."""

from __future__ import annotations

import numpy as np
import pytest

from tests.oracles.coco_caption import reference_scores
from tests.vlnkit.captioning import shared_sets
from vlnkit.captioning.batches import (
    batch_document_frequencies,
    corpus_sums,
    frequency_lookup,
    merge_frequencies,
    score_batch,
)
from vlnkit.captioning.bleu import corpus_bleu
from vlnkit.captioning.ptb import tokenize
from vlnkit.captioning.scores import METRICS, score_set
from vlnkit.captioning.summary import corpus_from_sums


def _batched(hyps, refs, size):
    """Every metric per item and the corpus scores, the set cut into batches of `size` (the order shuffled
    first, so batches are not runs of one path), frequencies merged pairwise as a combiner would."""
    order = np.random.default_rng(7).permutation(len(hyps))
    parts = [order[k : k + size] for k in range(0, len(order), size)]
    tables = [batch_document_frequencies([refs[i] for i in p]) for p in parts]
    while len(tables) > 1:  # merged in pairs, in another grouping than the batches
        tables = [merge_frequencies(tables[k : k + 2]) for k in range(0, len(tables), 2)]
    lookup = frequency_lookup(tables[0])
    per_item = {m: np.empty(len(hyps)) for m in METRICS}
    sums = None
    for p in parts:
        scores = score_batch([hyps[i] for i in p], [refs[i] for i in p], lookup, len(hyps))
        for m in METRICS:
            per_item[m][p] = scores[m]
        s = corpus_sums(scores)
        sums = s if sums is None else {k: sums[k] + v for k, v in s.items()}
    return per_item, sums


@pytest.mark.parametrize("size", [1, 37, 512])
def test_batches_equal_score_set_and_pycocoevalcap(speaker_dir, size):
    _, hyps, refs = shared_sets.t5_greedy_set(speaker_dir)
    h, r = [tokenize(x) for x in hyps], [[tokenize(y) for y in rs] for rs in refs]
    whole = score_set(h, r)
    theirs = reference_scores(h, r)
    per_item, sums = _batched(h, r, size)
    bleu = corpus_bleu(whole.bleu_stats)
    pooled = {k: float(v[0]) for k, v in corpus_from_sums(sums).items()}
    for m in METRICS:
        assert np.max(np.abs(per_item[m] - whole.per_item[m])) <= 1e-12, m
        assert np.max(np.abs(per_item[m] - theirs[m][1])) <= 1e-12, m
        assert abs(pooled[m] - theirs[m][0]) <= 1e-12, m
    assert [pooled[f"bleu_{k + 1}"] for k in range(4)] == pytest.approx(list(bleu), abs=1e-15)


def test_frequency_tables_add_up():
    refs = [[["a", "b", "a"]], [["a", "c"], ["b", "a"]], [["d"]]]
    whole = frequency_lookup(batch_document_frequencies(refs))
    parts = merge_frequencies([batch_document_frequencies(refs[:1]), batch_document_frequencies(refs[1:])])
    assert frequency_lookup(parts) == whole
    assert whole["a"] == 2 and whole["b a"] == 2 and whole["a b"] == 1 and whole["a b a"] == 1 and whole["d"] == 1
    assert "c" in whole and "a b a c" not in whole
