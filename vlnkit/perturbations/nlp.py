"""Loading the configured spaCy pipeline once per process, with only the components the methods need.

Parsing is the cost of instruction perturbations: components no requested method needs (NER, and
for direction swap alone everything but the tokenizer) are excluded at load time, and a worker keeps
one loaded pipeline for all its bundles (`worker_pipeline`). `blank:<lang>` gives spaCy's
tokenizer-only pipeline, which supports direction swap only.
"""

from __future__ import annotations

import threading

from vlnkit.perturbations.compat import INSTRUCTION_METHODS

DEFAULT_MODEL = "en_core_web_sm"
BLANK_PREFIX = "blank:"

# Components each method needs from a trained English pipeline (en_core_web_* layout): the tagger
# and attribute ruler give POS (noun chunks, lemmatizer), tok2vec feeds the tagger and parser.
NEEDED_COMPONENTS = {
    "direction_swap": frozenset(),
    "entity_swap": frozenset({"tok2vec", "tagger", "attribute_ruler", "lemmatizer", "parser", "morphologizer"}),
    "phrase_swap": frozenset({"tok2vec", "tagger", "attribute_ruler", "parser", "morphologizer"}),
}
# What a pipeline must provide for each method (checked on the loaded pipeline's component names).
REQUIRED_ANY = {
    "direction_swap": (),
    "entity_swap": (("parser",), ("tagger", "morphologizer")),
    "phrase_swap": (("parser",),),
}


class NLPError(RuntimeError):
    """The spaCy pipeline is not installed, or cannot do what the requested methods need."""


def _not_installed(model: str, exc: Exception) -> NLPError:
    return NLPError(
        f"spaCy pipeline {model!r} is not installed ({type(exc).__name__}). Install its package into this "
        f"environment (en_core_web_sm is not on PyPI: use a wheel from your own package index), or pass "
        f"--spacy_model=blank:en for spaCy's tokenizer-only pipeline, which runs direction_swap only."
    )


def load_pipeline(model: str, methods) -> object:
    """Load `model` (a package name, a path, or `blank:<lang>`) with only the components `methods` need."""
    import spacy

    methods = [m for m in methods if m in INSTRUCTION_METHODS]
    if model.startswith(BLANK_PREFIX):
        try:
            nlp = spacy.blank(model[len(BLANK_PREFIX) :] or "en")
        except Exception as exc:  # unknown language code
            raise NLPError(f"spaCy has no blank pipeline for {model!r} ({exc})") from exc
    else:
        keep = frozenset().union(*(NEEDED_COMPONENTS[m] for m in methods)) if methods else frozenset()
        try:
            names = spacy.util.get_model_meta(spacy.util.get_package_path(model)).get("pipeline", [])
        except Exception:  # a path, not a package: read the meta after loading instead
            names = None
        try:
            if names is None:
                nlp = spacy.load(model)
                for name in [n for n in nlp.pipe_names if n not in keep]:
                    nlp.remove_pipe(name)
            else:
                nlp = spacy.load(model, exclude=[n for n in names if n not in keep])
        except OSError as exc:
            raise _not_installed(model, exc) from exc
    check_supports(nlp, methods, model)
    return nlp


def missing_for(nlp, method: str) -> list[str]:
    """Component groups `method` needs that the pipeline lacks (empty when it is supported)."""
    have = set(nlp.pipe_names)
    return [" or ".join(group) for group in REQUIRED_ANY[method] if not have & set(group)]


def check_supports(nlp, methods, model: str = "") -> None:
    problems = [f"{m} needs {', '.join(missing_for(nlp, m))}" for m in methods if missing_for(nlp, m)]
    if problems:
        raise NLPError(
            f"spaCy pipeline {model or nlp.meta.get('name')!r} (components: {', '.join(nlp.pipe_names) or 'none'}) "
            f"cannot run: {'; '.join(problems)}. Use a trained English pipeline such as en_core_web_sm, "
            "or leave these methods out of --methods."
        )


_PIPELINES: dict[tuple[str, tuple[str, ...]], object] = {}
_LOCK = threading.Lock()


def worker_pipeline(model: str, methods) -> object:
    """One loaded pipeline per (model, methods) per process, shared by every DoFn instance in it."""
    key = (model, tuple(sorted(m for m in methods if m in INSTRUCTION_METHODS)))
    with _LOCK:
        nlp = _PIPELINES.get(key)
        if nlp is None:
            nlp = _PIPELINES[key] = load_pipeline(model, key[1])
        return nlp
