"""Direction lexicons for English, Hindi and Telugu, and the direction swap on each language's tokens.

Hand-worked sentences pin the swaps (two-word sets swap deterministically), and a property test checks
on random token sequences that every lexicon word and nothing else is replaced, by another member of
its own set."""

import numpy as np
import pytest
import spacy
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.perturbations.compat import NotApplicable
from vlnkit.perturbations.direction_lexicons import (
    ENGLISH,
    HINDI,
    LEXICONS,
    TELUGU,
    DirectionLexicon,
    lexicon_for,
)
from vlnkit.perturbations.instructions import DIRECTION_SETS, direction_swap

TOKENIZERS = {lang: spacy.blank(lang) for lang in LEXICONS}


def swap(text, language, seed=0):
    return direction_swap(TOKENIZERS[language.split("-")[0]](text), np.random.default_rng(seed), language=language)


@pytest.mark.parametrize(
    "tag, language", [("en", "en"), ("en-IN", "en"), ("en-US", "en"), ("hi-IN", "hi"), ("te-IN", "te"), ("TE", "te")]
)
def test_lexicon_for_reads_language_codes_and_ietf_tags(tag, language):
    assert lexicon_for(tag).language == language


def test_unknown_language_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match=r"'ta-IN'.*\['en', 'hi', 'te'\]"):
        lexicon_for("ta-IN")


def test_english_lexicon_is_the_original_direction_sets():
    assert DIRECTION_SETS is ENGLISH.sets
    assert ("left", "right") not in [g for g in DIRECTION_SETS]  # "around" belongs with them
    assert ENGLISH.set_of(("away", "from")) == ("away from", "towards")
    assert ENGLISH.max_words == 2


@pytest.mark.parametrize("lexicon", [ENGLISH, HINDI, TELUGU], ids=lambda lex: lex.language)
def test_every_word_has_a_gloss_and_a_set_never_holds_two_words_of_one_meaning(lexicon):
    for group in lexicon.sets:
        glosses = [lexicon.gloss(w) for w in group]
        assert len(set(glosses)) == len(glosses), group
    assert len(set(lexicon.words())) == len(lexicon.words())


@pytest.mark.parametrize("lexicon", [HINDI, TELUGU], ids=lambda lex: lex.language)
def test_every_entry_is_one_token_of_the_languages_tokenizer(lexicon):
    nlp = TOKENIZERS[lexicon.language]
    for word in lexicon.words():
        assert [t.text for t in nlp(word)] == [word]


@pytest.mark.parametrize("lexicon", [HINDI, TELUGU], ids=lambda lex: lex.language)
def test_left_right_forward_back_up_down_are_covered(lexicon):
    glosses = {lexicon.gloss(w) for w in lexicon.words()}
    assert {"left", "right", "forward", "back", "up", "down", "inside", "outside"} <= glosses


def test_a_word_in_two_sets_or_without_gloss_is_refused():
    with pytest.raises(ValueError, match="two swap sets"):
        DirectionLexicon("xx", (("a", "b"), ("b", "c")), {"a": "a", "b": "b", "c": "c"})
    with pytest.raises(ValueError, match="no English gloss"):
        DirectionLexicon("xx", (("a", "b"),), {"a": "a"})
    with pytest.raises(ValueError, match="two or more"):
        DirectionLexicon("xx", (("a",),), {"a": "a"})


@pytest.mark.parametrize(
    "text, language, expected",
    [
        ("बाएं मुड़िए और आगे जाइए।", "hi-IN", "दाएं मुड़िए और पीछे जाइए।"),
        ("फिर दाईं ओर सीढ़ियों से ऊपर जाइए।", "hi", "फिर बाईं ओर सीढ़ियों से नीचे जाइए।"),
        ("कमरे के अंदर रुकिए।", "hi", "कमरे के बाहर रुकिए।"),
        ("ఎడమవైపు తిరగండి, ముందుకు వెళ్ళండి.", "te-IN", "కుడివైపు తిరగండి, వెనక్కి వెళ్ళండి."),
        ("కుడి వైపు మెట్లు పైకి ఎక్కండి.", "te", "ఎడమ వైపు మెట్లు కిందకు ఎక్కండి."),
        ("Walk up the stairs and turn into the kitchen.", "en-US", "Walk down the stairs and turn out of the kitchen."),
    ],
)
def test_hand_worked_swaps(text, language, expected):
    result = swap(text, language)
    assert result.text == expected
    assert all(text[c.start : c.end] == c.before for c in result.changes)


def test_words_of_another_language_are_not_swapped():
    assert swap("Turn left and go up.", "hi-IN") == NotApplicable("direction_swap", "no_direction_word")
    assert swap("बाएं मुड़िए", "te-IN") == NotApplicable("direction_swap", "no_direction_word")


def test_english_default_and_english_tags_agree():
    nlp = TOKENIZERS["en"]
    text = "Turn around, walk past the front door and exit through the left of the hall."
    for seed in range(20):
        default = direction_swap(nlp(text), np.random.default_rng(seed))
        tagged = direction_swap(nlp(text), np.random.default_rng(seed), language="en-IN")
        assert default == tagged


_FILLER = {"hi": ["कमरे", "के", "सीढ़ियों", "मुड़िए", "जाइए", "।"], "te": ["గది", "మెట్లు", "తిరగండి", "వెళ్ళండి", "."]}


@settings(max_examples=60, deadline=None)
@given(
    language=st.sampled_from(["hi", "te"]),
    picks=st.lists(st.tuples(st.booleans(), st.integers(0, 10_000)), min_size=1, max_size=12),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_lexicon_token_and_nothing_else_is_swapped_within_its_set(language, picks, seed):
    lexicon = LEXICONS[language]
    words, fillers = lexicon.words(), _FILLER[language]
    tokens = [words[i % len(words)] if is_word else fillers[i % len(fillers)] for is_word, i in picks]
    result = swap(" ".join(tokens), language, seed)
    if not any(is_word for is_word, _ in picks):
        assert isinstance(result, NotApplicable)
        return
    out = result.text.split(" ")
    assert len(out) == len(tokens)
    for before, after in zip(tokens, out):
        group = lexicon.set_of((before,))
        if group is None:
            assert after == before
        else:
            assert after != before and after in group
