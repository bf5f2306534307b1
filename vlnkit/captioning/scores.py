"""Every Java-free metric of one evaluation set, per item and for the set, in one call."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.captioning.bleu import BleuStats, bleu_stats, corpus_bleu, sentence_bleu
from vlnkit.captioning.cider import cider_d, document_frequencies
from vlnkit.captioning.corpus import Tokenized, build, build_texts
from vlnkit.captioning.ngrams import ngram_counts
from vlnkit.captioning.rouge import rouge_l

METRICS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d")


@dataclass(frozen=True)
class SetScores:
    """`per_item[metric]` (items,) as the reference reports per image; `corpus[metric]` the set's score.

    Corpus BLEU-n pools counts (`bleu_stats` keeps what a resample needs); ROUGE-L and CIDEr-D are means.
    """

    per_item: dict[str, np.ndarray]
    corpus: dict[str, float]
    bleu_stats: BleuStats


def score_set(hypotheses: list[list[str]], references: list[list[list[str]]]) -> SetScores:
    """Score tokenized hypotheses against their references (`references[i]`: item i's, at least one)."""
    tok = build(hypotheses, references)
    return _scores(tok, tok)


def score_texts(hypotheses: list[str], references: list[list[str]]) -> SetScores:
    """Score captions given as text, tokens separated by spaces, the way pycocoevalcap's scorers take them:
    BLEU and CIDEr-D read `caption.split()`, ROUGE-L `caption.split(" ")`. Equal to `score_set` of the
    split captions for single-spaced text (such as `ptb.tokenize`'s tokens joined), and much faster than
    splitting them in Python first (`corpus.build_texts`)."""
    return _scores(*build_texts(hypotheses, references))


def _scores(tok: Tokenized, rouge: Tokenized) -> SetScores:
    """Every metric from `tok` (`split()` words), ROUGE-L from `rouge` (`split(" ")` words)."""
    hyp, ref = ngram_counts(tok)
    stats = bleu_stats(tok, hyp, ref)
    sentence = sentence_bleu(stats)
    corpus = corpus_bleu(stats)
    per_item = {f"bleu_{k + 1}": sentence[:, k] for k in range(4)}
    per_item["rouge_l"] = rouge_l(rouge)
    per_item["cider_d"] = cider_d(tok, hyp, ref, document_frequencies(tok, ref))
    totals = {f"bleu_{k + 1}": float(corpus[k]) for k in range(4)}
    totals["rouge_l"] = float(np.mean(per_item["rouge_l"]))
    totals["cider_d"] = float(np.mean(per_item["cider_d"]))
    return SetScores(per_item=per_item, corpus=totals, bleu_stats=stats)
