"""Scoring a set in batches, wherever its items are: what the score_instructions job's workers run.

CIDEr-D needs the whole set's document frequencies (which items' references hold each n-gram) and its
size before any item can be scored, so a set is scored in two passes over batches of its items:
1. `batch_document_frequencies(references)`: an Arrow table (n-gram text, items of this batch whose
   references hold it); batches hold distinct items, so a set's frequencies are the sums of its batches'
   (`merge_frequencies`, Arrow's group-by: the table is bounded by the set's distinct n-grams, not its
   items); a worker turns the set's table into a dict once (`frequency_lookup`);
2. `score_batch(batch, frequencies, set_size)`: every item's BLEU-1..4 (sentence and statistics),
   ROUGE-L and CIDEr-D as if the whole set had been scored at once, equal to `score_set` on the set.
`corpus_sums(rows, weights)` then gives a batch's additive corpus statistics (and each bootstrap
replicate's), which add across batches and workers in any order.
"""

from __future__ import annotations

from itertools import repeat

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vlnkit.captioning.bleu import bleu_stats, sentence_bleu
from vlnkit.captioning.cider import DocumentFrequencies, cider_d, items_holding
from vlnkit.captioning.corpus import MAX_ORDER, Tokenized, build
from vlnkit.captioning.ngrams import all_captions, ngram_counts, ngram_ids
from vlnkit.captioning.rouge import rouge_l

MEAN_METRICS = ("rouge_l", "cider_d")


def gram_texts(tok: Tokenized) -> list[pa.Array]:
    """Per order: the text of every n-gram id (ids shared by hypotheses and references, as `ngram_counts`
    numbers them), the words joined by spaces in Arrow (one C++ pass per order, no Python loop per n-gram)."""
    words, offsets = all_captions(tok)
    vocabulary = pa.array(list(tok.vocabulary), pa.string())
    out = []
    for order, (_, first) in enumerate(ngram_ids(words, offsets), start=1):
        if len(first) == 0:
            out.append(pa.array([], pa.string()))
            continue
        parts = [vocabulary.take(pa.array(words[first + j])) for j in range(order)]
        out.append(parts[0] if order == 1 else pc.binary_join_element_wise(*parts, " "))
    return out


FREQUENCIES = pa.schema([("ngram", pa.string()), ("df", pa.int64())])


def batch_document_frequencies(references: list[list[list[str]]]) -> pa.Table:
    """(ngram, df): each n-gram (orders 1-4, words joined by spaces) of the batch's references and how many
    items of the batch hold it in a reference. Only the references count (CIDEr-D's `compute_doc_freq`)."""
    tok = build([[] for _ in references], references)
    _, ref = ngram_counts(tok)
    texts = gram_texts(tok)
    names, counts = [], []
    for order, r in enumerate(ref):
        per_ngram = items_holding(tok.ref_item[r.caption], r.ngram)
        g = np.flatnonzero(per_ngram)
        names.append(texts[order].take(pa.array(g)))
        counts.append(pa.array(per_ngram[g], pa.int64()))
    return pa.Table.from_arrays([pa.concat_arrays(names), pa.concat_arrays(counts)], schema=FREQUENCIES)


def merge_frequencies(tables: list[pa.Table]) -> pa.Table:
    """Frequency tables of disjoint batches -> one, each n-gram's counts summed (Arrow's hash group-by)."""
    tables = [t for t in tables if t.num_rows]
    if len(tables) <= 1:
        return tables[0] if tables else FREQUENCIES.empty_table()
    summed = pa.concat_tables(tables).group_by("ngram").aggregate([("df", "sum")])
    return pa.Table.from_arrays([summed["ngram"], summed["df_sum"]], schema=FREQUENCIES)


def frequency_lookup(table: pa.Table) -> dict[str, int]:
    """A set's merged frequency table as {n-gram: df}, built once per worker for `score_batch`."""
    return dict(zip(table["ngram"].to_pylist(), table["df"].to_pylist()))


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
    get = frequencies.get
    for order in range(MAX_ORDER):
        table = np.fromiter(map(get, texts[order].to_pylist(), repeat(0)), np.int64, len(texts[order]))
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
