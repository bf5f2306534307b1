"""Probe phrasings per language: the skill sentences a probe appends, their checks, and the template files.

Why a module of its own: a probe appends one short sentence to an instruction ("Turn left and walk
forward."), and a Room-across-Room (RxR) instruction in Hindi or Telugu needs that sentence in its own
language and script, not in English. The phrasings are kept per language here, apart from the geometry
of `vlnkit.probes.episodes`, which asks `templates_for` which sentences a language has.

Layout of a templates mapping (the defaults, `load_templates`, and a `--templates` YAML/JSON file):

    stop: [...]                            English (en, en-IN, en-US, Fine-Grained R2R), as always
    direction: {forward: [...], right: [...], left: [...], back-right: [...], back-left: [...], backward: [...]}
    room: ["... {room} ..."]
    object: ["... {object} ..."]
    languages:                             other languages, by primary language subtag ("hi-IN" -> hi)
      hi: {stop: [...], direction: {...}}
      te: {stop: [...], direction: {...}}

A probe with no phrasings in a language is *not applicable* to that language's instructions: no episode
is made, and the job counts it per language. By default Hindi and Telugu have `stop` and `direction`
phrasings but no `room` or `object` ones: those fill in `{room}` / `{object}` with the labels of the
user's tables, English Matterport category names, which would put English words into a Hindi or Telugu
sentence. A template file may give any language any probe (it then answers for what its labels read).

The Hindi and Telugu sentences were written for this toolkit by its authors, after the English defaults,
in the script of each language and with the words of the direction lexicons
(`vlnkit.perturbations.direction_lexicons`: Hindi बाएं/दाएं, बाईं/दाईं ओर, बायाँ/दायाँ, आगे, पीछे; Telugu
ఎడమవైపుకు/కుడివైపుకు, ఎడమకు/కుడికి, ముందుకు, వెనక్కి, వెనుక) wherever they say the same thing. Like the
lexicons, **they have not been reviewed by native speakers**; a user probing Hindi or Telugu agents should
have them checked, or give their own with `--templates`.

>>> templates = load_templates(None)
>>> templates_for(templates, "en-US")["direction"]["left"][0]
'Turn left and walk forward.'
>>> templates_for(templates, "hi-IN")["direction"]["left"][0]
'बाएं मुड़िए और आगे चलिए।'
>>> sorted(templates_for(templates, "te-IN"))
['direction', 'stop']
"""

from __future__ import annotations

import json
import re
import string

from vlnkit.datasets.languages import R2R_LANGUAGE, primary_language
from vlnkit.hashing import stable_bucket
from vlnkit.io import fileio

PROBES = ("stop", "direction", "room", "object")
REGIONS = ("forward", "right", "left", "back-right", "back-left", "backward")
LANGUAGES_KEY = "languages"

DEFAULT_TEMPLATES: dict = {
    "stop": ["This is your destination.", "Stop here.", "You have arrived, stop here.", "Wait here."],
    "direction": {
        "forward": ["Walk forward.", "Go straight ahead.", "Continue straight."],
        "right": ["Turn right and walk forward.", "Go to your right.", "Take a right."],
        "left": ["Turn left and walk forward.", "Go to your left.", "Take a left."],
        "back-right": ["Turn around to your right and walk forward.", "Make a sharp right turn and walk."],
        "back-left": ["Turn around to your left and walk forward.", "Make a sharp left turn and walk."],
        "backward": ["Turn around and walk forward.", "Turn back and walk.", "Go back behind you."],
    },
    "room": ["Walk towards the {room}.", "Go to the {room}.", "Head into the {room}."],
    "object": ["Walk towards the {object}.", "Go to the {object}.", "Head towards the {object}."],
}

