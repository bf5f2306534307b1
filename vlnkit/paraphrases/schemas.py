"""The declared Parquet schemas of paraphrases (the paraphrase job's rows) and of the translation cache's parts."""

from __future__ import annotations

import pyarrow as pa

from vlnkit.io.schemas import versioned_schema


def _paraphrases_schema():
    return versioned_schema(
        "paraphrases",
        3,
        [
            pa.field("instr_id", pa.string(), nullable=False),
            pa.field("instruction", pa.string(), nullable=False),
            pa.field("source_language", pa.string(), nullable=False),
            pa.field("language", pa.string(), nullable=False),
            pa.field("paraphrase", pa.string(), nullable=False),
            pa.field("bleu", pa.float64(), nullable=False),
            pa.field("kept", pa.bool_(), nullable=False),
            pa.field("reason", pa.string(), nullable=False),
            pa.field("backend", pa.string(), nullable=False),
        ],
        {
            "instr_id": "the source instruction's episode ('<path_id>_<k>')",
            "instruction": "the source instruction",
            "source_language": "the source instruction's language, which the paraphrase is in",
            "language": "the pivot language of the round trip",
            "paraphrase": "the instruction translated to the pivot and back",
            "bleu": "BLEU of the paraphrase against the source instruction",
            "kept": "whether the paraphrase passed the filters",
            "reason": "why it was kept or not (kept, bleu_below_min, bleu_above_max, same_as_original, duplicate_of_<language>)",
            "backend": "the translator that made the row (google, or offline-demo, which is not a translation)",
        },
    )


# One row per instruction x pivot, kept or not (`reason`: kept, bleu_below_min, bleu_above_max,
# same_as_original, duplicate_of_<language>). `language` is the pivot, `source_language` the
# instruction's own language, which the paraphrase is in (R2R: --source_language, "en"; RxR: the
# record's tag, e.g. "hi-IN"). `backend` names the translator that made the row (`google`, or
# `offline-demo`, which is not a translation): a consumer can refuse demo rows as training data.
# Version 2 added `backend`, version 3 `source_language`.
PARAPHRASES = _paraphrases_schema()

# The translation cache's part files (vlnkit.paraphrases.cache).
CACHE_SCHEMA = versioned_schema(
    "translation_cache",
    1,
    [
        pa.field("backend", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("target", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("translation", pa.string(), nullable=False),
    ],
)
