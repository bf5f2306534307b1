"""Captions given as text (`corpus.build_texts`, `scores.score_texts`): split in Arrow exactly as Python's
`str.split()` and `str.split(" ")` split them, numbered as `build` numbers the split captions, and scored
as pycocoevalcap scores the same strings, whitespace of every kind included."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.oracles.coco_caption import reference_text_scores
from vlnkit.captioning.corpus import build, build_texts
from vlnkit.captioning.scores import METRICS, score_set, score_texts

# words, single and double spaces, and whitespace Python splits on but a space-only split does not
PIECES = st.sampled_from(["a", "b", "the", "left", "é", "日本", " ", "  ", "\t", "\n", "\xa0", "\u3000", "\x1c"])
TEXT = st.lists(PIECES, max_size=10).map("".join)
SPACED = st.lists(st.sampled_from(["a", "b", "the", "left", "é"]), max_size=9).map(" ".join)


def _items(caption):
    return st.lists(st.tuples(caption, st.lists(caption, min_size=1, max_size=3)), min_size=1, max_size=6)


def _assert_same(got, want):
    for name in ("hyp_words", "hyp_offsets", "ref_words", "ref_offsets", "ref_item"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and a.tolist() == b.tolist(), name
    assert got.vocabulary == want.vocabulary


def test_arrow_splits_on_pythons_whitespace_at_every_code_point():
    """`build_texts` relies on `utf8_split_whitespace`'s non-empty words being `str.split()`'s: checked for
    every code point UTF-8 can hold, alone between two words and alone in a caption."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for texts in ([f"a{c}b" for c in points], points):
        got = pc.utf8_split_whitespace(pa.array(texts)).to_pylist()
        wrong = [t for t, words in zip(texts, got) if [w for w in words if w] != t.split()]
        assert not wrong, [hex(ord(c)) for t in wrong[:10] for c in t]


@settings(max_examples=200, deadline=None)
@given(_items(TEXT))
def test_build_texts_is_build_of_both_splits(items):
    """The words are `build` of `split()`; ROUGE-L's are `build` of `split(" ")`, or the same object exactly
    when every caption is empty or splits alike both ways."""
    hyps, refs = [h for h, _ in items], [r for _, r in items]
    words, rouge = build_texts(hyps, refs)
    _assert_same(words, build([h.split() for h in hyps], [[r.split() for r in rs] for rs in refs]))
    captions = hyps + [r for rs in refs for r in rs]
    if all(c == "" or c.split(" ") == c.split() for c in captions):
        assert rouge is words
    else:
        _assert_same(rouge, build([h.split(" ") for h in hyps], [[r.split(" ") for r in rs] for rs in refs]))


@settings(max_examples=60, deadline=None)
@given(_items(TEXT))
def test_score_texts_against_pycocoevalcap_on_any_whitespace(items):
    hyps, refs = [h for h, _ in items], [r for _, r in items]
    assume(any(r.split() for rs in refs for r in rs))  # pycocoevalcap's CIDEr fails on a set with no reference word
    theirs, ours = reference_text_scores(hyps, refs), score_texts(hyps, refs)
    for m in METRICS:
        assert np.max(np.abs(ours.per_item[m] - theirs[m][1])) <= 1e-12, m
        assert abs(ours.corpus[m] - theirs[m][0]) <= 1e-12, m


@settings(max_examples=60, deadline=None)
@given(_items(SPACED))
def test_score_texts_is_score_set_bit_for_bit_on_single_spaced_text(items):
    hyps, refs = [h for h, _ in items], [r for _, r in items]
    a = score_texts(hyps, refs)
    b = score_set([h.split() for h in hyps], [[r.split() for r in rs] for rs in refs])
    for m in METRICS:
        assert a.per_item[m].tobytes() == b.per_item[m].tobytes(), m
    assert a.corpus == b.corpus


def test_a_lone_surrogate_is_split_by_python():
    """UTF-8 cannot hold a lone surrogate (JSON can carry one): such a set is split in Python, same result."""
    hyps, refs = ["go \ud800 left", "b"], [["go left \ud800"], ["b  b"]]
    words, _ = build_texts(hyps, refs)
    _assert_same(words, build([h.split() for h in hyps], [[r.split() for r in rs] for rs in refs]))
    theirs, ours = reference_text_scores(hyps, refs), score_texts(hyps, refs)
    assert all(abs(ours.corpus[m] - theirs[m][0]) <= 1e-12 for m in METRICS)


def test_mismatched_items_are_refused_by_name():
    import pytest

    with pytest.raises(ValueError, match="2 hypotheses but 1 reference lists"):
        build_texts(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="item 0 has no reference"):
        score_texts(["a"], [[]])
