"""Probe phrasings per language: Hindi and Telugu RxR instructions get their probe sentences in their own
script and no English; room and object probes are not applicable to them; template files in the old
layout keep working and may add languages."""

import math
import re

import pytest

from tests.vlnkit.probes.test_probes import LINE, ROOMS, STAR_GRAPH, alignment
from vlnkit.perturbations.direction_lexicons import lexicon_for
from vlnkit.probes.episodes import ProbeConfig, probe_episodes, truncation_candidates, unphrased_probes
from vlnkit.probes.templates import (
    DEFAULT_TEMPLATES,
    LANGUAGE_TEMPLATES,
    REGIONS,
    ProbeInputError,
    load_templates,
    templates_for,
    validate_templates,
)

LATIN = re.compile(r"[A-Za-z]")
SCRIPTS = {"hi-IN": re.compile(r"[\u0900-\u097F]"), "te-IN": re.compile(r"[\u0C00-\u0C7F]")}
OBJECTS = {"o": [("sofa", math.radians(62), 1.0)]}


def star_candidate(language=None, text="walk north and stop"):
    a = alignment(
        ["p", "o", "f"],
        [
            {"text": "walk north", "end": 10, "first": 0, "last": 1},
            {"text": "and stop", "end": len(text), "first": 1, "last": 2},
        ],
        text,
    )
    if language:
        a["language"] = language
    return truncation_candidates(a)[0]


@pytest.mark.parametrize("language", ["hi-IN", "te-IN"])
def test_hindi_and_telugu_instructions_get_probe_sentences_in_their_script_and_no_english(language):
    config = ProbeConfig(seed=3)
    eps = probe_episodes(star_candidate(language), STAR_GRAPH, config, rooms=None, objects=OBJECTS)
    interventions = [e for e in eps if e["variant"] == "intervention"]
    assert {e["probe"] for e in interventions} == {"stop", "direction"}  # no object probe: English labels
    assert len(interventions) == 1 + 6
    for e in interventions:
        assert SCRIPTS[language].search(e["appended"]) and not LATIN.search(e["appended"]), e["appended"]
        assert e["instruction"].endswith(e["appended"])
    mine = LANGUAGE_TEMPLATES[language[:2]]
    for e in interventions:
        expected = mine["stop"] if e["probe"] == "stop" else mine["direction"][e["target"]]
        assert e["appended"] in expected
    # The same geometry and ids as in English: only the appended text differs.
    english = probe_episodes(star_candidate(), STAR_GRAPH, config, rooms=None, objects=None)
    strip = ("instruction", "appended")
    assert [{k: v for k, v in e.items() if k not in strip} for e in eps] == [
        {k: v for k, v in e.items() if k not in strip} for e in english
    ]


def test_english_tags_keep_the_english_sentences():
    config = ProbeConfig(seed=3)
    plain = probe_episodes(star_candidate(), STAR_GRAPH, config, rooms=None, objects=OBJECTS)
    for tag in ("en", "en-IN", "en-US"):
        assert probe_episodes(star_candidate(tag), STAR_GRAPH, config, rooms=None, objects=OBJECTS) == plain
    assert {e["probe"] for e in plain} == {"stop", "direction", "object"}


def test_hindi_prefix_without_an_end_is_closed_with_a_danda():
    text = "बाएं मुड़िए और रुकिए"
    a = alignment(
        ["p", "o", "f"],
        [
            {"text": "बाएं मुड़िए", "end": len("बाएं मुड़िए"), "first": 0, "last": 1},
            {"text": "और रुकिए", "end": len(text), "first": 1, "last": 2},
        ],
        text,
    )
    cand = truncation_candidates({**a, "language": "hi-IN"})[0]
    (e, _) = probe_episodes(cand, STAR_GRAPH, ProbeConfig(probes=("stop",), seed=0))
    assert e["instruction"] == f"बाएं मुड़िए। {e['appended']}" and e["appended"] in LANGUAGE_TEMPLATES["hi"]["stop"]


