"""CIDEr-D exactly as pycocoevalcap 1.2 computes it (`cider/cider_scorer.py`, class `Cider` with n=4, sigma=6).

What the reference does (line numbers of pycocoevalcap 1.2's `cider/cider_scorer.py`):
- document frequency of an n-gram = the number of items of **the evaluated set** whose references hold it
  (`compute_doc_freq`, l. 95-106), and ref_len = log(number of items) (l. 172): per-item CIDEr-D depends
  on which set an item is scored in;
- a caption's vector per order: term frequency x (ref_len - log(max(1, df))) (`counts2vec`, l. 117-141);
  its "length" counts bigrams only (l. 137-138: `if n == 1`, the 0-based order index);
- per reference (`sim`, l. 143-168): sum over the hypothesis' n-grams of min(hyp, ref) x ref (the
  clipping), divided by both norms when neither is 0, times exp(-(delta^2) / (2 sigma^2)) with delta the
  difference of the two lengths;
- per item (l. 174-191): the sum over references, averaged over the 4 orders, divided by the number of
  references, times 10. The set's score is the mean of the items' scores.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.captioning.corpus import MAX_ORDER, NgramCounts, Tokenized, item_starts
from vlnkit.compiled import njit

SIGMA = 6.0


@dataclass(frozen=True)
class DocumentFrequencies:
    """Per order: the n-gram ids present in the set's references and in how many items' references."""

    ngrams: tuple[np.ndarray, ...]
    counts: tuple[np.ndarray, ...]
    n_items: int


@njit(cache=True, nogil=True)
def _items_holding(item, ngram, n_grams):  # pragma: no cover - compiled
    """How many distinct items each n-gram id occurs for, rows grouped by item (`item` nondecreasing)."""
    last = np.full(n_grams, -1, np.int64)
    out = np.zeros(n_grams, np.int64)
    for q in range(len(item)):
        g = ngram[q]
        if last[g] != item[q]:
            last[g] = item[q]
            out[g] += 1
    return out


def items_holding(item: np.ndarray, ngram: np.ndarray) -> np.ndarray:
    """(max id + 1,): for each n-gram id, how many of the items hold it (rows (item, ngram) grouped by
    item, as the reference rows of a `Tokenized` are): one pass, no sort of the (item, ngram) pairs."""
    n_grams = int(ngram.max(initial=-1)) + 1
    return _items_holding(item.astype(np.int64, copy=False), ngram.astype(np.int64, copy=False), n_grams)


def document_frequencies(tok: Tokenized, ref: list[NgramCounts]) -> DocumentFrequencies:
    ngrams, counts = [], []
    for r in ref:
        per_ngram = items_holding(tok.ref_item[r.caption], r.ngram)
        g = np.flatnonzero(per_ngram)
        ngrams.append(g)
        counts.append(per_ngram[g])
    return DocumentFrequencies(tuple(ngrams), tuple(counts), tok.n_items)


def _idf(df: DocumentFrequencies, order: int, n_grams: int) -> np.ndarray:
    """(n_grams,): each n-gram id's log(set size) - log(max(1, df)), the reference's weight per n-gram
    (computed once per id, not per row: the same float operations on the same numbers)."""
    dense = np.zeros(n_grams, np.int64)
    dense[df.ngrams[order]] = df.counts[order]
    return np.log(float(df.n_items)) - np.log(np.maximum(1.0, dense.astype(np.float64)))


@njit(cache=True, nogil=True)
def _clipped_products(h_starts, h_ngram, vh, r_starts, r_caption, r_ngram, vr, n_grams, n_refs):  # pragma: no cover
    """Per reference: the sum over its n-grams that the item's hypothesis holds of min(hyp, ref) x ref, in
    the reference's row order (the sum's order, so the float result is that of a `bincount` over the rows)."""
    at = np.full(n_grams, -1, np.int64)
    val = np.zeros(n_refs)
    for i in range(len(h_starts) - 1):
        for q in range(h_starts[i], h_starts[i + 1]):
            at[h_ngram[q]] = q
        for q in range(r_starts[i], r_starts[i + 1]):
            a = at[r_ngram[q]]
            if a >= 0:
                val[r_caption[q]] += min(vh[a], vr[q]) * vr[q]
        for q in range(h_starts[i], h_starts[i + 1]):
            at[h_ngram[q]] = -1
    return val


def cider_d(tok: Tokenized, hyp: list[NgramCounts], ref: list[NgramCounts], df: DocumentFrequencies | None = None):
    """(items,): the reference's per-item CIDEr-D; `df` defaults to this set's own references'."""
    df = df if df is not None else document_frequencies(tok, ref)
    n_items, n_refs = tok.n_items, tok.n_refs
    hyp_len = np.zeros(n_items)
    ref_len = np.zeros(n_refs)
    if MAX_ORDER > 1:
        hyp_len = np.bincount(hyp[1].caption, weights=hyp[1].count, minlength=n_items)
        ref_len = np.bincount(ref[1].caption, weights=ref[1].count, minlength=n_refs)
    delta = hyp_len[tok.ref_item] - ref_len
    penalty = np.e ** (-(delta**2) / (2 * SIGMA**2))
    per_order = []
    for k, (h, r) in enumerate(zip(hyp, ref)):
        n_grams = int(max(h.ngram.max(initial=0), r.ngram.max(initial=0), df.ngrams[k].max(initial=0))) + 1
        idf = _idf(df, k, n_grams)
        vh, vr = h.count.astype(np.float64) * idf[h.ngram], r.count.astype(np.float64) * idf[r.ngram]
        norm_h = np.sqrt(np.bincount(h.caption, weights=vh**2, minlength=n_items))
        norm_r = np.sqrt(np.bincount(r.caption, weights=vr**2, minlength=n_refs))
        r_starts = item_starts(tok, r)
        val = _clipped_products(h.starts, h.ngram, vh, r_starts, r.caption, r.ngram, vr, n_grams, n_refs)
        nh = norm_h[tok.ref_item]
        both = (nh != 0) & (norm_r != 0)
        val[both] /= nh[both] * norm_r[both]
        per_order.append(val * penalty)
    # the reference sums each order over references, then averages the orders
    sums = np.stack([np.bincount(tok.ref_item, weights=v, minlength=n_items) for v in per_order], axis=1)
    refs_per_item = np.bincount(tok.ref_item, minlength=n_items)
    return sums.mean(axis=1) / refs_per_item * 10.0
