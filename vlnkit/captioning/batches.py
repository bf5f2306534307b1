"""Scoring a set in batches, wherever its items are: what the score_instructions job's workers run.

CIDEr-D needs the whole set's document frequencies (which items' references hold each n-gram) and its
size before any item can be scored, so a set is scored in two passes over batches of its items:
1. `batch_document_frequencies(batch)`: {n-gram text: items of this batch whose references hold it};
   batches hold distinct items, so a set's frequencies are the sums of its batches' (`merge_counts`);
2. `score_batch(batch, frequencies, set_size)`: every item's BLEU-1..4 (sentence and statistics),
   ROUGE-L and CIDEr-D as if the whole set had been scored at once, equal to `score_set` on the set.
`corpus_sums(rows, weights)` then gives a batch's additive corpus statistics (and each bootstrap
replicate's), which add across batches and workers in any order.
"""

from __future__ import annotations

import numpy as np

from vlnkit.captioning.bleu import bleu_stats, sentence_bleu
from vlnkit.captioning.cider import DocumentFrequencies, cider_d
from vlnkit.captioning.corpus import MAX_ORDER, Tokenized, build, ngram_counts
from vlnkit.captioning.rouge import rouge_l

MEAN_METRICS = ("rouge_l", "cider_d")


def gram_texts(tok: Tokenized) -> list[np.ndarray]:
    """Per order: the text of every n-gram id (ids shared by hypotheses and references)."""
    words = np.concatenate([tok.hyp_words, tok.ref_words])
    offsets = np.concatenate([tok.hyp_offsets, tok.ref_offsets[1:] + tok.hyp_offsets[-1]])
    lengths = np.diff(offsets)
    caption = np.repeat(np.arange(len(lengths)), lengths)
    index = np.arange(len(words)) - offsets[:-1][caption]
    vocabulary = np.array(list(tok.vocabulary), dtype=object)
    out = []
    gram = words.astype(np.int64)
    width = int(words.max(initial=0)) + 1
    for order in range(1, MAX_ORDER + 1):
        fits = index + order <= lengths[caption]
        if order == 1:
            ids = gram[fits]
            n = int(ids.max(initial=-1)) + 1
            first = np.full(n, -1, np.int64)
            first[ids[::-1]] = np.flatnonzero(fits)[::-1]
        else:
            nxt = np.zeros_like(words)
            nxt[: len(words) - order + 1] = words[order - 1 :]
            pair = gram[fits] * width + nxt[fits]
            _, first_index, dense = np.unique(pair, return_index=True, return_inverse=True)
            gram = np.full(len(words), -1, np.int64)
            gram[fits] = dense
            first = np.flatnonzero(fits)[first_index]
        texts = (
            np.array([" ".join(vocabulary[words[p : p + order]]) for p in first.tolist()], dtype=object)
            if len(first)
            else np.array([], dtype=object)
        )
        out.append(texts)
    return out


def batch_document_frequencies(hypotheses: list[list[str]], references: list[list[list[str]]]) -> dict[str, int]:
    """{n-gram text (orders 1-4, words joined by spaces): items of the batch whose references hold it}."""
    tok = build(hypotheses, references)
    _, ref = ngram_counts(tok)
    texts = gram_texts(tok)
    out: dict[str, int] = {}
    for order, r in enumerate(ref):
        pairs = np.unique(tok.ref_item[r.caption].astype(np.int64) * (int(r.ngram.max(initial=0)) + 1) + r.ngram)
        g, c = np.unique(pairs % (int(r.ngram.max(initial=0)) + 1), return_counts=True)
        for text, count in zip(texts[order][g].tolist(), c.tolist()):
            out[text] = out.get(text, 0) + count
    return out


def merge_counts(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    """Sum two frequency tables (into the larger one)."""
    if len(a) < len(b):
        a, b = b, a
    for k, v in b.items():
        a[k] = a.get(k, 0) + v
    return a


def score_batch(
    hypotheses: list[list[str]], references: list[list[list[str]]], frequencies: dict[str, int], set_size: int
) -> dict[str, np.ndarray]:
    """Per item: bleu_1..4 (sentence), rouge_l, cider_d (with the set's frequencies), and the BLEU statistics
    (testlen, reflen, guess_1..4, correct_1..4)."""
    tok = build(hypotheses, references)
    hyp, ref = ngram_counts(tok)
    stats = bleu_stats(tok, hyp, ref)
    sentence = sentence_bleu(stats)
    texts = gram_texts(tok)
    ngrams, counts = [], []
    for order in range(MAX_ORDER):
        table = np.array([frequencies.get(t, 0) for t in texts[order].tolist()], np.int64)
        ids = np.flatnonzero(table > 0)
        ngrams.append(ids)
        counts.append(table[ids])
    df = DocumentFrequencies(tuple(ngrams), tuple(counts), set_size)
    out = {f"bleu_{k + 1}": sentence[:, k] for k in range(MAX_ORDER)}
    out["rouge_l"] = rouge_l(tok)
    out["cider_d"] = cider_d(tok, hyp, ref, df)
    out["testlen"], out["reflen"] = stats.testlen, stats.reflen
    for k in range(MAX_ORDER):
        out[f"guess_{k + 1}"] = stats.guess[:, k]
        out[f"correct_{k + 1}"] = stats.correct[:, k]
    return out


STAT_COLUMNS = ("testlen", "reflen", *(f"guess_{k}" for k in range(1, 5)), *(f"correct_{k}" for k in range(1, 5)))


def corpus_sums(columns: dict[str, np.ndarray], weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Additive corpus statistics of a batch: the BLEU statistics and the mean metrics' sums, with the item
    count; with `weights` (items, replicates) each becomes a (replicates,) array of weighted sums."""
    w = np.ones((len(columns["testlen"]), 1)) if weights is None else np.asarray(weights, np.float64)
    out = {name: np.asarray(columns[name], np.float64) @ w for name in (*STAT_COLUMNS, *MEAN_METRICS)}
    out["items"] = w.sum(axis=0)
    return out
