"""Judging round-trip paraphrases (docs/jobs/paraphrase.md).

A paraphrase is kept when its sentence BLEU against the original, on a 0-1 scale, is within
[min_bleu, max_bleu] (both inclusive; default [0.25, 0.7]): below, it is garbage; above, a
near-copy. Copies of the original and of an earlier pivot's paraphrase (same text up to
whitespace) are never kept, whatever their score. Every candidate gets a verdict and a
reason, so the filter can be audited.

R4R instructions are R2R instruction pairs concatenated (`x + y`, as the R4R generator
does), so their paraphrases are composed from the paraphrases of x and y through the same
pivot, and judged against the R4R instruction like any other candidate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DEFAULT_LANGUAGES = ("ar", "es", "de", "fr", "hi", "it", "pt", "ru", "tr", "zh")
DEFAULT_MIN_BLEU = 0.25
DEFAULT_MAX_BLEU = 0.7

KEPT = "kept"
SAME_AS_ORIGINAL = "same_as_original"
DUPLICATE = "duplicate_of_"  # + the earlier pivot's language
BELOW = "bleu_below_min"
ABOVE = "bleu_above_max"

_BLEU = None


def sentence_bleu(paraphrase: str, original: str) -> float:
    """`sacrebleu.sentence_bleu(paraphrase, [original])` with its defaults, divided by 100.

    One reused `BLEU(effective_order=True)` object: the same settings `sentence_bleu` builds on
    every call, at half the cost.
    """
    global _BLEU
    if _BLEU is None:
        from sacrebleu.metrics import BLEU

        _BLEU = BLEU(effective_order=True)
    return _BLEU.sentence_score(paraphrase, [original]).score / 100.0


@dataclass(frozen=True)
class BleuBounds:
    min_bleu: float = DEFAULT_MIN_BLEU
    max_bleu: float = DEFAULT_MAX_BLEU

    def __post_init__(self):
        lo, hi = self.min_bleu, self.max_bleu
        if not (math.isfinite(lo) and math.isfinite(hi) and 0.0 <= lo <= hi <= 1.0):
            raise ValueError(f"BLEU bounds must satisfy 0 <= min_bleu <= max_bleu <= 1, got [{lo}, {hi}]")

    def verdict(self, bleu: float) -> str:
        if bleu < self.min_bleu:
            return BELOW
        if bleu > self.max_bleu:
            return ABOVE
        return KEPT


def normalize(text: str) -> str:
    """Whitespace-normalized text: what 'the same text' means for duplicates."""
    return " ".join(text.split())


def judge(original: str, candidates: Iterable[tuple[str, str]], bounds: BleuBounds = BleuBounds()) -> list[dict]:
    """Verdicts for (language, paraphrase) candidates of one original, in the given pivot order.

    Returns one dict per candidate: language, paraphrase, bleu, kept, reason.
    """
    seen = {normalize(original): None}
    out = []
    for language, paraphrase in candidates:
        bleu = sentence_bleu(paraphrase, original)
        key = normalize(paraphrase)
        if key in seen:
            first = seen[key]
            reason = SAME_AS_ORIGINAL if first is None else DUPLICATE + first
        else:
            seen[key] = language
            reason = bounds.verdict(bleu)
        out.append(
            {"language": language, "paraphrase": paraphrase, "bleu": bleu, "kept": reason == KEPT, "reason": reason}
        )
    return out


# ----------------------------------------------------------------------------- R4R composition
class ComposeError(ValueError):
    """An R4R record whose instructions cannot be traced back to its two R2R paths."""


def r4r_sources(record: dict, first_instructions: Sequence[str], second_instructions: Sequence[str]) -> list[tuple]:
    """(k, x, y) for every instruction k of an R4R record: instructions[k] == x + y.

    The R4R generator orders instructions as [x + y for x in A for y in B]; a record that
    does not match (for example, built from a revised R2R) raises ComposeError naming the first
    mismatch.
    """
    instructions = record["instructions"]
    n_a, n_b = len(first_instructions), len(second_instructions)
    if len(instructions) != n_a * n_b:
        raise ComposeError(
            f"{len(instructions)} instructions, expected {n_a} x {n_b} from paths "
            f"{record.get('first_path_id')} and {record.get('second_path_id')}"
        )
    out = []
    for k, text in enumerate(instructions):
        x, y = first_instructions[k // n_b], second_instructions[k % n_b]
        if text != x + y:
            raise ComposeError(f"instruction {k} is not the concatenation of its R2R sources (R2R text revised?)")
        out.append((k, x, y))
    return out


def compose(x: str, px: str, py: str) -> str:
    """Paraphrase of `x + y` from the paraphrases of x and y: joined with x's own trailing whitespace."""
    joiner = x[len(x.rstrip()) :]
    return px.rstrip() + joiner + py.lstrip()
