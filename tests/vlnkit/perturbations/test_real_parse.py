"""Entity and phrase swap on real parses of the trained English pipeline.

Hand-checked R2R instructions (every outcome over many seeds read and judged by hand), then
structural invariants on every instruction of R2R val_seen: each change is a span of the source
that the method is allowed to touch (a noun chunk, a clause subtree, a sentence), and the changes
reproduce the output from the source.
"""

from collections import Counter

import numpy as np
import pytest
import spacy

from vlnkit.perturbations.compat import NotApplicable, record_rng
from vlnkit.perturbations.instructions import (
    ENTITY_STOP_LIST,
    SYNONYM_GROUPS,
    InstructionPerturbation,
    apply_changes,
    direction_swap,
    entity_swap,
    phrase_swap,
)

pytestmark = pytest.mark.real_data


def outcomes(func, doc, seeds=80):
    results = [func(doc, np.random.default_rng(s)) for s in range(seeds)]
    return {(r.operation, r.text) if isinstance(r, InstructionPerturbation) else r for r in results}


def texts(func, doc, seeds=80):
    return {text for _, text in outcomes(func, doc, seeds)}


# ---------------------------------------------------------------------------- hand-checked
R2R_5593_1 = (
    "Exit the room using the door on the left. Turn slightly left and go past the round table an chairs. Wait there. "
)


def test_hand_checked_r2r_instruction_all_methods(trained_nlp):
    doc = trained_nlp(R2R_5593_1)
    rest = " Wait there. "
    assert texts(direction_swap, doc) == {
        "Enter the room using the door on the right. Turn slightly around and go past the round table an chairs."
        + rest,
        "Enter the room using the door on the right. Turn slightly right and go past the round table an chairs." + rest,
    }
    # "Exit" opening the sentence is tagged as a noun by the small model: it is not an entity.
    assert texts(entity_swap, doc) == {
        "Exit the room using the round table on the left. Turn slightly left and go past the door an chairs." + rest
    }
    first, second = (
        "Exit the room using the door on the left.",
        "Turn slightly left and go past the round table an chairs.",
    )
    assert outcomes(phrase_swap, doc) == {
        ("duplicate_clause", f"{first[:-1]} and using the door on the left. {second}{rest}"),
        ("duplicate_clause", f"{first} {second[:-1]} and go past the round table an chairs.{rest}"),
        ("duplicate_sentence", f"{first} {first} {second}{rest}"),
        ("duplicate_sentence", f"{first} {second} {second}{rest}"),
        ("duplicate_sentence", f"{first} {second} Wait there. Wait there. "),
        # "left" is parsed as a verb heading "slightly left and go ...": a direction word is never a clause head.
        ("remove_clause", f"{first} Turn slightly left.{rest}"),
        ("remove_clause", f"Exit the room. {second}{rest}"),
        ("remove_sentence", f"{first} {second} "),
        ("remove_sentence", f"{first}{rest}"),
        ("remove_sentence", f"{second}{rest}"),
        ("shuffle", f"{second} {first}{rest}"),
    }


def test_hand_checked_r2r_clause_with_serial_comma(trained_nlp):
    doc = trained_nlp("Exit the bathroom, walk down the hall, and start down the stairs. Stop two steps down. ")
    assert texts(entity_swap, doc) == {
        "Exit the bathroom, walk down the stairs, and start down the hall. Stop two steps down. ",
        "Exit the hall, walk down the bathroom, and start down the stairs. Stop two steps down. ",
        "Exit the stairs, walk down the hall, and start down the bathroom. Stop two steps down. ",
    }
    removed = {text for op, text in outcomes(phrase_swap, doc) if op == "remove_clause"}
    assert removed == {"Exit the bathroom, walk down the hall. Stop two steps down. "}


def test_synonyms_and_same_lemma_are_never_swapped_with_each_other(trained_nlp):
    doc = trained_nlp("Walk past the staircase and the stairs to the kitchen.")
    assert texts(entity_swap, doc) == {
        "Walk past the kitchen and the stairs to the staircase.",
        "Walk past the staircase and the kitchen to the stairs.",
    }
    doc = trained_nlp("Go through the exit and walk past the piano, the couch and the sofa.")
    swapped = texts(entity_swap, doc)
    assert "Go through the exit and walk past the piano, the sofa and the couch." not in swapped
    assert len(swapped) == 5  # 4 entities, 6 pairs, couch/sofa excluded
    doc = trained_nlp("Go up the stairs, past the stairway, to the top of the staircase.")
    assert entity_swap(doc, np.random.default_rng(0)) == NotApplicable("entity_swap", "entities_share_lemma")


def test_casing_moves_with_the_sentence_start_and_upper_case_is_kept(trained_nlp):
    doc = trained_nlp("The kitchen is past the sofa. Wait by the DINING TABLE.")
    assert texts(entity_swap, doc) == {
        "The DINING TABLE is past the sofa. Wait by the kitchen.",
        "The kitchen is past the DINING TABLE. Wait by the sofa.",
        "The sofa is past the kitchen. Wait by the DINING TABLE.",
    }


# ---------------------------------------------------------------------------- all of val_seen
def _synonyms(a: str, b: str) -> bool:
    return any(a in g and b in g for g in SYNONYM_GROUPS)


def test_val_seen_is_parsed_quickly_enough_to_use_it_whole(val_seen):
    assert len(val_seen.docs) == len(val_seen.texts) == 1021
    assert val_seen.seconds < 60, "parse a seeded subset of >= 1000 instructions instead"


