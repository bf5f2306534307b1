"""Which language an instruction is translated from and back into, and through which pivots.

A round-trip paraphrase goes from the instruction's own language to a pivot and back into that
language, so the pivots of an instruction are every requested pivot but its own language. An R2R
record's instructions are in the job's `--source_language` (English for R2R, R4R, Fine-Grained R2R);
a Room-across-Room guide record's instruction is in its `language` tag, translated as that tag's
primary language ("hi-IN" -> "hi"), so a Hindi instruction skips the "hi" pivot and comes back in Hindi.

>>> pivots_for(("de", "hi", "te"), "hi")
('de', 'te')
>>> instruction_sources({"instruction_id": 26, "instruction": "बाएं", "language": "hi-IN", "path_id": 2})
[('26', 'बाएं', 'hi-IN', 'hi')]
>>> instruction_sources({"path_id": 7, "instructions": ["Go left."]}, r2r_language="en")
[('7_0', 'Go left.', 'en', 'en')]
"""

from __future__ import annotations

from vlnkit.datasets.languages import primary_language, record_instructions
from vlnkit.datasets.rxr import is_rxr


def pivots_for(languages, source_language: str) -> tuple[str, ...]:
    """The pivots of a text in `source_language` (a primary language code): every one of `languages` but it."""
    return tuple(lang for lang in languages if lang != source_language)


def instruction_sources(record: dict, r2r_language: str = "en") -> list[tuple[str, str, str, str]]:
    """(instr_id, text, language tag, translation source language) of every instruction of a record read
    by `vlnkit.datasets.rxr.parse_dataset`: an R2R record's tag and source are `r2r_language`."""
    if not is_rxr(record):
        return [(instr_id, text, r2r_language, r2r_language) for instr_id, text, _ in record_instructions(record)]
    return [(instr_id, text, tag, primary_language(tag)) for instr_id, text, tag in record_instructions(record)]
