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

from vlnkit.captioning.corpus import MAX_ORDER, NgramCounts, Tokenized, distinct, lookup

SIGMA = 6.0


@dataclass(frozen=True)
class DocumentFrequencies:
    """Per order: the n-gram ids present in the set's references and in how many items' references."""

    ngrams: tuple[np.ndarray, ...]
    counts: tuple[np.ndarray, ...]
    n_items: int


def document_frequencies(tok: Tokenized, ref: list[NgramCounts]) -> DocumentFrequencies:
    ngrams, counts = [], []
    for r in ref:
        item = tok.ref_item[r.caption]
        width = int(r.ngram.max(initial=0)) + 1
        pairs = distinct(item.astype(np.int64) * width + r.ngram)
        per_ngram = np.bincount(pairs % width, minlength=width)
        g = np.flatnonzero(per_ngram)
        ngrams.append(g)
        counts.append(per_ngram[g])
    return DocumentFrequencies(tuple(ngrams), tuple(counts), tok.n_items)


def _weights(counts: NgramCounts, order: int, df: DocumentFrequencies) -> np.ndarray:
    ref_len = np.log(float(df.n_items))
    d = lookup(counts.ngram, df.ngrams[order], df.counts[order]).astype(np.float64)
    return counts.count.astype(np.float64) * (ref_len - np.log(np.maximum(1.0, d)))


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
        vh, vr = _weights(h, k, df), _weights(r, k, df)
        norm_h = np.sqrt(np.bincount(h.caption, weights=vh**2, minlength=n_items))
        norm_r = np.sqrt(np.bincount(r.caption, weights=vr**2, minlength=n_refs))
        item = tok.ref_item[r.caption]
        width = int(max(h.ngram.max(initial=0), r.ngram.max(initial=0))) + 1
        hyp_keys = h.caption.astype(np.int64) * width + h.ngram  # sorted: rows are (caption, ngram) ordered
        at = lookup(item.astype(np.int64) * width + r.ngram, hyp_keys, np.arange(len(hyp_keys)), default=-1)
        present = at >= 0
        clipped = np.minimum(vh[at[present]], vr[present]) * vr[present]
        val = np.bincount(r.caption[present], weights=clipped, minlength=n_refs).astype(np.float64)
        nh = norm_h[tok.ref_item]
        both = (nh != 0) & (norm_r != 0)
        val[both] /= nh[both] * norm_r[both]
        per_order.append(val * penalty)
    # the reference sums each order over references, then averages the orders
    sums = np.stack([np.bincount(tok.ref_item, weights=v, minlength=n_items) for v in per_order], axis=1)
    refs_per_item = np.bincount(tok.ref_item, minlength=n_items)
    return sums.mean(axis=1) / refs_per_item * 10.0
