"""The declared Parquet schema of score_instructions' per-instruction rows."""

from __future__ import annotations

import pyarrow as pa

from vlnkit.io.schemas import versioned_schema

_MEANINGS = {
    "system": "the system (instruction generator) that wrote the instruction; `human` is the leave-one-out row",
    "instr_id": "the instruction's id in its file (image_id of the SPICE layout)",
    "path_id": "the path the instruction describes (the resampling unit of the intervals)",
    "scan": "the Matterport3D scan, when the file names it",
    "instruction": "the generated instruction as given",
    "tokens": "its PTB tokens (pycocoevalcap 1.2's tokenizer, without Java)",
    "references": "how many references it was scored against",
    "bleu_1": "sentence BLEU-1 as pycocoevalcap reports per item (bleu/bleu_scorer.py)",
    "bleu_2": "sentence BLEU-2 (cumulative, as the reference)",
    "bleu_3": "sentence BLEU-3",
    "bleu_4": "sentence BLEU-4",
    "rouge_l": "ROUGE-L, beta 1.2 (rouge/rouge.py)",
    "cider_d": "CIDEr-D with the document frequencies of this system's set (cider/cider_scorer.py)",
    "meteor": "METEOR 1.5 from the reference jar (null without --meteor)",
    "spice": "SPICE 1.0's F-score from the reference jar, scored in its batch's jar call (null without --spice)",
    "testlen": "BLEU statistic: hypothesis length in tokens",
    "reflen": "BLEU statistic: the closest reference length (the shorter on a tie)",
    "guess_1": "BLEU statistic: unigrams in the hypothesis",
    "guess_2": "BLEU statistic: bigrams in the hypothesis",
    "guess_3": "BLEU statistic: trigrams in the hypothesis",
    "guess_4": "BLEU statistic: 4-grams in the hypothesis",
    "correct_1": "BLEU statistic: clipped matching unigrams",
    "correct_2": "BLEU statistic: clipped matching bigrams",
    "correct_3": "BLEU statistic: clipped matching trigrams",
    "correct_4": "BLEU statistic: clipped matching 4-grams",
}


_FLOATS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d", "meteor", "spice")


def _schema():
    s, f64, i64 = pa.string(), pa.float64(), pa.int64()
    types = {"system": s, "instr_id": s, "path_id": s, "scan": s, "instruction": s, "tokens": pa.list_(s)}
    fields = [
        pa.field(
            n,
            types.get(n, f64 if n in _FLOATS else i64),
            nullable=n in ("scan", "meteor", "spice"),
        )
        for n in _MEANINGS
    ]
    return versioned_schema("instruction_scores", 2, fields, _MEANINGS)  # 2: the spice column


INSTRUCTION_SCORES = _schema()
