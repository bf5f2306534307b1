"""Instruction perturbations on hand-annotated Docs: hand-checked examples and an independent
direction-swap oracle. Hand annotation pins the exact parse each rule is tested on; the same rules
on real parses of the trained English pipeline are in test_real_parse.py, loading in test_nlp.py."""

import re

import numpy as np
import pytest
import spacy
from hypothesis import given, settings
from hypothesis import strategies as st
from spacy.tokens import Doc

from vlnkit.perturbations.compat import NotApplicable
from vlnkit.perturbations.instructions import (
    DIRECTION_SETS,
    InstructionPerturbation,
    apply_changes,
    direction_swap,
    entity_swap,
    match_case,
    phrase_swap,
)

NLP = spacy.blank("en")


def rng(seed=0):
    return np.random.default_rng(seed)


def parsed(spec: str) -> Doc:
    """A Doc from 'word/POS/dep/head/lemma' items (head: absolute token index); no space before . and ,"""
    items = [x.split("/") for x in spec.split()]
    words = [w for w, *_ in items]
    spaces = [i + 1 < len(words) and words[i + 1] not in (".", ",") for i in range(len(words))]
    return Doc(
        NLP.vocab,
        words=words,
        spaces=spaces,
        pos=[p for _, p, *_ in items],
        deps=[d for _, _, d, *_ in items],
        heads=[int(h) for *_, h, _ in items],
        lemmas=[lemma for *_, lemma in items],
    )


def outcomes(func, doc, seeds=40):
    results = [func(doc, rng(s)) for s in range(seeds)]
    return results


# ---------------------------------------------------------------------------- direction swap
@pytest.mark.parametrize(
    "text, expected",
    [
        ("Walk away from the stairs and go into the kitchen.", "Walk towards the stairs and go out of the kitchen."),
        ("Away from the door, go UP the stairs.", "Towards the door, go DOWN the stairs."),
        ("Go Out of the room, then up.", "Go Into the room, then down."),
        ("Turn to face the front; exit the bathroom!", "Turn to face the back; enter the bathroom!"),
        ("Stop on the left.", "Stop on the right."),  # after a determiner, 'around' is not a noun
        ("Exited the room, walk backwards (inside).", "Entered the room, walk forwards (outside)."),
        ("Exit the room and go through the exit.", "Enter the room and go through the exit."),  # a noun after 'the'
        ("Turn left and then left again.", None),  # 'left' is always a direction, whatever a tagger says
    ],
)
def test_direction_swap_hand_checked(text, expected):
    for seed in range(5):
        out = direction_swap(NLP(text), rng(seed))
        if expected is None:  # 'left' has two replacements: check the spans instead
            assert [c.before for c in out.changes] == ["left", "left"]
            continue
        assert isinstance(out, InstructionPerturbation) and out.text == expected
        assert apply_changes(text, out.changes) == expected


def test_three_member_sets_use_both_other_members_and_record_spans():
    text = "Turn left at the sofa."
    seen = {direction_swap(NLP(text), rng(s)).text for s in range(30)}
    assert seen == {"Turn around at the sofa.", "Turn right at the sofa."}
    out = direction_swap(NLP(text), rng(0))
    (change,) = out.changes
    assert (change.start, change.end, change.before) == (5, 9, "left") and text[5:9] == "left"


def test_no_direction_word_is_not_applicable():
    assert direction_swap(NLP("Walk past the sofa and wait."), rng()) == NotApplicable(
        "direction_swap", "no_direction_word"
    )


def test_match_case():
    assert match_case("LEFT", "right") == "RIGHT"
    assert match_case("Away from", "towards") == "Towards"
    assert match_case("into", "out of") == "out of"


