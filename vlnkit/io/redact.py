"""Keeping secrets out of manifests, summaries and logs: redact by what a value *is*, not by a list of names.

A value is withheld when its option name says it is secret (key, token, secret, password,
credential, connection string, private key, signature, auth) or when the value itself looks like
one (a connection string with an account key or SAS signature, a PEM private key, a cloud access
key id, a bearer token, a URL with a password). Structures are walked, so a secret nested in a
list or mapping is found too.

    >>> redact({"s3_access_key_id": "AKIAIOSFODNN7EXAMPLE", "runner": "DirectRunner"})
    {'runner': 'DirectRunner', 's3_access_key_id': '<redacted>'}
    >>> redact({"labels": ["team=vln", "DefaultEndpointsProtocol=https;AccountKey=abc=="]})
    {'labels': ['team=vln', '<redacted>']}

A line of text (an error message naming a URL) keeps its words and loses only the secrets in it:

    >>> redact_text("gs://user:hunter2@bucket/a.json does not exist")
    'gs://user:<redacted>@bucket/a.json does not exist'
"""

from __future__ import annotations

import re

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    r"(secret|password|passwd|passphrase|token|credential|api_?key|access_?key|private_?key|key_?file"
    r"|account_?key|connection_?string|sas|signature|auth)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"(AccountKey=|SharedAccessSignature=|SharedAccessKey=|[?&]sig=|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\b(AKIA|ASIA)[0-9A-Z]{16}\b|\bBearer\s+\S+|\bghp_[0-9A-Za-z]{20,}|\bsk-[0-9A-Za-z]{20,}"
    r"|\bya29\.[0-9A-Za-z_-]+|\"private_key\"|://[^/\s:@]+:[^/\s@]+@)",
    re.IGNORECASE,
)
# Names that contain a secret word but hold no secret (booleans and public identifiers).
_PUBLIC_NAMES = frozenset({"translate_insecure", "sdk_location", "authority"})


def is_secret_name(name: str) -> bool:
    return name not in _PUBLIC_NAMES and bool(_SECRET_NAME.search(name))


def looks_secret(value: str) -> bool:
    return bool(_SECRET_VALUE.search(value))


def redact(value, name: str = ""):
    """A copy of `value` (dicts, lists, strings, numbers) with every secret replaced by `<redacted>`."""
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [redact(v, name) for v in value]
    if value is None or isinstance(value, bool):
        return value
    if name and is_secret_name(name):
        return REDACTED
    if isinstance(value, str) and looks_secret(value):
        return REDACTED
    return value


_SECRET_IN_TEXT = (
    (re.compile(r"(://[^/\s:@]+:)[^/\s@]+@"), r"\1" + REDACTED + "@"),  # a URL's password
    (re.compile(r"([?&](?:sig|token|access_token|key)=)[^&\s]+", re.IGNORECASE), r"\1" + REDACTED),
    (re.compile(r"(\bBearer\s+)\S+"), r"\1" + REDACTED),
)


def redact_text(text: str) -> str:
    """A message with the secrets it quotes (a URL's password, a signature or token in a query, a bearer
    token) replaced by `<redacted>`: what every error line a job prints goes through."""
    for pattern, replacement in _SECRET_IN_TEXT:
        text = pattern.sub(replacement, text)
    return text
