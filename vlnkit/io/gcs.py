"""The few Cloud Storage calls that need a precondition: the pointer and the lock of an output folder.

Beam's filesystem API cannot say "create only if absent" or "replace only if unchanged"; Cloud Storage
can (`ifGenerationMatch`), and that is what makes one small object the arbiter of what is published and
of who holds an output. Every call here names the generation it expects: 0 for "must not exist".
The client is Beam's own (same credentials as the pipeline) when Beam is installed.
"""

from __future__ import annotations

import functools


class PreconditionFailed(RuntimeError):
    """Another writer changed the object first (its generation is not the one expected)."""


@functools.cache
def _client():
    try:
        from apache_beam.io.gcp.gcsio import GcsIO

        return GcsIO().client
    except ImportError:
        from google.cloud import storage

        return storage.Client()


def _blob(url: str):
    if not url.startswith("gs://"):
        raise ValueError(f"not a gs:// URL: {url}")
    bucket, _, name = url[len("gs://") :].partition("/")
    return _client().bucket(bucket).blob(name)


def read(url: str) -> tuple[bytes, int] | None:
    """The object's bytes and generation, or None when it does not exist."""
    from google.api_core import exceptions

    blob = _blob(url)
    try:
        data = blob.download_as_bytes()
    except exceptions.NotFound:
        return None
    return data, int(blob.generation or 0)


def write(url: str, data: bytes, if_generation_match: int) -> int:
    """Write the object only if its generation is `if_generation_match` (0: only if absent); the new
    generation. Raises PreconditionFailed when another writer got there first."""
    from google.api_core import exceptions

    blob = _blob(url)
    try:
        blob.upload_from_string(data, if_generation_match=if_generation_match)
    except exceptions.PreconditionFailed as exc:
        raise PreconditionFailed(f"{url}: changed by another writer") from exc
    return int(blob.generation or 0)


def delete(url: str, if_generation_match: int | None = None) -> None:
    """Delete the object (only at that generation, when given); no error when it is already gone."""
    from google.api_core import exceptions

    try:
        _blob(url).delete(if_generation_match=if_generation_match)
    except exceptions.NotFound:
        pass
    except exceptions.PreconditionFailed as exc:
        raise PreconditionFailed(f"{url}: changed by another writer") from exc