def test_direction_swap_is_the_same_on_a_tokenizer_and_a_trained_parse(val_seen):
    blank = spacy.blank("en")
    for iid, text, doc in zip(val_seen.ids, val_seen.texts, val_seen.docs):
        trained = direction_swap(doc, record_rng(0, "direction_swap", iid, 0))
        assert trained == direction_swap(blank(text), record_rng(0, "direction_swap", iid, 0)), iid


def test_entity_swap_invariants_on_val_seen(val_seen):
    applied, reasons = 0, Counter()
    for iid, src, doc in zip(val_seen.ids, val_seen.texts, val_seen.docs):
        res = entity_swap(doc, record_rng(0, "entity_swap", iid, 0))
        if isinstance(res, NotApplicable):
            reasons[res.reason] += 1
            continue
        applied += 1
        a, b = res.changes
        assert a.end <= b.start and apply_changes(src, res.changes) == res.text != src, iid
        chunk_ends = {c.end_char: c for c in doc.noun_chunks}
        roots = []
        for change, other in ((a, b), (b, a)):
            assert change.before == src[change.start : change.end]
            # A noun chunk, or its tail after a trimmed preposition, headed by a noun outside the stop list.
            chunk = chunk_ends[change.end]
            assert chunk.start_char <= change.start, iid
            span = doc.char_span(change.start, change.end)
            assert span is not None and span.root == chunk.root and span.root.pos_ in ("NOUN", "PROPN")
            assert span.root.lower_ not in ENTITY_STOP_LIST and span.root.lemma_.lower() not in ENTITY_STOP_LIST
            roots.append(span.root)
            # The other entity, written as it reads at this position: only its first letter may change case.
            assert change.after[1:] == other.before[1:] and change.after[0].lower() == other.before[0].lower()
            if span[0].is_sent_start:
                assert change.after[0].isupper(), iid
        la, lb = (r.lemma_.lower() for r in roots)
        assert la != lb and not _synonyms(la, lb) and not _synonyms(roots[0].lower_, roots[1].lower_), iid
        # A swap moves characters, it never adds or drops one (punctuation kept), up to first-letter case.
        assert Counter(src.lower()) == Counter(res.text.lower()), iid
    assert applied / len(val_seen.docs) > 0.85, reasons
    assert set(reasons) <= {"fewer_than_two_entities", "entities_share_lemma"}


def _clause_spans(doc) -> dict[tuple[int, int], object]:
    """(start char, end char) of every conjunct / adverbial-clause verb subtree, computed here."""
    return {
        (t.left_edge.idx, t.right_edge.idx + len(t.right_edge)): t
        for t in doc
        if t.dep_ in ("conj", "advcl") and t.pos_ in ("VERB", "AUX")
    }


def _only_connectives(text: str) -> bool:
    return all(w in {"and", "then", "but", "or", ",", ";", ":", "-"} for w in text.replace(",", " , ").split())


def test_phrase_swap_invariants_on_val_seen(val_seen):
    ops, reasons = Counter(), Counter()
    for iid, src, doc in zip(val_seen.ids, val_seen.texts, val_seen.docs):
        res = phrase_swap(doc, record_rng(0, "phrase_swap", iid, 0))
        if isinstance(res, NotApplicable):
            reasons[res.reason] += 1
            continue
        ops[res.operation] += 1
        (c,) = res.changes
        assert c.before == src[c.start : c.end] and apply_changes(src, [c]) == res.text != src, iid
        sents = [s for s in doc.sents if s.text.strip()]
        clauses = _clause_spans(doc)
        if res.operation == "remove_clause":
            # The removed text is one clause subtree plus only connectives (", and", ", then", a comma);
            # a clause that opened its sentence hands its capital to the next word.
            inside = [(s, e) for s, e in clauses if c.start <= s and e <= c.end]
            assert inside, iid
            s, e = min(inside, key=lambda se: se[0])
            outer = max((se for se in inside if se[0] == s), key=lambda se: se[1])
            rest = src[c.start : outer[0]] + " " + src[outer[1] : c.end]
            if c.after:
                assert c.after == src[c.end - 1].upper() and len(c.after) == 1, iid
                rest = rest[:-1]
            assert _only_connectives(rest), (iid, rest)
        elif res.operation == "remove_sentence":
            assert c.after == "" and c.before.strip() in {s.text.strip() for s in sents} and len(sents) > 1, iid
        elif res.operation == "duplicate_clause":
            assert c.start == c.end and c.after.startswith(" and "), iid
            copies = {(e, src[s:e]) for s, e in clauses}
            assert any(e == c.start and c.after[5:][1:] == text[1:] for e, text in copies), iid
        elif res.operation == "duplicate_sentence":
            assert c.start == c.end and (c.start, c.after[1:]) in {(s.end_char, s.text) for s in sents}, iid
        else:
            assert res.operation == "shuffle" and len(sents) >= 3, iid
            assert (c.start, c.end) == (sents[0].start_char, sents[-2].end_char), iid
            assert Counter(c.after) == Counter(c.before) and all(s.text in c.after for s in sents[:-1]), iid
            assert res.text.endswith(src[sents[-1].start_char :]), iid  # the last sentence stays last
    assert (
        set(ops)
        == {
            "remove_clause",
            "remove_sentence",
            "duplicate_clause",
            "duplicate_sentence",
            "shuffle",
        }
        and min(ops.values()) >= 30
    ), ops
    assert sum(ops.values()) / len(val_seen.docs) > 0.99, reasons
