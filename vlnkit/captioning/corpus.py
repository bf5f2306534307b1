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


def _positions(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each word: its caption and its index within the caption."""
    lengths = np.diff(offsets)
    caption = np.repeat(np.arange(len(lengths)), lengths)
    index = np.arange(int(offsets[-1])) - offsets[:-1][caption] if len(caption) else np.zeros(0, np.int64)
    return caption, index


def ngram_counts(tok: Tokenized, max_order: int = MAX_ORDER) -> tuple[list[NgramCounts], list[NgramCounts]]:
    """(hypothesis counts, reference counts), one `NgramCounts` per order 1..max_order.

    N-gram ids are shared by hypotheses and references: order n's ids index the distinct
    ((n-1)-gram id, word) pairs of the whole set.
    """
    words = np.concatenate([tok.hyp_words, tok.ref_words])
    offsets = np.concatenate([tok.hyp_offsets, tok.ref_offsets[1:] + tok.hyp_offsets[-1]])
    caption, index = _positions(offsets)
    lengths = np.diff(offsets)
    n_hyp = tok.n_items
    gram = words.copy()  # id of the n-gram starting at each word (valid where it fits)
    hyp_out, ref_out = [], []
    for order in range(1, max_order + 1):
        if order > 1:
            nxt = np.zeros_like(words)  # the n-gram's last word
            nxt[: len(words) - order + 1] = words[order - 1 :]
            fits = index + order <= lengths[caption]
            pair = gram[fits].astype(np.int64) * (int(words.max(initial=0)) + 1) + nxt[fits]
            _, dense = np.unique(pair, return_inverse=True)
            gram = np.full(len(words), -1, np.int64)
            gram[fits] = dense
        else:
            fits = np.ones(len(words), bool)
        cap, g = caption[fits], gram[fits]
        n_grams = int(g.max(initial=-1)) + 1
        key = cap.astype(np.int64) * max(n_grams, 1) + g
        keys, counts = counted(key)
        kc, kg = keys // max(n_grams, 1), keys % max(n_grams, 1)
        is_hyp = kc < n_hyp
        hyp_out.append(NgramCounts(kc[is_hyp], kg[is_hyp], counts[is_hyp]))
        ref_out.append(NgramCounts(kc[~is_hyp] - n_hyp, kg[~is_hyp], counts[~is_hyp]))
    return hyp_out, ref_out


def distinct(keys: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer array (a sort and a neighbour test: numpy 2's hash-based
    `np.unique` is several times slower on millions of int64 keys)."""
    out = np.sort(keys)
    if len(out) < 2:
        return out
    keep = np.empty(len(out), bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]


def counted(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values of an integer array and how often each occurs (`distinct`'s sort)."""
    out = np.sort(keys)
    if len(out) == 0:
        return out, np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate([[True], out[1:] != out[:-1]]))
    return out[starts], np.diff(np.append(starts, len(out)))


def lookup(keys: np.ndarray, table_keys: np.ndarray, table_values: np.ndarray, default=0) -> np.ndarray:
    """`table_values` at `keys` (table_keys sorted, distinct); `default` where a key is absent."""
    if len(table_keys) == 0:
        return np.full(len(keys), default, dtype=table_values.dtype if len(table_values) else np.int64)
    at = np.searchsorted(table_keys, keys)
    at_clipped = np.minimum(at, len(table_keys) - 1)
    found = table_keys[at_clipped] == keys
    return np.where(found, table_values[at_clipped], default)
