"""A tokenized evaluation set as flat integer arrays: what BLEU, ROUGE-L and CIDEr-D read.

Why flat arrays: the COCO caption code walks Python dicts of n-gram tuples per caption (seconds per
thousand captions); here every caption's words are integers in one array and every n-gram of order n
is one integer too (dense ids, built order by order from (n-1)-gram id and next word through
`np.unique`, so no hash can collide), and the metrics are grouped sums over those arrays.

Conventions are those of pycocoevalcap 1.2: a set is items, each with one hypothesis and one or more
references; BLEU and CIDEr-D read `caption.split()`, ROUGE-L `caption.split(" ")` (so an empty
caption is one empty word there: `Tokenized.rouge_words`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from vlnkit.compiled import njit

MAX_ORDER = 4


def word_ids(words: list[str]) -> tuple[np.ndarray, list[str]]:
    """Each word's id, ids in order of first occurrence, and the vocabulary (id -> word): `dict.fromkeys`
    and a `map` over the words, both at C speed (a Python loop per word took most of a set's scoring;
    Arrow's dictionary encoding of a Python list imports pandas, seconds at a process's first call)."""
    vocabulary = list(dict.fromkeys(words))
    index = {w: i for i, w in enumerate(vocabulary)}
    return np.fromiter(map(index.__getitem__, words), np.int64, len(words)), vocabulary


@dataclass(frozen=True)
class Tokenized:
    """Hypotheses and references of a set as word ids.

    `hyp_words`/`hyp_offsets`: item i's hypothesis is `hyp_words[hyp_offsets[i]:hyp_offsets[i+1]]`.
    `ref_words`/`ref_offsets`: reference r likewise; `ref_item[r]` is the item reference r belongs to
    (references of one item are consecutive, items in order).
    """

    hyp_words: np.ndarray
    hyp_offsets: np.ndarray
    ref_words: np.ndarray
    ref_offsets: np.ndarray
    ref_item: np.ndarray
    vocabulary: tuple[str, ...]

    @property
    def n_items(self) -> int:
        return len(self.hyp_offsets) - 1

    @property
    def n_refs(self) -> int:
        return len(self.ref_offsets) - 1


def build(hypotheses: list[list[str]], references: list[list[list[str]]]) -> Tokenized:
    """`hypotheses[i]` is item i's tokens; `references[i]` its references' tokens (at least one)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    for i, refs in enumerate(references):
        if not refs:
            raise ValueError(f"item {i} has no reference")
    ref_lists = [r for refs in references for r in refs]
    ids, vocabulary = word_ids(list(chain.from_iterable(chain(hypotheses, ref_lists))))
    hyp_lengths = np.fromiter((len(h) for h in hypotheses), np.int64, len(hypotheses))
    ref_lengths = np.fromiter((len(r) for r in ref_lists), np.int64, len(ref_lists))
    n_hyp_words = int(hyp_lengths.sum())
    return Tokenized(
        hyp_words=ids[:n_hyp_words],
        hyp_offsets=np.concatenate([[0], np.cumsum(hyp_lengths)]),
        ref_words=ids[n_hyp_words:],
        ref_offsets=np.concatenate([[0], np.cumsum(ref_lengths)]),
        ref_item=np.repeat(np.arange(len(references)), [len(r) for r in references]),
        vocabulary=tuple(vocabulary),
    )


@dataclass(frozen=True)
class NgramCounts:
    """Distinct n-grams per caption with their counts, for one order.

    Rows sorted by (caption, ngram): `caption[k]` holds n-gram `ngram[k]` `count[k]` times.
    """

    caption: np.ndarray
    ngram: np.ndarray
    count: np.ndarray


@njit(cache=True, inline="always")
def _slot(key, mask):
    """splitmix64's finaliser of the key, masked: the key's first slot in the table."""
    h = np.uint64(key)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.int64((h ^ (h >> np.uint64(31))) & mask)


@njit(cache=True, nogil=True)
def _first_seen(keys):  # pragma: no cover - compiled
    """Each key's number among the distinct keys in order of first occurrence, the distinct keys in that
    order and the position of each one's first occurrence. Open addressing with linear probing over
    int64 keys (at least 0), the table doubled when half full: one pass, no sort."""
    n = len(keys)
    size = 1 << 10
    slots = np.full(size, -1, np.int64)
    mask = np.uint64(size - 1)
    distinct = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    number = np.empty(n, np.int64)
    m = 0
    for p in range(n):
        key = keys[p]
        s = _slot(key, mask)
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
                    mask = np.uint64(size - 1)
                    slots = np.full(size, -1, np.int64)
                    for j in range(m):
                        t = _slot(distinct[j], mask)
                        while slots[t] >= 0:
                            t = (t + 1) & (size - 1)
                        slots[t] = j
                break
            if distinct[e] == key:
                break
            s = (s + 1) & (size - 1)
        number[p] = e
    return number, distinct[:m].copy(), first[:m].copy()