# Hindi and Telugu, phrasing for phrasing after the English above (the English meaning in the comment);
# not reviewed by native speakers (module docstring).
LANGUAGE_TEMPLATES: dict = {
    "hi": {
        "stop": [
            "यही आपकी मंज़िल है।",  # This is your destination.
            "यहीं रुकिए।",  # Stop here.
            "आप पहुँच गए हैं, यहीं रुकिए।",  # You have arrived, stop here.
            "यहाँ इंतज़ार कीजिए।",  # Wait here.
        ],
        "direction": {
            # Walk forward. / Go straight ahead. / Keep going straight.
            "forward": ["आगे चलिए।", "सीधे आगे जाइए।", "सीधे चलते रहिए।"],
            # Turn right and walk forward. / Go to your right. / Turn right.
            "right": ["दाएं मुड़िए और आगे चलिए।", "अपनी दाईं ओर जाइए।", "दाएं मुड़िए।"],
            "left": ["बाएं मुड़िए और आगे चलिए।", "अपनी बाईं ओर जाइए।", "बाएं मुड़िए।"],
            # Turn back by your right and walk forward. / Take a sharp right turn and walk.
            "back-right": ["दाईं ओर से पीछे मुड़िए और आगे चलिए।", "तीखा दायाँ मोड़ लेकर चलिए।"],
            "back-left": ["बाईं ओर से पीछे मुड़िए और आगे चलिए।", "तीखा बायाँ मोड़ लेकर चलिए।"],
            # Turn back and walk forward. / Turn back and walk. / Go behind you.
            "backward": ["पीछे मुड़िए और आगे चलिए।", "वापस मुड़कर चलिए।", "अपने पीछे की ओर जाइए।"],
        },
    },
    "te": {
        "stop": [
            "ఇదే మీ గమ్యస్థానం.",  # This is your destination.
            "ఇక్కడ ఆగండి.",  # Stop here.
            "మీరు చేరుకున్నారు, ఇక్కడ ఆగండి.",  # You have arrived, stop here.
            "ఇక్కడ వేచి ఉండండి.",  # Wait here.
        ],
        "direction": {
            # Walk forward. / Go straight ahead. / Keep going straight.
            "forward": ["ముందుకు నడవండి.", "నేరుగా ముందుకు వెళ్ళండి.", "నేరుగా వెళ్తూ ఉండండి."],
            # Turn to the right side and walk forward. / Go to your right side. / Turn to the right.
            "right": ["కుడివైపుకు తిరిగి ముందుకు నడవండి.", "మీ కుడివైపుకు వెళ్ళండి.", "కుడికి తిరగండి."],
            "left": ["ఎడమవైపుకు తిరిగి ముందుకు నడవండి.", "మీ ఎడమవైపుకు వెళ్ళండి.", "ఎడమకు తిరగండి."],
            # Turn back by the right side and walk forward. / Turn fully to the right side and walk.
            "back-right": ["కుడివైపు నుండి వెనక్కి తిరిగి ముందుకు నడవండి.", "కుడివైపుకు పూర్తిగా తిరిగి నడవండి."],
            "back-left": ["ఎడమవైపు నుండి వెనక్కి తిరిగి ముందుకు నడవండి.", "ఎడమవైపుకు పూర్తిగా తిరిగి నడవండి."],
            # Turn back and walk forward. / Turn back and walk. / Go to the side behind you.
            "backward": ["వెనక్కి తిరిగి ముందుకు నడవండి.", "వెనక్కి తిరిగి నడవండి.", "మీ వెనుక వైపుకు వెళ్ళండి."],
        },
    },
}

# The one placeholder each probe's phrasings may (and, for room and object, must) use.
PLACEHOLDERS = {"stop": None, "direction": None, "room": "room", "object": "object"}
_SUBTAG = re.compile(r"^[a-z]{2,3}$")


class ProbeInputError(ValueError):
    """A user-supplied table or template file is malformed (the message names file, line and reason)."""


def choose(phrasings: list[str], seed: int, key: str) -> str:
    """A phrasing picked by (seed, key) alone: the same on every runner and rerun."""
    return phrasings[stable_bucket(key, buckets=len(phrasings), seed=seed)]


