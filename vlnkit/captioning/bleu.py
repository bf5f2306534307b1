"""BLEU-1..4 exactly as pycocoevalcap 1.2 computes it (`bleu/bleu_scorer.py`), from sufficient statistics.

What the reference does (line numbers of pycocoevalcap 1.2's `bleu/bleu_scorer.py`):
- per item (`cook_test`, l. 59-79): hypothesis length, "guess" = n-grams of each order in the hypothesis,
  "correct" = its n-gram counts clipped by the maximum count in any one reference (`cook_refs`, l. 35-50),
  and the reference lengths;
- the reference length an item counts with is the `closest` to the hypothesis length, the shorter one
  on a tie (`_single_reflen`, l. 168-179: `min((abs(l - testlen), l) ...)`);
- corpus BLEU-n (l. 230-246): the geometric mean of pooled clipped precisions, each (correct + 1e-15) /
  (guess + 1e-9), times exp(1 - 1/ratio) when ratio = (sum of hypothesis lengths + 1e-15) / (sum of
  closest reference lengths + 1e-9) < 1. It is not the mean of sentence BLEU;
- sentence BLEU-n (l. 206-221), the reference's per-item value: the same formula on the item's own
  counts, cumulated order by order as the reference multiplies them.

`BleuStats` holds the per-item sufficient statistics, so corpus BLEU of any weighted resample
(a bootstrap replicate) is `corpus_bleu(stats, weights)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.captioning.corpus import MAX_ORDER, NgramCounts, Tokenized, item_starts
from vlnkit.compiled import njit

SMALL = 1e-9
TINY = 1e-15


@dataclass(frozen=True)
class BleuStats:
    """Per item: hypothesis length, closest reference length, guessed and correct n-grams per order."""

    testlen: np.ndarray  # (items,)
    reflen: np.ndarray  # (items,)
    guess: np.ndarray  # (items, 4)
    correct: np.ndarray  # (items, 4)


@njit(cache=True, nogil=True)
def _clipped_matches(h_starts, h_ngram, h_count, r_starts, r_ngram, r_count, n_grams):  # pragma: no cover
    """Per item: the sum over its hypothesis' n-grams of min(count, the most any one reference holds)."""
    most = np.zeros(n_grams, np.int64)
    out = np.zeros(len(h_starts) - 1, np.int64)
    for i in range(len(h_starts) - 1):
        for q in range(r_starts[i], r_starts[i + 1]):
            most[r_ngram[q]] = max(most[r_ngram[q]], r_count[q])
        total = 0
        for q in range(h_starts[i], h_starts[i + 1]):
            total += min(h_count[q], most[h_ngram[q]])
        out[i] = total
        for q in range(r_starts[i], r_starts[i + 1]):
            most[r_ngram[q]] = 0
    return out


def bleu_stats(tok: Tokenized, hyp: list[NgramCounts], ref: list[NgramCounts]) -> BleuStats:
    n_items = tok.n_items
    testlen = np.diff(tok.hyp_offsets)
    ref_lengths = np.diff(tok.ref_offsets)
    # closest reference length, shorter on ties: minimise (|l - testlen|, l) per item
    distance = np.abs(ref_lengths - testlen[tok.ref_item])
    order = np.lexsort((ref_lengths, distance, tok.ref_item))
    first = np.ones(len(order), bool)
    first[1:] = tok.ref_item[order][1:] != tok.ref_item[order][:-1]
    reflen = np.zeros(n_items, np.int64)
    reflen[tok.ref_item[order][first]] = ref_lengths[order][first]
    guess = np.stack([np.maximum(0, testlen - k + 1) for k in range(1, MAX_ORDER + 1)], axis=1)
    correct = np.zeros((n_items, MAX_ORDER), np.int64)
    for k, (h, r) in enumerate(zip(hyp, ref)):
        n_grams = int(max(h.ngram.max(initial=0), r.ngram.max(initial=0))) + 1
        r_starts = item_starts(tok, r)
        correct[:, k] = _clipped_matches(h.starts, h.ngram, h.count, r_starts, r.ngram, r.count, n_grams)
    return BleuStats(testlen=testlen, reflen=reflen, guess=guess, correct=correct)


def _bleu(correct: np.ndarray, guess: np.ndarray, testlen, reflen) -> np.ndarray:
    """BLEU-1..4 along the last axis, the reference's arithmetic in its order."""
    out = np.empty(correct.shape, np.float64)
    running = np.ones(correct.shape[:-1], np.float64)
    for k in range(MAX_ORDER):
        running = running * ((correct[..., k].astype(np.float64) + TINY) / (guess[..., k].astype(np.float64) + SMALL))
        out[..., k] = running ** (1.0 / (k + 1))
    ratio = (np.asarray(testlen, np.float64) + TINY) / (np.asarray(reflen, np.float64) + SMALL)
    with np.errstate(divide="ignore"):
        penalty = np.where(ratio < 1, np.exp(1 - 1 / ratio), 1.0)
    return out * penalty[..., None]


def sentence_bleu(stats: BleuStats) -> np.ndarray:
    """(items, 4): the reference's per-item BLEU-1..4."""
    return _bleu(stats.correct, stats.guess, stats.testlen, stats.reflen)


def corpus_bleu(stats: BleuStats, weights: np.ndarray | None = None) -> np.ndarray:
    """BLEU-1..4 of the set; `weights` (items,) or (replicates, items) multiply each item's counts."""
    if weights is None:
        sums = [stats.correct.sum(0), stats.guess.sum(0), stats.testlen.sum(), stats.reflen.sum()]
    else:
        w = np.asarray(weights, np.float64)
        sums = [w @ stats.correct, w @ stats.guess, w @ stats.testlen, w @ stats.reflen]
    return _bleu(*sums)
