"""The compiled n-gram paths (hash-numbered n-gram ids, per-caption counts, BLEU clipping, CIDEr-D products,
document frequencies) against independent computations: `np.unique`, `collections.Counter` over word
tuples, and pycocoevalcap 1.2 on small random sets (few words, so n-grams repeat and references tie)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.oracles.coco_caption import reference_scores
from vlnkit.captioning.batches import batch_document_frequencies, frequency_lookup, score_batch
from vlnkit.captioning.corpus import MAX_ORDER, build, dense_ranks, ngram_counts
from vlnkit.captioning.scores import METRICS, score_set

WORDS = st.sampled_from(["a", "b", "c", "d", "the", "left"])
CAPTION = st.lists(WORDS, max_size=9)
ITEMS = st.lists(st.tuples(CAPTION, st.lists(CAPTION, min_size=1, max_size=3)), min_size=1, max_size=8)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**62), max_size=60), st.integers(1, 4))
def test_dense_ranks_are_np_unique(keys, repeat):
    keys = np.array(keys * repeat, np.int64)
    ranks, first = dense_ranks(keys)
    _, want_first, want_ranks = np.unique(keys, return_index=True, return_inverse=True)
    assert ranks.tolist() == want_ranks.tolist() and first.tolist() == want_first.tolist()


def test_dense_ranks_grow_their_table():
    """Far more distinct keys than the table's first size (1024), with neighbours that share low bits."""
    rng = np.random.default_rng(3)
    keys = np.concatenate([np.arange(5000) << 20, rng.integers(0, 2**40, 20000), np.arange(5000) << 20])
    ranks, first = dense_ranks(keys)
    _, want_first, want_ranks = np.unique(keys, return_index=True, return_inverse=True)
    assert np.array_equal(ranks, want_ranks) and np.array_equal(first, want_first)


@settings(max_examples=100, deadline=None)
@given(ITEMS)
def test_ngram_counts_are_counters_of_word_tuples(items):
    hyps, refs = [h for h, _ in items], [r for _, r in items]
    tok = build(hyps, refs)
    hyp, ref = ngram_counts(tok)
    captions = hyps + [r for rs in refs for r in rs]
    for order in range(1, MAX_ORDER + 1):
        h, r = hyp[order - 1], ref[order - 1]
        caption = np.concatenate([h.caption, r.caption + len(hyps)])
        ngram, count = np.concatenate([h.ngram, r.ngram]), np.concatenate([h.count, r.count])
        assert np.all(np.diff(caption * (ngram.max(initial=0) + 1) + ngram) > 0)  # sorted by (caption, id)
        word_id = {w: i for i, w in enumerate(tok.vocabulary)}
        text: dict[int, tuple] = {}  # id -> word tuple, over the whole set
        for c, words in enumerate(captions):
            want = Counter(tuple(words[p : p + order]) for p in range(len(words) - order + 1))
            rows = caption == c
            got = dict(zip(ngram[rows].tolist(), count[rows].tolist()))
            assert len(got) == len(want)
            # a caption's ids in increasing order are its word tuples in the order of their word ids
            for g, gram in zip(sorted(got), sorted(want, key=lambda t: [word_id[w] for w in t])):
                assert text.setdefault(g, gram) == gram and got[g] == want[gram]
        ids = sorted(text)
        assert [text[g] for g in ids] == sorted(text.values(), key=lambda t: [word_id[w] for w in t])


def _assert_close(ours: dict, theirs: dict, corpus: dict | None = None):
    for m in METRICS:
        assert np.max(np.abs(ours[m] - theirs[m][1])) <= 1e-12, m
        if corpus is not None:
            assert abs(corpus[m] - theirs[m][0]) <= 1e-12, m


@settings(max_examples=60, deadline=None)
@given(ITEMS)
def test_score_set_and_score_batch_against_pycocoevalcap(items):
    hyps, refs = [h for h, _ in items], [r for _, r in items]
    assume(any(r for rs in refs for r in rs))  # pycocoevalcap's CIDEr fails on a set with no reference word
    theirs = reference_scores(hyps, refs)
    whole = score_set(hyps, refs)
    _assert_close(whole.per_item, theirs, whole.corpus)
    frequencies = frequency_lookup(batch_document_frequencies(refs))
    _assert_close(score_batch(hyps, refs, frequencies, len(hyps)), theirs)


@pytest.mark.parametrize(
    "hyps, refs",
    [([["a"]], [[["a"]]]), ([[]], [[["a", "b"]]]), ([["a", "b"], []], [[[]], [["b"]]])],
    ids=["one_word", "empty_hypothesis", "two_words_in_all"],
)
def test_sets_with_fewer_words_than_an_order(hyps, refs):
    """A set whose captions hold fewer than 3 words in all has no 4-gram anywhere (this raised before)."""
    whole = score_set(hyps, refs)
    _assert_close(whole.per_item, reference_scores(hyps, refs), whole.corpus)