def templates_for(templates: dict, language: str | None) -> dict:
    """The phrasings of one language: {probe: phrasings} for the probes it has (see the module docstring).

    English (any "en" tag, and no tag: R2R and Fine-Grained R2R) reads the top-level entries; another
    language its entry under "languages" by primary subtag, or nothing.

    >>> templates_for({"stop": ["Stop."], "languages": {"hi": {"stop": ["रुकिए।"]}}}, "hi-IN")
    {'stop': ['रुकिए।']}
    >>> templates_for({"stop": ["Stop."]}, "te-IN")
    {}
    """
    primary = primary_language(language or R2R_LANGUAGE)
    if primary == R2R_LANGUAGE:
        return {probe: v for probe, v in templates.items() if probe in PLACEHOLDERS}
    return dict(templates.get(LANGUAGES_KEY, {}).get(primary, {}))


def _check_phrasing(phrasing: str, placeholder: str | None) -> str | None:
    """Why a phrasing cannot be filled in with its probe's placeholder, or None."""
    if placeholder is None:  # used as written: a brace would show in the instruction
        if "{" in phrasing or "}" in phrasing:
            return "has a brace; " + _allowed(None)
        return None
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(phrasing) if f is not None]
    except ValueError as exc:  # a lone "{" or "}"
        return f"is not a valid template ({exc}; write {{{{ and }}}} for literal braces)"
    allowed = {placeholder} if placeholder else set()
    for f in fields:
        if f == "" or f.isdigit():
            return "has a positional placeholder {" + f + "}; " + _allowed(placeholder)
        if f not in allowed:
            return f"has an unknown placeholder {{{f}}}; " + _allowed(placeholder)
    if placeholder and placeholder not in fields:
        return f"must contain {{{placeholder}}}"
    try:
        phrasing.format(**({placeholder: "x"} if placeholder else {}))
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        return f"cannot be filled in ({type(exc).__name__}: {exc})"
    return None


def _allowed(placeholder: str | None) -> str:
    return f"only {{{placeholder}}} is allowed" if placeholder else "this probe's phrasings take no placeholder"


def _validate_probes(templates: dict, source: str, where: str = "", every_region: bool = False) -> None:
    """Check one language's {probe: phrasings} (`where` prefixes the places named: "languages.hi.")."""
    for probe, value in templates.items():
        if probe not in PLACEHOLDERS:
            raise ProbeInputError(f"{source}: unknown probe {where}{probe!r}; expected among {PROBES}")
        if probe == "direction":
            if not isinstance(value, dict) or set(value) - set(REGIONS):
                raise ProbeInputError(f"{source}: '{where}direction' must map regions among {REGIONS} to phrasings")
            if every_region and set(value) != set(REGIONS):
                missing = [r for r in REGIONS if r not in value]
                raise ProbeInputError(f"{source}: '{where}direction' has no phrasings for {missing}")
        groups = value.items() if probe == "direction" else [(None, value)]
        for region, phrasings in groups:
            place = f"{where}direction.{region}" if region else f"{where}{probe}"
            if not isinstance(phrasings, list) or not phrasings:
                raise ProbeInputError(f"{source}: {place} must be a non-empty list of phrasings")
            for phrasing in phrasings:
                if not isinstance(phrasing, str) or not phrasing.strip():
                    raise ProbeInputError(f"{source}: {place} phrasing {phrasing!r} must be a non-empty string")
                reason = _check_phrasing(phrasing, PLACEHOLDERS[probe])
                if reason is not None:
                    raise ProbeInputError(f"{source}: {place} phrasing {phrasing!r} {reason}")


def _check_language(key, source: str) -> None:
    if not isinstance(key, str) or not _SUBTAG.match(key):
        raise ProbeInputError(f"{source}: languages key {key!r} must be a primary language subtag such as 'hi'")
    if key == R2R_LANGUAGE:
        raise ProbeInputError(f"{source}: English phrasings are the top-level entries, not languages.en")


