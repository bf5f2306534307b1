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
from vlnkit.captioning.corpus import MAX_ORDER, build
from vlnkit.captioning.ngrams import ngram_counts, ngram_ids
from vlnkit.captioning.scores import METRICS, score_set

WORDS = st.sampled_from(["a", "b", "c", "d", "the", "left"])
CAPTION = st.lists(WORDS, max_size=9)
ITEMS = st.lists(st.tuples(CAPTION, st.lists(CAPTION, min_size=1, max_size=3)), min_size=1, max_size=8)


def _unique_ids(words, offsets, max_order=MAX_ORDER):
    """The numbering `ngram_ids` must give, the plain way: `np.unique` over (previous id, next word) pairs."""
    caption = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    index = np.arange(len(words)) - offsets[:-1][caption]
    length = np.diff(offsets)[caption]
    width = int(words.max(initial=0)) + 1
    gram, out = words, [(words, None)]
    for order in range(2, max_order + 1):
        fits = np.flatnonzero(index + order <= length)
        _, first, dense = np.unique(
            gram[fits] * width + words[fits + order - 1], return_index=True, return_inverse=True
        )
        gram = np.full(len(words), -1, np.int64)
        gram[fits] = dense
        out.append((gram, fits[first]))
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), max_size=12), max_size=10))
def test_ngram_ids_are_np_unique_numbering(captions):
    words = np.array([w for c in captions for w in c], np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in captions])]).astype(np.int64)
    for order, ((gram, first), (want, want_first)) in enumerate(
        zip(ngram_ids(words, offsets), _unique_ids(words, offsets)), 1
    ):
        assert gram.tolist() == want.tolist(), order
        if want_first is not None:
            assert first.tolist() == want_first.tolist(), order


def test_ngram_ids_grow_their_hash_table():
    """Far more distinct n-grams than the table's first size (1024), in captions of every length."""
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 120, 800)
    words = rng.integers(0, 300, int(lengths.sum()))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    got, want = ngram_ids(words, offsets), _unique_ids(words, offsets)
    assert int(got[3][0].max()) > 10_000
    for (gram, first), (want_gram, want_first) in zip(got[1:], want[1:]):
        assert np.array_equal(gram, want_gram) and np.array_equal(first, want_first)


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


def test_ngram_counts_of_long_and_repetitive_captions():
    """Captions past the insertion sort's 64 (sorted another way) and runs of a repeated word followed by
    words in decreasing order (the rows order n inherits from order n - 1 most out of order)."""
    rng = np.random.default_rng(5)
    captions = [[f"w{x}" for x in rng.integers(0, 40, n)] for n in (0, 1, 3, 64, 65, 200, 30)]
    captions.append([w for k in range(30, 0, -1) for w in ("a", f"w{k}", "a", "a")])
    hyps, refs = captions[:3], [[c] for c in captions[3:6]] + [captions[6:]]  # 3 items, the last with 3 refs
    hyps = hyps + [[]]
    tok = build(hyps, refs)
    words = np.concatenate([tok.hyp_words, tok.ref_words])
    offsets = np.concatenate([tok.hyp_offsets, tok.ref_offsets[1:] + tok.hyp_offsets[-1]])
    caption = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    hyp, ref = ngram_counts(tok)
    for order, (gram, _) in enumerate(_unique_ids(words, offsets), start=1):
        fits = gram >= 0
        key, want_count = np.unique(caption[fits] * (gram.max() + 1) + gram[fits], return_counts=True)
        h, r = hyp[order - 1], ref[order - 1]
        got_caption = np.concatenate([h.caption, r.caption + tok.n_items])
        got_key = got_caption * (gram.max() + 1) + np.concatenate([h.ngram, r.ngram])
        assert np.array_equal(got_key, key) and np.array_equal(np.concatenate([h.count, r.count]), want_count)