# An independent oracle: direction words found with a regular expression on the raw text, except
# enter/exit forms right after a determiner ("the exit" is a noun).
_PHRASES = sorted({w for g in DIRECTION_SETS for w in g}, key=lambda w: -len(w))
_ORACLE = re.compile(r"(?<![A-Za-z])(" + "|".join(re.escape(p) for p in _PHRASES) + r")(?![A-Za-z])", re.IGNORECASE)
_SET_OF = {w: g for g in DIRECTION_SETS for w in g}
_AFTER_DETERMINER = re.compile(
    r"(?<![A-Za-z])(the|your|a|an|my|his|her|their|its|this|that|another|each|every|no|our)\s+$", re.IGNORECASE
)


def outside(text: str, spans) -> list[str]:
    """The pieces of `text` between sorted, non-overlapping spans."""
    starts = [0] + [e for _, e in spans]
    ends = [s for s, _ in spans] + [len(text)]
    return [text[a:b] for a, b in zip(starts, ends)]


def oracle_spans(text: str) -> list[tuple[int, int]]:
    return [
        (m.start(), m.end())
        for m in _ORACLE.finditer(text)
        if not (m.group(0).lower().startswith(("enter", "exit")) and _AFTER_DETERMINER.search(text[: m.start()]))
    ]


FILLERS = ["walk", "the", "an", "door", "stairs", "kitchen", "and", "then", "go", "stop", "wait", "to", "chair"]
DIRECTIONS = [w for g in DIRECTION_SETS for w in g]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(FILLERS + DIRECTIONS),
            st.sampled_from(["lower", "title", "upper"]),
            st.sampled_from([" ", ", ", ". "]),
        ),
        min_size=1,
        max_size=14,
    ),
    st.integers(0, 2**31),
)
def test_direction_swap_matches_a_regex_oracle(parts, seed):
    text = "".join(getattr(w, case)() + sep for w, case, sep in parts).strip()
    expected = oracle_spans(text)
    out = direction_swap(NLP(text), rng(seed))
    if not expected:
        assert isinstance(out, NotApplicable)
        return
    assert [(c.start, c.end) for c in out.changes] == expected
    assert out.text != text
    for c in out.changes:
        assert c.before == text[c.start : c.end]
        group = _SET_OF[c.before.lower()]
        assert c.after.lower() in group and c.after.lower() != c.before.lower()
        assert c.after == match_case(c.before, c.after.lower())
    # Everything outside the changed spans (punctuation, other words) is untouched.
    assert apply_changes(text, out.changes) == out.text
    out_spans, shift = [], 0
    for c in out.changes:
        out_spans.append((c.start + shift, c.start + shift + len(c.after)))
        shift += len(c.after) - (c.end - c.start)
    assert outside(out.text, out_spans) == outside(text, expected)


# ---------------------------------------------------------------------------- entity swap
STAIRS = parsed(
    "Walk/VERB/ROOT/0/walk past/ADP/prep/0/past the/DET/det/3/the staircase/NOUN/pobj/1/staircase "
    "and/CCONJ/cc/3/and the/DET/det/6/the stairs/NOUN/conj/3/stairs to/ADP/prep/0/to "
    "the/DET/det/9/the kitchen/NOUN/pobj/7/kitchen ./PUNCT/punct/0/."
)


def test_entity_swap_never_swaps_same_lemma_or_synonyms():
    texts = {out.text for out in outcomes(entity_swap, STAIRS)}
    assert texts == {
        "Walk past the kitchen and the stairs to the staircase.",
        "Walk past the staircase and the kitchen to the stairs.",
    }


def test_entity_swap_moves_sentence_initial_capitals_and_skips_stop_words():
    doc = parsed(
        "The/DET/det/1/the kitchen/NOUN/nsubj/2/kitchen is/AUX/ROOT/2/be past/ADP/prep/2/past "
        "the/DET/det/5/the sofa/NOUN/pobj/3/sofa at/ADP/prep/2/at the/DET/det/8/the end/NOUN/pobj/6/end ./PUNCT/punct/2/."
    )
    out = entity_swap(doc, rng())
    assert out.text == "The sofa is past the kitchen at the end."
    assert [(c.before, c.after) for c in out.changes] == [("The kitchen", "The sofa"), ("the sofa", "the kitchen")]


