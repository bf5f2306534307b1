"""BLEU filter (against sacrebleu itself and a from-scratch BLEU), dedupe, R4R composition."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.paraphrases.bleu_filter import (
    ABOVE,
    BELOW,
    KEPT,
    SAME_AS_ORIGINAL,
    BleuBounds,
    ComposeError,
    compose,
    judge,
    r4r_sources,
    sentence_bleu,
)

REF = "walk past the table and turn left into the hallway then stop at the door"


def simple_bleu(hyp: str, ref: str) -> float:
    """Sentence BLEU for whitespace-tokenized text, written from the definition: clipped n-gram
    precisions (n <= 4, stopping at the longest order the hypothesis has), NIST 'exp' smoothing
    (the k-th zero precision counts as 1 / (2^k * total)), geometric mean, brevity penalty."""
    h, r = hyp.split(), ref.split()
    logs, k, any_match = [], 0, False
    for n in range(1, 5):
        hn = Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
        rn = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
        total = sum(hn.values())
        if total == 0:
            break
        match = sum(min(c, rn[g]) for g, c in hn.items())
        any_match |= match > 0
        if match == 0:
            k += 1
            logs.append(math.log(1 / (2**k * total)))
        else:
            logs.append(math.log(match / total))
    if not any_match:
        return 0.0
    bp = 1.0 if len(h) >= len(r) else (math.exp(1 - len(r) / len(h)) if h else 0.0)
    return bp * math.exp(sum(logs) / len(logs))


def test_hand_worked_bleu():
    # Two of 15 words changed (positions 9 and 11): 1-grams 13/15, 2-grams 10/14, 3-grams 8/13, 4-grams 6/12.
    hyp = "walk past the table and turn left into the corridor then wait at the door"
    assert sentence_bleu(hyp, REF) == pytest.approx((13 / 15 * 10 / 14 * 8 / 13 * 6 / 12) ** 0.25, abs=1e-12)
    assert sentence_bleu(REF, REF) == pytest.approx(1.0)
    assert sentence_bleu("xyzzy plugh", REF) == 0.0
    # Shorter by two words: brevity penalty exp(1 - 15/13).
    short = "walk the table turn left into the hallway then stop at the door"
    assert sentence_bleu(short, REF) == pytest.approx(simple_bleu(short, REF), abs=1e-12)


words = st.sampled_from("walk go the table left right door stop wait into hallway a".split())
sentences = st.lists(words, min_size=1, max_size=14).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(hyp=sentences, ref=sentences)
def test_bleu_matches_sacrebleu_and_the_definition(hyp, ref):
    ours = sentence_bleu(hyp, ref)
    assert ours == pytest.approx(sacrebleu.sentence_bleu(hyp, [ref]).score / 100, abs=1e-12)
    assert ours == pytest.approx(simple_bleu(hyp, ref), abs=1e-9)
    assert 0.0 <= ours <= 1.0 + 1e-12


# Hand-made pairs just either side of the default bounds (scores checked against the definition).
AROUND_BOUNDS = [
    ("walk wait pass move a by into the hallway stop at the door", 0.2479, BELOW),
    ("walk corridor the table move turn left go the hallway then stop go the door", 0.2519, KEPT),
    ("walk the table turn left into the hallway then stop at the door", 0.6920, KEPT),
    ("a chair the table and turn left into the hallway then stop at move chair", 0.7012, ABOVE),
    ("walk past the table and turn left into the corridor then stop at the door", 0.8003, ABOVE),
]


@pytest.mark.parametrize("paraphrase,score,reason", AROUND_BOUNDS)
def test_default_bounds_around_both_edges(paraphrase, score, reason):
    (v,) = judge(REF, [("de", paraphrase)])
    assert v["bleu"] == pytest.approx(score, abs=1e-4) == pytest.approx(simple_bleu(paraphrase, REF), abs=1e-4)
    assert v["reason"] == reason and v["kept"] == (reason == KEPT)


@pytest.mark.parametrize("paraphrase", [p for p, _, _ in AROUND_BOUNDS])
def test_bounds_are_inclusive_at_exactly_the_score(paraphrase):
    b = sentence_bleu(paraphrase, REF)
    assert judge(REF, [("fr", paraphrase)], BleuBounds(b, b))[0]["kept"]
    assert judge(REF, [("fr", paraphrase)], BleuBounds(b, 1.0))[0]["kept"]
    assert judge(REF, [("fr", paraphrase)], BleuBounds(0.0, b))[0]["kept"]
    assert judge(REF, [("fr", paraphrase)], BleuBounds(min(1.0, b + 1e-9), 1.0))[0]["reason"] == BELOW
    assert judge(REF, [("fr", paraphrase)], BleuBounds(0.0, max(0.0, b - 1e-9)))[0]["reason"] == ABOVE


def test_bounds_are_validated():
    for lo, hi in [(-0.1, 0.5), (0.8, 0.7), (0.2, 1.5), (float("nan"), 0.7)]:
        with pytest.raises(ValueError, match="BLEU bounds"):
            BleuBounds(lo, hi)


def test_copies_of_the_original_and_of_earlier_pivots_are_never_kept():
    good = "walk the table turn left into the hallway then stop at the door"
    verdicts = judge(
        REF,
        [
            ("ar", REF + " "),  # the original up to whitespace
            ("es", good),
            ("de", "  " + good),  # a copy of es's
            ("fr", "xyzzy"),
            ("hi", "xyzzy"),  # a copy of a rejected one is still a copy
        ],
    )
    assert [v["reason"] for v in verdicts] == [SAME_AS_ORIGINAL, KEPT, "duplicate_of_es", BELOW, "duplicate_of_fr"]
    assert [v["kept"] for v in verdicts] == [False, True, False, False, False]
    assert [v["language"] for v in verdicts] == ["ar", "es", "de", "fr", "hi"]


def test_r4r_sources_follow_the_r4r_generators_order_and_reject_revised_texts():
    a, b = ["A0. ", "A1. "], ["B0. ", "B1. ", "B2. "]
    record = {"first_path_id": 1, "second_path_id": 2, "instructions": [x + y for x in a for y in b]}
    assert r4r_sources(record, a, b) == [(k, a[k // 3], b[k % 3]) for k in range(6)]
    with pytest.raises(ComposeError, match="6 instructions, expected 2 x 2"):
        r4r_sources(record, a, b[:2])
    revised = dict(record, instructions=record["instructions"][:4] + ["A1. B1 changed", record["instructions"][5]])
    with pytest.raises(ComposeError, match="instruction 4"):
        r4r_sources(revised, a, b)


def test_compose_keeps_the_originals_joining_whitespace():
    assert compose("Walk left. ", "Go left.", "Stop here.") == "Go left. Stop here."
    assert compose("Walk left.", "Go left. ", " Stop here.") == "Go left.Stop here."