def dense_ranks(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's rank among the distinct keys in increasing order (what `np.unique(keys,
    return_inverse=True)` numbers them) and each rank's first position in `keys` (its `return_index`).

    Why not `np.unique`: it sorts every key (an argsort of ~9M pairs per order at 100k items, most of a
    set's scoring, and more than linear); here one hash pass finds the distinct keys and only those are
    sorted (a set's distinct n-grams are far fewer than its words)."""
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    number, distinct_keys, first = _first_seen(np.ascontiguousarray(keys, np.int64))
    order = np.argsort(distinct_keys, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rank[number], first[order]


@njit(cache=True, nogil=True)
def _next_order_pairs(gram, words, offsets, order, width):  # pragma: no cover - compiled
    """For each position where an n-gram of `order` fits in its caption: (id of the (order-1)-gram there)
    x width + the n-gram's last word, and the position."""
    pairs = np.empty(len(words), np.int64)
    at = np.empty(len(words), np.int64)
    m = 0
    for c in range(len(offsets) - 1):
        for p in range(offsets[c], offsets[c + 1] - order + 1):
            pairs[m] = gram[p] * width + words[p + order - 1]
            at[m] = p
            m += 1
    return pairs[:m], at[:m]


def ngram_ids(
    words: np.ndarray, offsets: np.ndarray, max_order: int = MAX_ORDER
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per order 1..max_order: the id of the n-gram starting at each position of `words` (-1 where it does
    not fit in its caption; captions `words[offsets[c]:offsets[c+1]]`), and each id's first position.

    Order 1's ids are the word ids; order n's number the distinct ((n-1)-gram id, word) pairs in increasing
    order, so ids of every order sort as their words' ids do, one after another (and rows sorted by
    (caption, id) are in the same order whatever numbered them before)."""
    words = np.ascontiguousarray(words, np.int64)
    offsets = np.ascontiguousarray(offsets, np.int64)
    width = int(words.max(initial=0)) + 1
    first = np.full(width, -1, np.int64)
    first[words[::-1]] = np.arange(len(words) - 1, -1, -1)
    out = [(words, first if len(words) else first[:0])]
    for order in range(2, max_order + 1):
        pairs, at = _next_order_pairs(out[-1][0], words, offsets, order, width)
        ranks, first_at = dense_ranks(pairs)
        gram = np.full(len(words), -1, np.int64)
        gram[at] = ranks
        out.append((gram, at[first_at]))
    return out


@njit(cache=True, nogil=True)
def _insertion_sort(a, n):  # pragma: no cover - compiled
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@njit(cache=True, nogil=True)
def _caption_counts(gram, offsets, order):  # pragma: no cover - compiled
    """Rows (caption, n-gram id, count) of each caption's distinct n-grams, sorted by (caption, id): a
    caption's ids sorted on their own (a few dozen), so the cost is linear in the words."""
    n = len(gram)
    caption = np.empty(n, np.int64)
    ngram = np.empty(n, np.int64)
    count = np.empty(n, np.int64)
    buf = np.empty(64, np.int64)
    m = 0
    for c in range(len(offsets) - 1):
        a = offsets[c]
        k = offsets[c + 1] - order + 1 - a
        if k <= 0:
            continue
        if buf.shape[0] < k:
            buf = np.empty(2 * k, np.int64)
        for j in range(k):
            buf[j] = gram[a + j]
        if k <= 48:
            _insertion_sort(buf, k)
        else:
            buf[:k].sort()
        j = 0
        while j < k:
            g = buf[j]
            e = j + 1
            while e < k and buf[e] == g:
                e += 1
            caption[m] = c
            ngram[m] = g
            count[m] = e - j
            m += 1
            j = e
    return caption[:m].copy(), ngram[:m].copy(), count[:m].copy()


def ngram_counts(tok: Tokenized, max_order: int = MAX_ORDER) -> tuple[list[NgramCounts], list[NgramCounts]]:
    """(hypothesis counts, reference counts), one `NgramCounts` per order 1..max_order.

    N-gram ids are shared by hypotheses and references: `ngram_ids` over the whole set's captions.
    """
    words = np.concatenate([tok.hyp_words, tok.ref_words]).astype(np.int64, copy=False)
    offsets = np.concatenate([tok.hyp_offsets, tok.ref_offsets[1:] + tok.hyp_offsets[-1]]).astype(np.int64)
    n_hyp = tok.n_items
    hyp_out, ref_out = [], []
    for order, (gram, _) in enumerate(ngram_ids(words, offsets, max_order), start=1):
        caption, ngram, count = _caption_counts(gram, offsets, order)
        split = int(np.searchsorted(caption, n_hyp))
        hyp_out.append(NgramCounts(caption[:split], ngram[:split], count[:split]))
        ref_out.append(NgramCounts(caption[split:] - n_hyp, ngram[split:], count[split:]))
    return hyp_out, ref_out


def row_starts(caption: np.ndarray, n: int) -> np.ndarray:
    """(n + 1,): where each group's rows start, for rows sorted by `caption` (a group number below n)."""
    return np.concatenate([[0], np.cumsum(np.bincount(caption, minlength=n))]).astype(np.int64)
