"""What a user names as an input, as files: globs, comma-separated lists and published output folders.

One floor above `fileio` (plain listing) and `layout` (where a job's output folder publishes its
current version), this module is where the two meet: a glob inside a published output folder is
matched in the version published at this moment, so a listing never mixes two versions; the folder
itself stands for the data files of that version. Jobs list their inputs here (`pipelines.job.Run`),
and so do readers of a folder a user names (the graphs of `--connectivity_dir`).

    >>> match_current("/nonexistent/paths-*.parquet")
    []
"""

from __future__ import annotations

import os

from vlnkit.io import fileio, layout


def _split(patterns: str | list[str]) -> list[str]:
    if isinstance(patterns, str):
        return [p for p in (s.strip() for s in patterns.split(",")) if p]
    return list(patterns)


def match_current(patterns: str | list[str]) -> list[tuple[str, int]]:
    """`fileio.match`, except that a pattern whose folder is a published output is matched inside the
    version published now (`layout.in_current_version`): sorted (path, size) pairs."""
    return fileio.match([layout.in_current_version(p) for p in _split(patterns)])


def expand_inputs(flag: str, patterns: str | list[str]) -> list[tuple[str, int]]:
    """Like `match_current`, but strict, for inputs a user named: every named file must exist and every
    glob must match at least one file; a job's published output folder names the data files
    (`<prefix>-SSSSS-of-NNNNN.*`) of its current version. Raises FileNotFoundError naming the flag
    and the pattern.

        >>> expand_inputs("--dataset", "/nonexistent/a.json")
        Traceback (most recent call last):
        ...
        FileNotFoundError: --dataset: /nonexistent/a.json does not exist
    """
    patterns = _split(patterns)
    if not patterns:
        raise FileNotFoundError(f"{flag}: no file named")
    found: dict[str, int] = {}
    for pattern in patterns:
        matched = match_current([pattern])
        if not matched and not fileio.is_glob(pattern):
            try:  # a job's output folder stands for the data files of its published version
                files = layout.data_files(layout.published(pattern.rstrip("/")))
            except FileNotFoundError:
                files = []
            matched = match_current(files) if files else []
        if not matched:
            if fileio.is_glob(pattern):
                raise FileNotFoundError(f"{flag}: {pattern} matches no file")
            what = (
                "is a folder, not a file (nor a job's published output folder)"
                if not fileio.is_remote(pattern) and os.path.isdir(pattern)
                else "does not exist"
            )
            raise FileNotFoundError(f"{flag}: {pattern} {what}")
        found.update(matched)
    return sorted(found.items())
