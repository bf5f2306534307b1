"""Instruction perturbations: direction swap, entity swap and phrase swap on spaCy Docs.

The functions take Docs that the caller parsed (with `nlp.pipe`, once per batch, see `vlnkit.perturbations.nlp`),
so all three methods reuse one parse. Direction swap needs only tokens (a tokenizer-only pipeline
is enough); entity swap needs noun chunks and lemmas (tagger + parser + lemmatizer); phrase swap
needs the dependency parse. Each returns an `InstructionPerturbation` whose text always differs
from the source, or `NotApplicable` with the reason. Every edit is recorded as a character span
of the source and its replacement, so the record says exactly what changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from spacy.attrs import LOWER

from vlnkit.perturbations.compat import NotApplicable
from vlnkit.perturbations.direction_lexicons import ENGLISH, DirectionLexicon, lexicon_for

DIRECTION_SETS = ENGLISH.sets
# Lower-cased token tuple -> index of its set in DIRECTION_SETS.
_DIRECTION_INDEX = ENGLISH.index
# After these words a direction is a noun ("on your left"): "around" would not read as one.
_NOUN_CONTEXT = ENGLISH.noun_context
# After these, "enter"/"exit" is a noun ("the exit"): not a direction.
_DETERMINERS = ENGLISH.determiners
_ENTER_EXIT = ENGLISH.noun_after_determiner

# Noun-phrase roots that are not entities: quantifiers, ordinals, directions and path words.
ENTITY_STOP_LIST = frozenset(
    """any first second third fourth fifth last next end front back left right top bottom middle side way
    direction turn step steps time one ones lot couple bit area thing something all each other few rest
    set pair foot edge center centre half part""".split()
)
# Leading words a small parser sometimes folds into a noun chunk ("past bedroom door"): trimmed off.
_LEADING_NOT_ENTITY = frozenset("past through across along toward towards into onto via".split())
# Lemmas that name the same thing: two entities in the same group are never swapped with each other.
SYNONYM_GROUPS = (
    ("stairs", "stair", "staircase", "stairway", "stairwell", "stairstep"),
    ("sofa", "couch"),
    ("rug", "carpet"),
    ("hallway", "hall", "corridor"),
    ("bathroom", "restroom", "washroom"),
    ("picture", "painting"),
)
_CANONICAL = {w: group[0] for group in SYNONYM_GROUPS for w in group}
CLAUSE_DEPS = frozenset({"conj", "advcl"})


@dataclass(frozen=True)
class Change:
    """Source characters [start, end) replaced by `after` (an insertion has start == end)."""

    start: int
    end: int
    before: str
    after: str

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class InstructionPerturbation:
    method: str
    operation: str
    text: str
    changes: tuple[Change, ...]


def apply_changes(text: str, changes) -> str:
    """The text with non-overlapping changes applied (in any order given)."""
    out, cursor = [], 0
    for c in sorted(changes, key=lambda c: (c.start, c.end)):
        if c.start < cursor:
            raise ValueError(f"overlapping changes at character {c.start}")
        out += [text[cursor : c.start], c.after]
        cursor = c.end
    out.append(text[cursor:])
    return "".join(out)


def _perturbation(method: str, operation: str, source: str, changes: list[Change]):
    text = apply_changes(source, changes)
    if text == source:  # never emit an unchanged "perturbation"
        return NotApplicable(method, "unchanged")
    return InstructionPerturbation(method, operation, text, tuple(sorted(changes, key=lambda c: c.start)))


def match_case(source: str, replacement: str) -> str:
    """`replacement` written in the capitalization of `source` (UPPER, Capitalized or lower)."""
    if len(source) > 1 and source.isupper():
        return replacement.upper()
    if source[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


# ---------------------------------------------------------------------------- direction swap
def direction_matches(doc, lexicon: DirectionLexicon = ENGLISH) -> list[tuple[int, int, int]]:
    """(first token, end token, set index) of every direction word or phrase, longest phrases first.

    Tokens alone decide (no tagger): the output is the same with a tokenizer-only pipeline and with a
    trained one, whichever other methods share the parse. "enter"/"exit" after a determiner ("the
    exit") is a noun, not a direction, and is skipped. Part-of-speech tags are not used: a trained
    small English pipeline tags "left" in "Turn left and ..." as a verb in about a third of R2R's uses.
    `lexicon` is the language's (see `direction_lexicons`); the English context rules are empty in others.
    """
    strings = doc.vocab.strings  # lower-cased forms without creating a Token object per token
    lowers = [strings[h] for h in doc.to_array(LOWER).tolist()]
    index, longest = lexicon.index, lexicon.max_words
    out, i, n = [], 0, len(lowers)
    while i < n:
        for width in range(min(longest, n - i), 0, -1):
            k = index.get(tuple(lowers[i : i + width]))
            if k is None:
                continue
            if width == 1 and lowers[i] in lexicon.noun_after_determiner and i > 0:
                if lowers[i - 1] in lexicon.determiners:
                    break
            out.append((i, i + width, k))
            i += width - 1
            break
        i += 1
    return out


def direction_swap(doc, rng: np.random.Generator, language: str = "en") -> InstructionPerturbation | NotApplicable:
    """Replace every direction word/phrase by another member of its set, keeping its capitalization.
    After a determiner ("the left") the noun reading is kept: "around" is not used there.

    `language` is a language code or IETF tag (en, hi, te; "hi-IN"): the Doc must come from that
    language's tokenizer (`spacy.blank("hi")`), and the swap uses its lexicon (`direction_lexicons`).
    """
    lexicon = lexicon_for(language)
    matches = direction_matches(doc, lexicon)
    if not matches:
        return NotApplicable("direction_swap", "no_direction_word")
    text, changes = doc.text, []
    for first, end, k in matches:
        start, stop = doc[first].idx, doc[end - 1].idx + len(doc[end - 1])
        before = text[start:stop]
        others = [w for w in lexicon.sets[k] if w != before.lower()]
        if first > 0 and doc[first - 1].lower_ in lexicon.noun_context:
            avoid = [w for w in others if w in lexicon.not_after_noun_context]
            if avoid and len(others) > len(avoid):
                others = [w for w in others if w not in avoid]
        after = match_case(before, others[int(rng.integers(len(others)))])
        changes.append(Change(start, stop, before, after))
    return _perturbation("direction_swap", "swap", text, changes)


# ---------------------------------------------------------------------------- entity swap
def canonical_lemma(token) -> str:
    lemma = (token.lemma_ or token.text).lower()
    return _CANONICAL.get(lemma, _CANONICAL.get(token.lower_, lemma))


def entities(doc) -> list:
    """Noun chunks that name things: a noun root outside the stop list (no pronouns, no 'the end').

    Two parser slips common in R2R are corrected: a one-word chunk opening its sentence is almost
    always an imperative verb tagged as a noun ("Exit the room", "Turn left"), so it is skipped, and a
    path preposition folded into the chunk ("past bedroom door") is trimmed off.
    """
    out = []
    for chunk in doc.noun_chunks:
        root = chunk.root
        if root.pos_ not in ("NOUN", "PROPN"):
            continue
        if root.lower_ in ENTITY_STOP_LIST or canonical_lemma(root) in ENTITY_STOP_LIST:
            continue
        while len(chunk) > 1 and chunk[0].lower_ in _LEADING_NOT_ENTITY and chunk[0].i != root.i:
            chunk = chunk[1:]
        if len(chunk) == 1 and chunk[0].is_sent_start:
            continue
        out.append(chunk)
    return out


def _case_for_position(chunk, text: str, at_sentence_start: bool) -> str:
    """A chunk's text as it should read where it lands: capitalized at a sentence start, else as written
    (a capital that was only there because the chunk opened a sentence is lowered)."""
    first = chunk[0]
    if at_sentence_start:
        return _upper_first(text)
    if first.is_sent_start and first.pos_ != "PROPN" and text[:1].isupper() and not first.is_upper:
        return _lower_first(text)
    return text


def entity_swap(doc, rng: np.random.Generator) -> InstructionPerturbation | NotApplicable:
    """Swap two entities whose lemmas differ and are not known synonyms."""
    if not doc.has_annotation("DEP"):
        return NotApplicable("entity_swap", "no_parse")
    ents = entities(doc)
    if len(ents) < 2:
        return NotApplicable("entity_swap", "fewer_than_two_entities")
    lemmas = [canonical_lemma(e.root) for e in ents]
    pairs = [(i, j) for i in range(len(ents)) for j in range(i + 1, len(ents)) if lemmas[i] != lemmas[j]]
    if not pairs:
        return NotApplicable("entity_swap", "entities_share_lemma")
    i, j = pairs[int(rng.integers(len(pairs)))]
    a, b = ents[i], ents[j]
    changes = [
        Change(a.start_char, a.end_char, a.text, _case_for_position(b, b.text, a[0].is_sent_start)),
        Change(b.start_char, b.end_char, b.text, _case_for_position(a, a.text, b[0].is_sent_start)),
    ]
    return _perturbation("entity_swap", "swap", doc.text, changes)


# ---------------------------------------------------------------------------- phrase swap
def clause_heads(doc) -> list:
    """Heads of sub-sentence trees: verbs attached as a conjunct or an adverbial clause.

    A direction word is never a head: "left" in "Turn slightly left and go past the table" is often
    parsed as a verb heading an adverbial clause, and removing that "clause" would leave "Turn."
    """
    return [t for t in doc if t.dep_ in CLAUSE_DEPS and t.pos_ in ("VERB", "AUX") and not _direction_not_verb(t)]


def _direction_not_verb(token) -> bool:
    return (token.lower_,) in _DIRECTION_INDEX and token.lower_ not in _ENTER_EXIT


def _end(doc, i: int) -> int:
    return doc[i].idx + len(doc[i])


def _remove_clause(doc, head) -> Change:
    """Remove a clause's tree with the connective that joined it (', and', ', then', or its trailing ',')."""
    text = doc.text
    a, b = head.left_edge.i, head.right_edge.i
    sent = head.sent
    while (
        a > sent.start
        and (doc[a - 1].dep_ in ("cc", "punct") or doc[a - 1].lower_ == "then")
        and doc[a - 1].text != "."
    ):
        a -= 1
    if a > sent.start:  # mid-sentence: drop the whitespace before, keep what follows
        start, stop = _end(doc, a - 1), _end(doc, b)
        return Change(start, stop, text[start:stop], "")
    # Opens its sentence: also drop a following ',' / 'and', and capitalize what now opens the sentence.
    while b + 1 < sent.end - 1 and doc[b + 1].dep_ in ("cc", "punct") and doc[b + 1].text not in ".!?":
        b += 1
    if b + 1 >= sent.end:
        start, stop = doc[a].idx, _end(doc, b)
        return Change(start, stop, text[start:stop], "")
    nxt = doc[b + 1]
    start, stop = doc[a].idx, nxt.idx + 1
    return Change(start, stop, text[start:stop], nxt.text[:1].upper())


def _remove_sentence(doc, sents, k: int) -> Change:
    text = doc.text
    if k + 1 < len(sents):
        start, stop = sents[k].start_char, sents[k + 1].start_char
    else:
        start, stop = sents[k - 1].end_char, sents[k].end_char
    return Change(start, stop, text[start:stop], "")


def _duplicate_clause(doc, head) -> Change:
    a, b = head.left_edge.i, head.right_edge.i
    clause = doc[a : b + 1].text
    if doc[a].pos_ != "PROPN" and doc[a].text != "I":
        clause = _lower_first(clause)
    at = _end(doc, b)
    return Change(at, at, "", " and " + clause)


def _duplicate_sentence(sents, k: int) -> Change:
    at = sents[k].end_char
    return Change(at, at, "", " " + sents[k].text)


def _shuffle_sentences(doc, sents, rng: np.random.Generator) -> Change | None:
    """All sentences but the last in a new order (original separators kept); None if no order differs."""
    body = sents[:-1]
    pieces = [s.text for s in body]
    if len(set(pieces)) < 2:
        return None
    text = doc.text  # Doc.text joins every token anew: build it once
    seps = [text[body[k].end_char : body[k + 1].start_char] for k in range(len(body) - 1)]
    start, stop = body[0].start_char, body[-1].end_char
    before = text[start:stop]
    for _ in range(32):
        order = rng.permutation(len(pieces))
        if [pieces[k] for k in order] != pieces:
            break
    else:  # pragma: no cover - needs 32 identity draws with two distinct pieces
        order = np.roll(np.arange(len(pieces)), 1)
    after = pieces[order[0]] + "".join(sep + pieces[k] for sep, k in zip(seps, order[1:]))
    return Change(start, stop, before, after)


def phrase_swap(doc, rng: np.random.Generator) -> InstructionPerturbation | NotApplicable:
    """One operation on the dependency structure, chosen at random among those that apply:
    remove one sub-sentence tree, duplicate one, or shuffle all sentences except the last.

    Sub-sentence trees are clauses (conjunct or adverbial-clause verbs with their subtrees) and, when
    there are several sentences, whole sentences. A lone sentence can be duplicated, not removed.
    """
    if not doc.has_annotation("DEP"):
        return NotApplicable("phrase_swap", "no_parse")
    sents = [s for s in doc.sents if s.text.strip()]
    clauses = clause_heads(doc)
    removable = [("clause", h) for h in clauses] + (
        [("sentence", k) for k in range(len(sents))] if len(sents) > 1 else []
    )
    duplicable = [("clause", h) for h in clauses] + [("sentence", k) for k in range(len(sents))]
    shuffle = _shuffle_sentences(doc, sents, rng) if len(sents) >= 3 else None
    ops = (["remove"] if removable else []) + (["duplicate"] if duplicable else []) + (["shuffle"] if shuffle else [])
    if not ops:
        return NotApplicable("phrase_swap", "no_sub_sentence")
    op = ops[int(rng.integers(len(ops)))]
    if op == "shuffle":
        return _perturbation("phrase_swap", "shuffle", doc.text, [shuffle])
    units = removable if op == "remove" else duplicable
    kind, unit = units[int(rng.integers(len(units)))]
    if op == "remove":
        change = _remove_clause(doc, unit) if kind == "clause" else _remove_sentence(doc, sents, unit)
    else:
        change = _duplicate_clause(doc, unit) if kind == "clause" else _duplicate_sentence(sents, unit)
    return _perturbation("phrase_swap", f"{op}_{kind}", doc.text, [change])


PERTURB = {"direction_swap": direction_swap, "entity_swap": entity_swap, "phrase_swap": phrase_swap}
