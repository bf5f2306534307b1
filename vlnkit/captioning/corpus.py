"""A tokenized evaluation set as flat integer arrays: what BLEU, ROUGE-L and CIDEr-D read.

Why flat arrays: the COCO caption code walks Python dicts of n-gram tuples per caption (seconds per
thousand captions); here every caption's words are integers in one array and every n-gram of order n
is one integer too (dense ids, `vlnkit.captioning.ngrams`), and the metrics are grouped sums over
those arrays.

Conventions are those of pycocoevalcap 1.2: a set is items, each with one hypothesis and one or more
references; BLEU and CIDEr-D read `caption.split()`, ROUGE-L `caption.split(" ")` (so an empty
caption is one empty word there: `rouge._as_rouge_words`). `build` takes captions already split;
`build_texts` takes them as text, the way pycocoevalcap does, and splits them in Arrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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


def _check_items(hypotheses: list, references: list[list]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    for i, refs in enumerate(references):
        if not refs:
            raise ValueError(f"item {i} has no reference")


def build(hypotheses: list[list[str]], references: list[list[list[str]]]) -> Tokenized:
    """`hypotheses[i]` is item i's tokens; `references[i]` its references' tokens (at least one)."""
    _check_items(hypotheses, references)
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


def _int64(values: pa.Array) -> np.ndarray:
    """An Arrow integer array without nulls as int64, read from its data buffer (`to_numpy` imports pandas)."""
    width = values.type.bit_width // 8
    data = np.frombuffer(values.buffers()[1], f"<i{width}", len(values), values.offset * width)
    return data.astype(np.int64)


def _numbered(lists: pa.ListArray, n_items: int, references: list[list[str]]) -> Tokenized:
    """`Tokenized` of the captions' words as Arrow lists (items' hypotheses first, then their references):
    Arrow's dictionary encoding numbers the words in order of first occurrence, as `word_ids` does."""
    offsets = _int64(lists.offsets)
    encoded = lists.flatten().dictionary_encode()
    ids = _int64(encoded.indices)
    return Tokenized(
        hyp_words=ids[: offsets[n_items]],
        hyp_offsets=offsets[: n_items + 1],
        ref_words=ids[offsets[n_items] :],
        ref_offsets=offsets[n_items:] - offsets[n_items],
        ref_item=np.repeat(np.arange(len(references)), [len(r) for r in references]),
        vocabulary=tuple(encoded.dictionary.to_pylist()),
    )


def build_texts(hypotheses: list[str], references: list[list[str]]) -> tuple[Tokenized, Tokenized]:
    """Captions given as text, the way pycocoevalcap takes them: (`build` of every caption's `split()`,
    BLEU's and CIDEr-D's words; `build` of its `split(" ")`, ROUGE-L's), the second the same object when
    the text is single-spaced (only single spaces between words, as `ptb.tokenize`'s tokens joined are;
    `rouge_l` itself makes an empty caption one empty word).

    Why Arrow: splitting a set's captions into Python lists (and numbering the words from them) took most
    of its scoring; here the captions' UTF-8 bytes become one Arrow array (`pa.array` of a Python list
    imports pandas, a third of a second at a process's first call), split in one C++ pass
    (`utf8_split_whitespace`: the same words as `str.split()` on every code point, a test checks, once
    the empty words it keeps for whitespace at either end of a caption are dropped) and numbered by
    `_numbered`, so the result equals `build`'s array for array. Single-spaced is counted, not compared
    word by word: words and spaces make up the captions' bytes exactly when no other whitespace is there,
    and then a caption has one word more than spaces exactly when no piece between spaces is empty. A
    caption UTF-8 cannot hold (a lone surrogate) sends the set to Python's `str.split`."""
    _check_items(hypotheses, references)
    captions = [*hypotheses, *(r for refs in references for r in refs)]
    try:
        encoded = list(map(str.encode, captions))
    except UnicodeEncodeError:
        split = [
            build([h.split(s) for h in hypotheses], [[r.split(s) for r in rs] for rs in references])
            for s in (None, " ")
        ]
        return split[0], split[1]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
    data = b"".join(encoded)
    array = pa.Array.from_buffers(pa.large_string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    lists = pc.utf8_split_whitespace(array)
    flat = lists.flatten()
    lengths = pc.binary_length(flat)  # bytes per word; Arrow's empty end words add none
    nonempty = pc.greater(lengths, 0)
    if not pc.all(nonempty).as_py():
        kept = np.concatenate([[0], np.cumsum(_int64(pc.cast(nonempty, pa.int8())))])
        counts = pa.py_buffer(kept[_int64(lists.offsets)].astype(np.int32))
        lists = pa.ListArray.from_buffers(lists.type, len(lists), [None, counts], children=[flat.filter(nonempty)])
    words = _numbered(lists, len(hypotheses), references)
    spaces, n_words = data.count(b" "), len(words.hyp_words) + len(words.ref_words)
    word_bytes = pc.sum(lengths).as_py() or 0
    empty = int(np.count_nonzero(offsets[1:] == offsets[:-1]))
    if word_bytes + spaces == len(data) and n_words + empty == spaces + len(captions):
        return words, words
    return words, _numbered(pc.split_pattern(array, " "), len(hypotheses), references)


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
