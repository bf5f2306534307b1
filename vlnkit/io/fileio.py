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
    """Open for reading; `.gz` and `.bz2` files are decompressed, as Beam's filesystems do for any scheme."""
    if _has_scheme(path):
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.open(path)
    if path.endswith(".gz"):
        import gzip

        return gzip.open(path, "rb")
    if path.endswith(".bz2"):
        import bz2

        return bz2.open(path, "rb")
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
    """Expand comma-separated file patterns to sorted (path, size) pairs; directories are not matched.

    A pattern inside a published output folder (`D/paths-*.parquet`) is matched in the version
    published at this moment (`vlnkit.io.layout.resolve`), so a listing never mixes two versions.
    """
    if isinstance(patterns, str):
        patterns = [p for p in (s.strip() for s in patterns.split(",")) if p]
    from vlnkit.io.layout import resolve

    found: dict[str, int] = {}
    for pattern in map(resolve, patterns):
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


GLOB_CHARS = frozenset("*?[")


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in GLOB_CHARS)


def expand_inputs(flag: str, patterns: str | list[str]) -> list[tuple[str, int]]:
    """Like `match`, but strict, for inputs a user named: every named file must exist and every glob
    must match at least one file; a job's published output folder names the data files
    (`<prefix>-SSSSS-of-NNNNN.*`) of its current version. Raises FileNotFoundError naming the flag
    and the pattern.

        >>> expand_inputs("--dataset", "/nonexistent/a.json")
        Traceback (most recent call last):
        ...
        FileNotFoundError: --dataset: /nonexistent/a.json does not exist
    """
    if isinstance(patterns, str):
        patterns = [p for p in (s.strip() for s in patterns.split(",")) if p]
    if not patterns:
        raise FileNotFoundError(f"{flag}: no file named")
    from vlnkit.io import layout

    found: dict[str, int] = {}
    for pattern in patterns:
        matched = match([pattern])
        if not matched and not is_glob(pattern):
            try:  # a job's output folder stands for the data files of its published version
                files = layout.data_files(layout.published(pattern.rstrip("/")))
            except FileNotFoundError:
                files = []
            matched = match(files) if files else []
        if not matched:
            if is_glob(pattern):
                raise FileNotFoundError(f"{flag}: {pattern} matches no file")
            what = (
                "is a folder, not a file (nor a job's published output folder)"
                if not _has_scheme(pattern) and os.path.isdir(pattern)
                else "does not exist"
            )
            raise FileNotFoundError(f"{flag}: {pattern} {what}")
        found.update(matched)
    return sorted(found.items())


def remove_tree(path: str) -> None:
    """Delete a folder and everything in it (no error if it does not exist).

    On object stores a "folder" is only a name prefix, so every object under it is deleted by name.
    """
    if _has_scheme(path):
        from apache_beam.io.filesystems import FileSystems

        prefix = path.rstrip("/") + "/"
        objects = [m.path for r in FileSystems.match([prefix + "**"]) for m in r.metadata_list]
        if objects:
            FileSystems.delete(objects)
        return
    import shutil

    shutil.rmtree(path, ignore_errors=True)
