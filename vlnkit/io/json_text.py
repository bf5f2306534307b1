"""Parsing JSON text fast without giving up the standard library's answers.

orjson is several times faster than `json` but refuses a few things `json` accepts (NaN and
Infinity literals, integers beyond 64 bits): `loads_exact` tries orjson first and lets `json`
decide, and word the error, whenever orjson refuses.
"""

from __future__ import annotations

import json

import orjson


def loads_exact(text: bytes | str) -> object:
    """The value `json.loads(text)` gives (or its ValueError), by orjson whenever orjson accepts the text.

    >>> loads_exact(b'{"a": [1, 2.5]}'), loads_exact(b"[NaN]")
    ({'a': [1, 2.5]}, [nan])
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