def test_entity_swap_not_applicable_cases():
    same = parsed(
        "Go/VERB/ROOT/0/go past/ADP/prep/0/past the/DET/det/3/the stairs/NOUN/pobj/1/stair "
        "to/ADP/prep/0/to the/DET/det/6/the stairway/NOUN/pobj/4/stairway ./PUNCT/punct/0/."
    )
    assert entity_swap(same, rng()) == NotApplicable("entity_swap", "entities_share_lemma")
    one = parsed("Go/VERB/ROOT/0/go to/ADP/prep/0/to the/DET/det/3/the sofa/NOUN/pobj/1/sofa ./PUNCT/punct/0/.")
    assert entity_swap(one, rng()) == NotApplicable("entity_swap", "fewer_than_two_entities")
    assert entity_swap(NLP("Go to the sofa and the bed."), rng()) == NotApplicable("entity_swap", "no_parse")


# ---------------------------------------------------------------------------- phrase swap
ONE_SENTENCE = parsed(
    "Walk/VERB/ROOT/0/walk past/ADP/prep/0/past the/DET/det/3/the table/NOUN/pobj/1/table and/CCONJ/cc/0/and "
    "turn/VERB/conj/0/turn left/ADV/advmod/5/left at/ADP/prep/5/at the/DET/det/9/the door/NOUN/pobj/7/door "
    "./PUNCT/punct/0/."
)


def test_phrase_swap_single_sentence_removes_or_duplicates_a_clause():
    results = outcomes(phrase_swap, ONE_SENTENCE)
    assert {(r.operation, r.text) for r in results} == {
        ("remove_clause", "Walk past the table."),
        ("duplicate_clause", "Walk past the table and turn left at the door and turn left at the door."),
        (
            "duplicate_sentence",
            "Walk past the table and turn left at the door. Walk past the table and turn left at the door.",
        ),
    }


def test_phrase_swap_clause_opening_a_sentence_is_removed_with_its_comma():
    doc = parsed(
        "Once/SCONJ/mark/2/once you/PRON/nsubj/2/you reach/VERB/advcl/6/reach the/DET/det/4/the door/NOUN/dobj/2/door "
        ",/PUNCT/punct/6/, turn/VERB/ROOT/6/turn left/ADV/advmod/6/left ./PUNCT/punct/6/."
    )
    removed = {r.text for r in outcomes(phrase_swap, doc) if r.operation == "remove_clause"}
    assert removed == {"Turn left."}


THREE_SENTENCES = parsed(
    "Turn/VERB/ROOT/0/turn left/ADV/advmod/0/left ./PUNCT/punct/0/. "
    "Walk/VERB/ROOT/3/walk ahead/ADV/advmod/3/ahead ./PUNCT/punct/3/. "
    "Stop/VERB/ROOT/6/stop here/ADV/advmod/6/here ./PUNCT/punct/6/."
)


def test_phrase_swap_over_sentences_keeps_the_last_one_last_when_shuffling():
    results = {(r.operation, r.text) for r in outcomes(phrase_swap, THREE_SENTENCES, seeds=80)}
    assert results == {
        ("shuffle", "Walk ahead. Turn left. Stop here."),
        ("remove_sentence", "Walk ahead. Stop here."),
        ("remove_sentence", "Turn left. Stop here."),
        ("remove_sentence", "Turn left. Walk ahead."),
        ("duplicate_sentence", "Turn left. Turn left. Walk ahead. Stop here."),
        ("duplicate_sentence", "Turn left. Walk ahead. Walk ahead. Stop here."),
        ("duplicate_sentence", "Turn left. Walk ahead. Stop here. Stop here."),
    }


def test_phrase_swap_needs_a_parse_and_is_deterministic():
    assert phrase_swap(NLP("Turn left. Stop."), rng()) == NotApplicable("phrase_swap", "no_parse")
    assert phrase_swap(ONE_SENTENCE, rng(7)) == phrase_swap(ONE_SENTENCE, rng(7))
