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


@njit(cache=True, inline="always")
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True)
def _lcs_lengths(hyp_words, hyp_offsets, ref_words, ref_offsets, ref_item, n_words):  # pragma: no cover
    """Per reference: the length of the longest common subsequence of its words and its item's hypothesis.

    Bit-parallel (Allison and Dix 1986; Hyyro 2004): bit j of V is 0 where the LCS row grows at reference
    word j; each hypothesis word updates all of them at once, V = (V + (V & M)) | (V & ~M) with M the
    word's positions in the reference, so a reference of m words costs about m / 64 operations per
    hypothesis word instead of m (the row-by-row table of the reference's `my_lcs`); the LCS is the
    number of zero bits. Integers only: the same lengths as the table's."""
    out = np.zeros(len(ref_offsets) - 1, np.int64)
    local = np.full(n_words, -1, np.int64)  # word id -> its row of `masks` for the current reference
    masks = np.zeros((64, 1), np.uint64)
    v = np.zeros(1, np.uint64)
    one = np.uint64(1)
    for r in range(len(ref_offsets) - 1):
        i = ref_item[r]
        b0, b1 = ref_offsets[r], ref_offsets[r + 1]
        m = b1 - b0
        if m == 0:
            continue
        width = (m + 63) // 64
        if masks.shape[0] < m or masks.shape[1] < width:
            masks = np.zeros((max(m, masks.shape[0]), max(width, masks.shape[1])), np.uint64)
            v = np.zeros(masks.shape[1], np.uint64)
        distinct = 0
        for j in range(m):
            w = ref_words[b0 + j]
            if local[w] < 0:
                local[w] = distinct
                for k in range(width):
                    masks[distinct, k] = 0
                distinct += 1
            masks[local[w], j // 64] |= one << np.uint64(j % 64)
        for k in range(width):
            v[k] = ~np.uint64(0)
        for p in range(hyp_offsets[i], hyp_offsets[i + 1]):
            row = local[hyp_words[p]]
            if row < 0:
                continue  # no match: V + 0 | V = V
            carry = np.uint64(0)
            for k in range(width):
                x = v[k]
                mk = masks[row, k]
                s = x + (x & mk)
                c1 = s < x
                s2 = s + carry
                c2 = s2 < s
                carry = one if (c1 or c2) else np.uint64(0)
                v[k] = s2 | (x & ~mk)
        zeros = 0
        for k in range(width):
            x = ~v[k]
            if k == width - 1 and m % 64 != 0:
                x &= (one << np.uint64(m % 64)) - one
            zeros += _popcount(x)
        out[r] = zeros
        for j in range(m):
            local[ref_words[b0 + j]] = -1
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
    lcs = _lcs_lengths(hw, ho, rw, ro, tok.ref_item, empty_id + 1).astype(np.float64)
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
