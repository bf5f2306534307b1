"""A tokenized evaluation set as flat integer arrays: what BLEU, ROUGE-L and CIDEr-D read.

Why flat arrays: the COCO caption code walks Python dicts of n-gram tuples per caption (seconds per
thousand captions); here every caption's words are integers in one array and every n-gram of order n
is one integer too (dense ids, `vlnkit.captioning.ngrams`), and the metrics are grouped sums over
those arrays.

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

    Rows sorted by (caption, ngram): `caption[k]` holds n-gram `ngram[k]` `count[k]` times; caption c's
    rows are `starts[c]:starts[c+1]`.
    """

    caption: np.ndarray
    ngram: np.ndarray
    count: np.ndarray
    starts: np.ndarray


def item_starts(tok: Tokenized, ref: NgramCounts) -> np.ndarray:
    """(items + 1,): where each item's rows start in `ref` (an item's references are consecutive)."""
    first_ref = np.concatenate([[0], np.cumsum(np.bincount(tok.ref_item, minlength=tok.n_items))])
    return ref.starts[first_ref]