@pytest.mark.parametrize("language", ["hi-IN", "te-IN"])
def test_room_and_object_probes_are_not_applicable_in_hindi_and_telugu(language):
    cand = truncation_candidates(
        {
            **alignment(
                ["a", "b"],
                [{"text": "x", "end": 1, "first": 0, "last": 1}, {"text": "y", "end": 3, "first": 1, "last": 1}],
                "x y",
            ),
            "language": language,
        }
    )[0]
    config = ProbeConfig(room_max_hops=2)
    assert probe_episodes(cand, LINE, config, rooms=ROOMS)  # stop and direction still run
    assert not [e for e in probe_episodes(cand, LINE, config, rooms=ROOMS) if e["probe"] == "room"]
    assert unphrased_probes(config, language, rooms=True, objects=True) == ("room", "object")
    assert unphrased_probes(config, language, rooms=False, objects=False) == ()  # they would not run anyway
    assert unphrased_probes(config, "en-US", rooms=True, objects=True) == ()
    english = {**cand, "language": "en-US"}
    assert [e for e in probe_episodes(english, LINE, config, rooms=ROOMS) if e["probe"] == "room"]


@pytest.mark.parametrize("language", ["hi", "te"])
def test_side_phrasings_use_the_direction_lexicon_words_for_their_side(language):
    """Every left/right (and back-left/back-right) sentence names its side with a word of the language's
    direction lexicon, and never the other side."""
    lexicon = lexicon_for(language)
    regions = LANGUAGE_TEMPLATES[language]["direction"]
    assert set(regions) == set(REGIONS)
    for region in ("left", "right", "back-left", "back-right"):
        side = region.split("-")[-1]
        other = {"left": "right", "right": "left"}[side]
        for sentence in regions[region]:
            words = [w.strip(".,।") for w in sentence.split()]
            glosses = {lexicon.glosses.get(w) for w in words}
            assert side in glosses and other not in glosses, (region, sentence)
    for sentence in regions["forward"]:
        assert not {lexicon.glosses.get(w.strip(".,।")) for w in sentence.split()} & {"left", "right"}


def test_template_files_in_the_old_layout_keep_the_languages_and_may_add_or_replace_them(tmp_path):
    old = tmp_path / "old.yaml"
    old.write_text("stop: [Halt.]\ndirection:\n  left: [Veer left.]\n")
    t = load_templates(str(old))
    assert t["stop"] == ["Halt."] and t["direction"]["right"] == DEFAULT_TEMPLATES["direction"]["right"]
    assert templates_for(t, "hi-IN") == LANGUAGE_TEMPLATES["hi"]
    new = tmp_path / "new.yaml"
    new.write_text(
        "languages:\n"
        "  hi:\n    stop: ['रुक जाइए।']\n    direction:\n      left: ['बाएं चलिए।']\n"
        "    room: ['{room} की ओर जाइए।']\n"
        "  de:\n    stop: ['Halt.']\n"
    )
    t = load_templates(str(new))
    hindi = templates_for(t, "hi-IN")
    assert hindi["stop"] == ["रुक जाइए।"] and hindi["direction"]["left"] == ["बाएं चलिए।"]
    assert hindi["direction"]["right"] == LANGUAGE_TEMPLATES["hi"]["direction"]["right"]
    assert hindi["room"] == ["{room} की ओर जाइए।"] and t["stop"] == DEFAULT_TEMPLATES["stop"]
    assert templates_for(t, "de-DE") == {"stop": ["Halt."]}
    config = ProbeConfig(probes=("stop", "room"), templates=t)
    assert unphrased_probes(config, "hi-IN", rooms=True, objects=True) == ()
    assert unphrased_probes(config, "te-IN", rooms=True, objects=True) == ("room",)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("languages: {en: {stop: [Halt.]}}\n", "top-level entries"),
        ("languages: {Hindi: {stop: [x]}}\n", "primary language subtag"),
        ("languages: {hi: {jump: [x]}}\n", "must map probes"),
        ("languages: {de: {direction: {left: [Links.]}}}\n", "no phrasings for"),
        ("languages: {hi: {room: ['कमरा']}}\n", "languages.hi.room phrasing must contain"),
        ("languages: [hi]\n", "'languages' must map"),
    ],
)
def test_bad_language_entries_are_one_clear_error(tmp_path, text, says):
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProbeInputError) as info:
        load_templates(str(path))
    assert str(info.value).startswith(f"--templates {path}: ") and says in str(info.value), str(info.value)


def test_validate_templates_checks_every_language():
    validate_templates(load_templates(None))
    bad = load_templates(None)
    bad["languages"]["te"]["stop"] = ["ఆగండి {here}."]
    with pytest.raises(ProbeInputError, match=r"languages\.te\.stop phrasing .* has a brace"):
        validate_templates(bad, "t")