def validate_templates(templates: dict, source: str = "templates") -> None:
    """Raise ProbeInputError unless every phrasing of every probe, in every language, can be filled in.

    Phrasings are Python format strings filled in on the workers (`"Go to the {room}."`); an
    unknown name (`{place}`), a positional `{}` / `{0}` or a lone brace would fail there, once per
    record, with a KeyError. Checking them all up front turns that into one line at job start.

        >>> validate_templates({"room": ["Go to the {place}."]}, "t.yaml")
        Traceback (most recent call last):
        vlnkit.probes.templates.ProbeInputError: t.yaml: room phrasing 'Go to the {place}.' has an unknown placeholder {place}; only {room} is allowed
    """
    if not isinstance(templates, dict):
        raise ProbeInputError(f"{source}: expected a mapping of probe -> phrasings")
    _validate_probes({k: v for k, v in templates.items() if k != LANGUAGES_KEY}, source)
    languages = templates.get(LANGUAGES_KEY, {})
    if not isinstance(languages, dict):
        raise ProbeInputError(f"{source}: '{LANGUAGES_KEY}' must map language subtags to phrasings")
    for language, probes in languages.items():
        _check_language(language, source)
        if not isinstance(probes, dict):
            raise ProbeInputError(f"{source}: {LANGUAGES_KEY}.{language} must map probes to phrasings")
        _validate_probes(probes, source, f"{LANGUAGES_KEY}.{language}.", every_region=True)


def load_templates(path: str | None, flag: str = "--templates") -> dict:
    """The default templates (English, Hindi, Telugu), with the entries of a YAML/JSON file (same layout)
    replacing them: per probe, per direction region, and per language under `languages`.

    Every problem is one ProbeInputError starting with `flag` and the file, e.g.
    `--templates t.yaml: room phrasing 'Go to the {place}.' has an unknown placeholder {place}; ...`.
    """
    templates = json.loads(json.dumps({**DEFAULT_TEMPLATES, LANGUAGES_KEY: LANGUAGE_TEMPLATES}))
    if not path:
        return templates
    import yaml

    where = f"{flag} {path}" if flag else path

    try:
        data = yaml.safe_load(fileio.read_bytes(path)) or {}
    except Exception as exc:
        raise ProbeInputError(f"{where}: cannot read templates ({exc})") from exc
    if not isinstance(data, dict) or set(data) - {*PROBES, LANGUAGES_KEY}:
        raise ProbeInputError(f"{where}: expected a mapping with keys among {(*PROBES, LANGUAGES_KEY)}")

    def phrasings(value, what, placeholder=None):
        if not isinstance(value, list) or not value or not all(isinstance(s, str) and s.strip() for s in value):
            raise ProbeInputError(f"{where}: {what} must be a non-empty list of phrasings")
        if placeholder and not all(placeholder in s for s in value):
            raise ProbeInputError(f"{where}: every {what} phrasing must contain {placeholder}")
        return value

    def merge(into: dict, entries, prefix: str = "") -> None:
        if not isinstance(entries, dict) or set(entries) - set(PROBES):
            raise ProbeInputError(f"{where}: {prefix or 'the file'} must map probes among {PROBES} to phrasings")
        for probe, value in entries.items():
            if probe == "direction":
                if not isinstance(value, dict) or set(value) - set(REGIONS):
                    raise ProbeInputError(f"{where}: '{prefix}direction' must map regions among {REGIONS} to phrasings")
                regions = into.setdefault("direction", {})
                for region, v in value.items():
                    regions[region] = phrasings(v, f"{prefix}direction.{region}")
            else:
                into[probe] = phrasings(value, f"{prefix}{probe}", {"room": "{room}", "object": "{object}"}.get(probe))

    merge(templates, {k: v for k, v in data.items() if k != LANGUAGES_KEY})
    languages = data.get(LANGUAGES_KEY) or {}
    if not isinstance(languages, dict):
        raise ProbeInputError(f"{where}: '{LANGUAGES_KEY}' must map language subtags to phrasings")
    for language, entries in languages.items():
        _check_language(language, where)
        merge(templates[LANGUAGES_KEY].setdefault(language, {}), entries, f"{LANGUAGES_KEY}.{language}.")
    validate_templates(templates, where)
    return templates
