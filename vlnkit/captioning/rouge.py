"""ROUGE-L exactly as pycocoevalcap 1.2 computes it (`rouge/rouge.py`).

Per item (`Rouge.calc_score`, l. 42-68): for each reference, the longest common subsequence (LCS) of
words (`my_lcs`, l. 13-31); precision = LCS / hypothesis length and recall = LCS / reference length;
the best precision and the best recall are taken separately over the references (possibly from
different ones), and the score is (1 + b^2) P R / (R + b^2 P) with b = 1.2, 0 when either is 0. Words
are `caption.split(" ")`, so an empty caption is one empty word. The set's score is the mean.
"""

from __future__ import annotations

import numpy as np

from vlnkit.captioning.corpus import Tokenized
from vlnkit.compiled import njit

BETA = 1.2


@njit(cache=True, nogil=True)
def _lcs_lengths(hyp_words, hyp_offsets, ref_words, ref_offsets, ref_item):  # pragma: no cover - compiled
    out = np.zeros(len(ref_offsets) - 1, np.int64)
    row = np.zeros(1, np.int64)
    for r in range(len(ref_offsets) - 1):
        i = ref_item[r]
        a0, a1 = hyp_offsets[i], hyp_offsets[i + 1]
        b0, b1 = ref_offsets[r], ref_offsets[r + 1]
        m = b1 - b0
        if row.shape[0] < m + 1:
            row = np.zeros(m + 1, np.int64)
        for j in range(m + 1):
            row[j] = 0
        for p in range(a0, a1):
            diagonal = 0
            w = hyp_words[p]
            for j in range(1, m + 1):
                above = row[j]
                if ref_words[b0 + j - 1] == w:
                    row[j] = diagonal + 1
                elif row[j - 1] > above:
                    row[j] = row[j - 1]
                diagonal = above
        out[r] = row[m]
    return out


def _as_rouge_words(words: np.ndarray, offsets: np.ndarray, empty_id: int) -> tuple[np.ndarray, np.ndarray]:
    """`split(" ")`: an empty caption becomes one word, `empty_id`."""
    lengths = np.diff(offsets)
    if (lengths > 0).all():
        return words, offsets
    fixed = np.maximum(lengths, 1)
    new_offsets = np.concatenate([[0], np.cumsum(fixed)])
    out = np.full(int(new_offsets[-1]), empty_id, words.dtype)
    keep = np.repeat(lengths > 0, fixed)
    out[keep] = words
    return out, new_offsets


def rouge_l(tok: Tokenized) -> np.ndarray:
    """(items,): the reference's per-item ROUGE-L."""
    empty_id = len(tok.vocabulary)
    hw, ho = _as_rouge_words(tok.hyp_words, tok.hyp_offsets, empty_id)
    rw, ro = _as_rouge_words(tok.ref_words, tok.ref_offsets, empty_id)
    lcs = _lcs_lengths(hw, ho, rw, ro, tok.ref_item).astype(np.float64)
    hyp_len = np.diff(ho).astype(np.float64)[tok.ref_item]
    ref_len = np.diff(ro).astype(np.float64)
    precision, recall = lcs / hyp_len, lcs / ref_len
    p = np.full(tok.n_items, -np.inf)
    r = np.full(tok.n_items, -np.inf)
    np.maximum.at(p, tok.ref_item, precision)
    np.maximum.at(r, tok.ref_item, recall)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = ((1 + BETA**2) * p * r) / (r + BETA**2 * p)
    return np.where((p != 0) & (r != 0), score, 0.0)
