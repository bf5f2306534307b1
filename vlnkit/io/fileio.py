"""File access that works for local paths and, when Apache Beam is installed, any Beam filesystem.

The core stays importable without Beam: Beam is only imported when a path has a scheme
(`gs://`, `s3://`, ...) or when a glob must be expanded on such a filesystem.
"""

from __future__ import annotations

import glob as _glob
import os
from typing import IO


def _has_scheme(path: str) -> bool:
    return "://" in path


def open_read(path: str) -> IO[bytes]:
    if _has_scheme(path):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.open(path)
    return open(path, "rb")


def open_write(path: str) -> IO[bytes]:
    if _has_scheme(path):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.create(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    return open(path, "wb")


def read_bytes(path: str) -> bytes:
    with open_read(path) as f:
        return f.read()


def exists(path: str) -> bool:
    if _has_scheme(path):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.exists(path)
    return os.path.exists(path)


def join(base: str, *parts: str) -> str:
    if _has_scheme(base):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.join(base, *parts)
    return os.path.join(base, *parts)


def match(patterns: str | list[str]) -> list[tuple[str, int]]:
    """Expand comma-separated file patterns to sorted (path, size) pairs; directories are not matched."""
    if isinstance(patterns, str):
        patterns = [p for p in (s.strip() for s in patterns.split(",")) if p]
    found: dict[str, int] = {}
    for pattern in patterns:
        if _has_scheme(pattern):
            from apache_beam.io.filesystems import FileSystems

            for result in FileSystems.match([pattern]):
                for meta in result.metadata_list:
                    found[meta.path] = meta.size_in_bytes
        else:
            for path in _glob.glob(os.path.expanduser(pattern)):
                if os.path.isfile(path):
                    found[path] = os.path.getsize(path)
    return sorted(found.items())


def remove_tree(path: str) -> None:
    """Delete a folder and everything in it (no error if it does not exist)."""
    if _has_scheme(path):
        from apache_beam.io.filesystems import FileSystems

        if FileSystems.exists(path):
            FileSystems.delete([path if path.endswith("/") else path + "/"])
        return
    import shutil

    shutil.rmtree(path, ignore_errors=True)
