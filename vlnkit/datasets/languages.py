"""The instructions of a dataset record, each with its address and its language.

Why a module of its own: the per-instruction jobs (perturb, paraphrase, build_compat) read R2R-style records,
which hold a list of English `instructions` addressed "<path_id>_<k>", and Room-across-Room (RxR)
guide records, which hold one `instruction` in the language of their `language` tag (en-IN, en-US,
hi-IN, te-IN) addressed by `str(instruction_id)`. Each job asks this module, so the address and the
language of an instruction are decided in one place.

The language is kept as the record gives it (an IETF tag such as "hi-IN"); an R2R record's is
`R2R_LANGUAGE` ("en": R2R, R4R and Fine-Grained R2R are English). `primary_language` gives the
language subtag ("hi") for the tools that work per language (tokenizers, translators).

>>> record_instructions({"path_id": 7, "instructions": ["Go left.", "Turn."]})
[('7_0', 'Go left.', 'en'), ('7_1', 'Turn.', 'en')]
>>> record_instructions({"instruction_id": 26, "instruction": "बाएं मुड़िए", "language": "hi-IN", "path_id": 2})
[('26', 'बाएं मुड़िए', 'hi-IN')]
>>> primary_language("te-IN"), primary_language("en_US"), primary_language("EN")
('te', 'en', 'en')
"""

from __future__ import annotations

from vlnkit.datasets.rxr import episode_ids, instructions, is_rxr

R2R_LANGUAGE = "en"


def primary_language(tag: str) -> str:
    """The primary language subtag of an IETF tag ("hi-IN" -> "hi"), lower-cased."""
    return str(tag).replace("_", "-").split("-")[0].lower()


def record_instructions(record: dict) -> list[tuple[str, str, str]]:
    """(instr_id, instruction text, language tag) of every instruction of a record read by
    `vlnkit.datasets.rxr.parse_dataset` (addresses and texts as `episode_ids` and `instructions` give them)."""
    language = str(record.get("language") or R2R_LANGUAGE) if is_rxr(record) else R2R_LANGUAGE
    return [(instr_id, text, language) for instr_id, text in zip(episode_ids(record), instructions(record))]


def language_counts(record: dict) -> dict[str, int]:
    """{"instructions": n, "instructions.<language tag>": n per tag} of one record (a job summary's tallies).

    >>> language_counts({"instruction_id": 26, "instruction": "go", "language": "hi-IN"})
    {'instructions': 1, 'instructions.hi-IN': 1}
    """
    counts: dict[str, int] = {"instructions": 0}
    for _, _, language in record_instructions(record):
        counts["instructions"] += 1
        counts[f"instructions.{language}"] = counts.get(f"instructions.{language}", 0) + 1
    return counts
