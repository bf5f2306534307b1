"""N-gram ids of a set's captions and each caption's distinct n-grams with their counts, in time linear in
the words.

Ids: order 1's are the word ids; order n's number the distinct ((n-1)-gram id, next word) pairs of the
whole set in increasing order (what `np.unique(pairs, return_inverse=True)` gives), so the ids of every
order sort as their words' ids do, one word after another, and no hash can collide (the hash table
below only finds the distinct pairs; the pairs themselves are the keys). Rows sorted by (caption, id)
are therefore in one order whatever the implementation, and the metrics' float sums over them too.

Why not `np.unique` and global sorts: at 100k R2R items (~8M words) an argsort of every pair per order,
then a sort of (caption, id) keys per order, were most of a set's scoring and grew more than linearly.
Here one hash pass per order finds the distinct pairs (a set's distinct n-grams are far fewer than its
words) and only those are sorted; a caption's n-grams are sorted on their own, each order from the
previous order's sorted list (only runs of a repeated (n-1)-gram are out of order), so about linearly.
"""

from __future__ import annotations

import numpy as np

from vlnkit.captioning.corpus import MAX_ORDER, NgramCounts, Tokenized
from vlnkit.compiled import njit


@njit(cache=True, inline="always")
def _slot(key, mask):
    """splitmix64's finaliser of the key, masked: the key's first slot in the table."""
    h = np.uint64(key)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.int64((h ^ (h >> np.uint64(31))) & np.uint64(mask))


@njit(cache=True, nogil=True)
def _number_pairs(prev, words, offsets, order, width):  # pragma: no cover - compiled
    """For each position where an n-gram of `order` fits in its caption, the key prev id x width + last
    word numbered in order of first occurrence (-1 elsewhere); the distinct keys in that order and each
    one's first position. Open addressing with linear probing, the table doubled when half full."""
    n = len(words)
    gram = np.full(n, -1, np.int64)
    size = 1 << 10
    slots = np.full(size, -1, np.int64)
    distinct = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    m = 0
    for c in range(len(offsets) - 1):
        for p in range(offsets[c], offsets[c + 1] - order + 1):
            key = prev[p] * width + words[p + order - 1]
            s = _slot(key, size - 1)
            while True:
                e = slots[s]
                if e < 0:
                    e = m
                    slots[s] = e
                    distinct[m] = key
                    first[m] = p
                    m += 1
                    if 2 * m > size:
                        size *= 2
                        slots = np.full(size, -1, np.int64)
                        for j in range(m):
                            t = _slot(distinct[j], size - 1)
                            while slots[t] >= 0:
                                t = (t + 1) & (size - 1)
                            slots[t] = j
                    break
                if distinct[e] == key:
                    break
                s = (s + 1) & (size - 1)
            gram[p] = e
    return gram, distinct[:m].copy(), first[:m].copy()


@njit(cache=True, nogil=True)
def _renumber(gram, rank):  # pragma: no cover - compiled
    for p in range(len(gram)):
        if gram[p] >= 0:
            gram[p] = rank[gram[p]]


