"""The bit-parallel LCS of ROUGE-L against pycocoevalcap 1.2's own `my_lcs` (its row-by-row table), on
random word sequences of every length around the 64-bit words' boundaries (the carries between words)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pycocoevalcap.rouge.rouge import my_lcs

from vlnkit.captioning.rouge import _lcs_lengths

SEQUENCE = st.lists(st.integers(0, 4), max_size=150)


def _lcs(hyp, refs):
    """Our LCS of one hypothesis against each reference."""
    ref_words = np.array([w for r in refs for w in r], np.int64)
    ref_offsets = np.concatenate([[0], np.cumsum([len(r) for r in refs])]).astype(np.int64)
    hyp_offsets = np.array([0, len(hyp)], np.int64)
    item = np.zeros(len(refs), np.int64)
    return _lcs_lengths(np.array(hyp, np.int64), hyp_offsets, ref_words, ref_offsets, item, 5).tolist()


@settings(max_examples=200, deadline=None)
@given(SEQUENCE, st.lists(SEQUENCE, min_size=1, max_size=3))
def test_lcs_is_pycocoevalcap_my_lcs(hyp, refs):
    assert _lcs(hyp, refs) == [my_lcs(r, hyp) if r else 0 for r in refs]


def test_lcs_of_long_references():
    """References of 63 to 300 words (one to five 64-bit words), against short and long hypotheses."""
    rng = np.random.default_rng(11)
    for m in (63, 64, 65, 127, 128, 129, 300):
        for n in (0, 1, 40, 300):
            hyp, ref = rng.integers(0, 3, n).tolist(), rng.integers(0, 3, m).tolist()
            assert _lcs(hyp, [ref, ref[:5]]) == [my_lcs(ref, hyp), my_lcs(ref[:5], hyp)], (m, n)
