"""Per-language direction lexicons: the words a direction swap may exchange, for English, Hindi and Telugu.

Why a module of its own: Room-across-Room (RxR) instructions are in English (en-IN, en-US), Hindi (hi-IN)
and Telugu (te-IN), and a direction swap must find "left" in all three. Each language's lexicon is a
tuple of *swap sets*; a word or phrase found in an instruction is replaced by another member of its
own set only. Every member of a set has the same grammatical form (English "enters" swaps with
"exits", never with "exit"; Hindi feminine oblique "बाईं" with "दाईं"; Telugu dative "ఎడమకు" with
"కుడికి"), so a swap never breaks the agreement of the sentence around it. A word belongs to one set.

Matching is on tokens (lower-cased), so the lexicon entries are whole tokens of the language's spaCy
tokenizer (`spacy.blank("hi")` and `spacy.blank("te")` split on spaces and punctuation, keeping the
vowel signs and suffixes of a word together). Telugu is agglutinative (case suffixes are written onto
the noun: "ఎడమవైపుకు" = left-side-to), so its common suffixed forms are listed one by one.

"Turn" verbs (English "turn", Hindi "मुड़िए", Telugu "తిరగండి") carry no direction of their own (the
direction is the word next to them), so they are not in any set.

Sources
-------
English: the ten sets of the toolkit's original direction swap (docs/design.md, "Hard negatives"),
chosen by hand by the toolkit's authors after the direction words of R2R instructions, unchanged here.

Hindi (chosen by hand by the helper `rxrcore` from these references, not reviewed by a native speaker):
- left/right forms बायाँ/दायाँ (direct), बाईं/दाईं ("बाईं ओर", toward the left), and "सीधे" for straight
  ahead: University of North Carolina Hindi-Urdu course, lesson 23 grammar notes,
  https://taj.oasis.unc.edu/Hindi.Less.23/grammar.html ;
- the oblique adverbs बाएं/दाएं and the spellings बायें/दायें, बाएँ/दाएँ, बायीं/दायीं ("turn left" =
  "बायें मुड़ें", feminine "बायीं"): https://sublearn.com/ar/learn/hi/vocabulary/bya-2 and
  https://talkpal.ai/?p=1199739 (also पीछे "behind");
- ऊपर "up" / नीचे "down": https://talkpal.ai/vocabulary/%e0%a4%8a%e0%a4%aa%e0%a4%b0-vs-%e0%a4%a8%e0%a5%80%e0%a4%9a%e0%a5%87-up-and-down-directions-in-hindi ;
- आगे "ahead, forward", अंदर "inside", बाहर "outside": chosen by hand (common words, no source retrieved).

Telugu (chosen by hand by the helper `rxrcore`, not reviewed by a native speaker):
- పైన "above" / కింద "below", ముందు "in front, before": https://thelanguages.com/telugu/prepositions ;
- agglutination of case suffixes (why suffixed forms are listed): Wikipedia, "Telugu grammar";
- ఎడమ "left" / కుడి "right", వైపు "side", the suffixed forms, ముందుకు/వెనక్కి, వెనుక, పైకి/కిందకు,
  లోపల/బయట, లోపలికి/బయటికి: chosen by hand; the standard reference for checking them is J. P. L. Gwynn,
  *A Telugu-English Dictionary* (Oxford University Press, 1991), whose entries could not be retrieved here.

>>> lexicon_for("hi-IN").language
'hi'
>>> lexicon_for("en-US").set_of(("left",))
('around', 'left', 'right')
>>> lexicon_for("te").gloss("కుడివైపు")
'right'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class DirectionLexicon:
    """One language's swap sets, plus the English-only context rules (empty for other languages).

    `noun_context`: words after which a direction reads as a noun ("your left"); after them the words in
    `not_after_noun_context` ("around") are not used as replacements. `noun_after_determiner`: direction
    words that are nouns, not directions, after one of `determiners` ("the exit"), so they are not swapped.
    `glosses` gives every word's English meaning (for readers of the table, and to translate English
    text word for word in test data).
    """

    language: str
    sets: tuple[tuple[str, ...], ...]
    glosses: Mapping[str, str]
    noun_context: frozenset[str] = frozenset()
    determiners: frozenset[str] = frozenset()
    noun_after_determiner: frozenset[str] = frozenset()
    not_after_noun_context: frozenset[str] = frozenset()
    index: Mapping[tuple[str, ...], int] = field(init=False, repr=False)
    max_words: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        index: dict[tuple[str, ...], int] = {}
        for k, group in enumerate(self.sets):
            if len(group) < 2 or len(set(group)) != len(group):
                raise ValueError(f"{self.language}: swap set {group} needs two or more distinct words")
            for word in group:
                key = tuple(word.split())
                if key in index:
                    raise ValueError(f"{self.language}: {word!r} is in two swap sets")
                if word != word.lower():
                    raise ValueError(f"{self.language}: {word!r} must be written in lower case")
                if word not in self.glosses:
                    raise ValueError(f"{self.language}: {word!r} has no English gloss")
                index[key] = k
        object.__setattr__(self, "index", MappingProxyType(index))
        object.__setattr__(self, "max_words", max(len(key) for key in index))

    def set_of(self, tokens: tuple[str, ...]) -> tuple[str, ...] | None:
        """The swap set holding these lower-cased tokens, or None."""
        k = self.index.get(tokens)
        return None if k is None else self.sets[k]

    def gloss(self, word: str) -> str:
        return self.glosses[word]

    def words(self) -> tuple[str, ...]:
        return tuple(w for group in self.sets for w in group)


_ENGLISH_SETS = (
    ("around", "left", "right"),
    ("bottom", "middle", "top"),
    ("up", "down"),
    ("front", "back"),
    ("above", "under"),
    ("enter", "exit"),
    ("backward", "forward"),
    ("away from", "towards"),
    ("into", "out of"),
    ("inside", "outside"),
    # Inflected forms of the sets above, swapped only with the same inflection.
    ("enters", "exits"),
    ("entering", "exiting"),
    ("entered", "exited"),
    ("backwards", "forwards"),
)
_ENGLISH_NOUN_CONTEXT = frozenset({"the", "your", "a", "my", "his", "her", "their", "its"})

ENGLISH = DirectionLexicon(
    language="en",
    sets=_ENGLISH_SETS,
    glosses={w: w for group in _ENGLISH_SETS for w in group},
    noun_context=_ENGLISH_NOUN_CONTEXT,
    determiners=_ENGLISH_NOUN_CONTEXT | {"an", "this", "that", "another", "each", "every", "no", "our"},
    noun_after_determiner=frozenset(w for group in _ENGLISH_SETS for w in group if w.startswith(("enter", "exit"))),
    not_after_noun_context=frozenset({"around"}),
)

# Each Hindi set: (word, gloss) pairs of one grammatical form; the first set of a meaning is the most common form.
_HINDI = (
    (("बाएं", "left"), ("दाएं", "right")),  # oblique adverb: "बाएं मुड़िए" (turn left)
    (("बाएँ", "left"), ("दाएँ", "right")),  # the same, written with candrabindu
    (("बायें", "left"), ("दायें", "right")),  # the same, older spelling
    (("बाईं", "left"), ("दाईं", "right")),  # feminine oblique: "बाईं ओर" (toward the left)
    (("बायीं", "left"), ("दायीं", "right")),  # the same, other spelling
    (("बायाँ", "left"), ("दायाँ", "right")),  # direct masculine adjective: "बायाँ हाथ" (left hand)
    (("आगे", "forward"), ("पीछे", "back")),  # ahead / behind
    (("ऊपर", "up"), ("नीचे", "down")),  # up, above / down, below
    (("अंदर", "inside"), ("बाहर", "outside")),
)
HINDI = DirectionLexicon(
    language="hi",
    sets=tuple(tuple(w for w, _ in group) for group in _HINDI),
    glosses={w: g for group in _HINDI for w, g in group},
)

_TELUGU = (
    (("ఎడమవైపు", "left"), ("కుడివైపు", "right")),  # (to the) left side / right side
    (("ఎడమ", "left"), ("కుడి", "right")),  # bare, before "వైపు" (side) written apart
    (("ఎడమవైపుకు", "left"), ("కుడివైపుకు", "right")),  # towards the left / right side
    (("ఎడమకు", "left"), ("కుడికి", "right")),  # dative: to the left / right
    (("ముందుకు", "forward"), ("వెనక్కి", "back")),  # forwards / backwards (motion)
    (("ముందు", "front"), ("వెనుక", "behind")),  # in front / behind (place)
    (("పైకి", "up"), ("కిందకు", "down")),  # upwards / downwards (motion)
    (("పైన", "above"), ("కింద", "under")),  # above / below (place)
    (("లోపలికి", "into"), ("బయటికి", "out of")),  # into / out (motion)
    (("లోపల", "inside"), ("బయట", "outside")),  # inside / outside (place)
)
TELUGU = DirectionLexicon(
    language="te",
    sets=tuple(tuple(w for w, _ in group) for group in _TELUGU),
    glosses={w: g for group in _TELUGU for w, g in group},
)

LEXICONS: Mapping[str, DirectionLexicon] = MappingProxyType({lex.language: lex for lex in (ENGLISH, HINDI, TELUGU)})


def lexicon_for(language: str) -> DirectionLexicon:
    """The lexicon of a language code or IETF tag ("en", "en-US", "hi-IN", "te-IN"); ValueError for others.

    >>> lexicon_for("te-IN").language
    'te'
    """
    primary = str(language).split("-")[0].split("_")[0].lower()
    try:
        return LEXICONS[primary]
    except KeyError:
        raise ValueError(f"no direction lexicon for language {language!r}; known: {sorted(LEXICONS)}") from None