def ngram_ids(
    words: np.ndarray, offsets: np.ndarray, max_order: int = MAX_ORDER
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per order 1..max_order: the id of the n-gram starting at each position of `words` (-1 where it does
    not fit in its caption; caption c is `words[offsets[c]:offsets[c+1]]`), and each id's first position."""
    words = np.ascontiguousarray(words, np.int64)
    offsets = np.ascontiguousarray(offsets, np.int64)
    width = int(words.max(initial=0)) + 1
    first = np.full(width, -1, np.int64)
    first[words[::-1]] = np.arange(len(words) - 1, -1, -1)
    out = [(words, first if len(words) else first[:0])]
    for order in range(2, max_order + 1):
        gram, distinct, first = _number_pairs(out[-1][0], words, offsets, order, width)
        by_key = np.argsort(distinct, kind="stable")
        rank = np.empty(len(by_key), np.int64)
        rank[by_key] = np.arange(len(by_key))
        _renumber(gram, rank)
        out.append((gram, first[by_key]))
    return out


@njit(cache=True, nogil=True)
def _sort_pairs(keys, pos, k):  # pragma: no cover - compiled
    """`keys[:k]` sorted in place, `pos[:k]` moved with them (stable). Insertion sort, whose cost is k plus
    the pairs out of order: small for a caption's few dozen words, near k for a list already sorted but
    for runs of equal earlier words (what `_caption_counts` hands it from order 2 on)."""
    if k > 64:  # a long caption: no quadratic case
        by = np.argsort(keys[:k], kind="mergesort")
        keys[:k] = keys[:k][by]
        pos[:k] = pos[:k][by]
        return
    for i in range(1, k):
        v, p = keys[i], pos[i]
        j = i - 1
        while j >= 0 and keys[j] > v:
            keys[j + 1] = keys[j]
            pos[j + 1] = pos[j]
            j -= 1
        keys[j + 1] = v
        pos[j + 1] = p


@njit(cache=True, nogil=True)
def _caption_counts(gram, offsets, order, perm):  # pragma: no cover - compiled
    """Rows (caption, n-gram id, count) of each caption's distinct n-grams, sorted by (caption, id).

    `perm[offsets[c]:]` holds caption c's positions sorted by the previous order's ids (order 1: any
    order) and is left sorted by this order's: since ids sort as (previous id, next word) do, only runs
    of a repeated (n-1)-gram within a caption are out of order, and the sort is about linear."""
    n = len(gram)
    caption = np.empty(n, np.int64)
    ngram = np.empty(n, np.int64)
    count = np.empty(n, np.int64)
    starts = np.empty(len(offsets), np.int64)
    keys = np.empty(64, np.int64)
    pos = np.empty(64, np.int64)
    m = 0
    for c in range(len(offsets) - 1):
        starts[c] = m
        a = offsets[c]
        k = offsets[c + 1] - order + 1 - a
        if k <= 0:
            continue
        if keys.shape[0] < k + 1:
            keys = np.empty(2 * k + 2, np.int64)
            pos = np.empty(2 * k + 2, np.int64)
        j = 0
        for t in range(k + 1 if order > 1 else k):  # the last position of order n - 1 has no n-gram
            p = perm[a + t]
            if p < a + k:
                keys[j] = gram[p]
                pos[j] = p
                j += 1
        _sort_pairs(keys, pos, k)
        j = 0
        while j < k:
            perm[a + j] = pos[j]
            g = keys[j]
            e = j + 1
            while e < k and keys[e] == g:
                perm[a + e] = pos[e]
                e += 1
            caption[m] = c
            ngram[m] = g
            count[m] = e - j
            m += 1
            j = e
    starts[len(offsets) - 1] = m
    return caption[:m], ngram[:m], count[:m], starts


def ngram_counts(tok: Tokenized, max_order: int = MAX_ORDER) -> tuple[list[NgramCounts], list[NgramCounts]]:
    """(hypothesis counts, reference counts), one `NgramCounts` per order 1..max_order.

    N-gram ids are shared by hypotheses and references: `ngram_ids` over the whole set's captions.
    """
    words, offsets = all_captions(tok)
    n_hyp = tok.n_items
    hyp_out, ref_out = [], []
    perm = np.arange(len(words), dtype=np.int64)  # each caption's positions, sorted order by order
    for order, (gram, _) in enumerate(ngram_ids(words, offsets, max_order), start=1):
        caption, ngram, count, starts = _caption_counts(gram, offsets, order, perm)
        split = int(starts[n_hyp])
        hyp_out.append(NgramCounts(caption[:split], ngram[:split], count[:split], starts[: n_hyp + 1]))
        ref_starts = starts[n_hyp:] - split
        ref_out.append(NgramCounts(caption[split:] - n_hyp, ngram[split:], count[split:], ref_starts))
    return hyp_out, ref_out


def all_captions(tok: Tokenized) -> tuple[np.ndarray, np.ndarray]:
    """The hypotheses' then the references' words as one int64 array, and the captions' offsets in it."""
    words = np.concatenate([tok.hyp_words, tok.ref_words]).astype(np.int64, copy=False)
    offsets = np.concatenate([tok.hyp_offsets, tok.ref_offsets[1:] + tok.hyp_offsets[-1]]).astype(np.int64)
    return words, offsets
