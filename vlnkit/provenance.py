"""What a run's result depends on, as checksums: its input files and the code that made it.

`--skip_if_unchanged` compares a fingerprint of settings, code and inputs, and `manifest.json` records
the same facts, so both must change whenever anything that shapes an output changes. The code is
identified by a hash of the installed package's own source files (every `.py` file of the packages
below, and the packaged profiles), not by a git revision: two different uncommitted edits, or two
wheels built with the same version number, hash differently. The git revision is recorded beside it
where there is one, for a person to read; it never decides anything.

    >>> code = code_identity()
    >>> sorted(code) == ["git_revision", "source_sha256", "version"] and len(code["source_sha256"]) == 64
    True
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess

from vlnkit.io import fileio

# The top-level packages this project installs (setup.py `find_packages`): the code of every job.
PACKAGES = ("vlnkit", "transforms", "pipelines", "configs")
SOURCE_SUFFIXES = (".py", ".yaml")


def _package_folders() -> list[str]:
    import importlib.util

    folders = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folders.extend(spec.submodule_search_locations)
    return folders


@functools.cache
def source_fingerprint() -> str:
    """sha256 over the relative path and content of every source file of the installed packages
    (computed once per process: about 5 ms for this project's ~200 files).

        >>> source_fingerprint() == source_fingerprint() and len(source_fingerprint())
        64
    """
    h = hashlib.sha256()
    for folder in sorted(_package_folders()):
        base = os.path.dirname(folder)
        files = []
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            files.extend(os.path.join(root, n) for n in names if n.endswith(SOURCE_SUFFIXES))
        for path in sorted(files):
            h.update(os.path.relpath(path, base).replace(os.sep, "/").encode() + b"\0")
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


@functools.cache
def git_revision() -> str | None:
    """The git revision of the source tree the packages were imported from, with `-dirty` for
    uncommitted edits; None for an installed wheel or when git is not available (for people only)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.exists(os.path.join(here, ".git")):
        return None
    try:
        run = functools.partial(subprocess.run, capture_output=True, text=True, timeout=5, check=True)
        rev = run(["git", "-C", here, "rev-parse", "--short", "HEAD"]).stdout.strip()
        dirty = run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{rev}-dirty" if dirty else rev


def code_identity() -> dict:
    """The code of this run: package version, source hash (what decides) and git revision (if any)."""
    import vlnkit

    return {"version": vlnkit.__version__, "source_sha256": source_fingerprint(), "git_revision": git_revision()}


def file_digest(path: str) -> str:
    """sha256 of a file as stored (local or any Beam filesystem; a `.gz` file is not decompressed, so a
    truncated one is hashed like any other file and `sha256sum` gives the same), read in 1 MB pieces.
    An input recorded as a glob (`file_set`) is hashed as the set of files it matches (`set_digest`)."""
    if fileio.is_glob(path):
        return set_digest(path)
    h = hashlib.sha256()
    with fileio.open_stored(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_set(pattern: str) -> tuple[str, None]:
    """One input standing for every file a glob matches (`<folder>/*.json`), as (pattern, None): an input
    of thousands of small files (REVERIE's 10,567 visibility files) is one entry of the manifest and the
    dataset card, its checksum `set_digest`. Its bytes are counted as its files are read for that checksum
    (`describe_inputs`), not listed one by one when the run starts: listing REVERIE's folder with sizes
    took 0.07 s alone, and 0.1 to 0.25 s of the job's own thread while the warm-up thread ran."""
    return pattern, None


def set_digest(pattern: str) -> str:
    """sha256 over the files a glob matches, in name order: each one's name and sha256, so adding,
    removing, renaming or changing any of them changes it.

        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "a.json").write_text("{}")
        >>> before = set_digest(str(d / "*.json"))
        >>> _ = (d / "b.json").write_text("{}")
        >>> before == set_digest(str(d / "*.json"))
        False
    """
    return _set_description(pattern)[0]


def _set_description(pattern: str) -> tuple[str, int]:
    """(`set_digest`, the files' bytes in all) from one read of the files a glob matches."""
    h = hashlib.sha256()
    size = 0
    for path, data in fileio.read_small_files(pattern):  # thousands of small files: read whole, plainly
        h.update(f"{path.rsplit('/', 1)[-1]}\0{hashlib.sha256(data).hexdigest()}\n".encode())
        size += len(data)
    return h.hexdigest(), size


def describe_inputs(inputs: list[tuple[str, int | None]]) -> list[dict]:
    """(path, size) pairs -> the manifest's input entries: path, bytes and sha256 of the content. A glob
    (`file_set`, size None) is described from one read of its files: their set digest and their bytes."""
    described = []
    for path, size in inputs:
        if fileio.is_glob(path):
            digest, size = _set_description(path)
        else:
            digest = file_digest(path)
        described.append({"path": path, "bytes": size, "sha256": digest})
    return described


def fingerprint(job: str, job_settings: dict, described_inputs: list[dict], code: str | None = None) -> str:
    """One hash of everything that decides a run's outputs: the job, its settings, the code (`code`: a
    `source_fingerprint()`, this process's when not given), the inputs' contents (by checksum). Equal
    fingerprints mean a rerun would write the same outputs.

        >>> a = fingerprint("demo", {"seed": 0}, [{"path": "a.json", "sha256": "00"}])
        >>> a == fingerprint("demo", {"seed": 0}, [{"path": "a.json", "sha256": "00"}])
        True
        >>> a == fingerprint("demo", {"seed": 1}, [{"path": "a.json", "sha256": "00"}])
        False
    """
    blob = json.dumps(
        {
            "job": job,
            "code": code or source_fingerprint(),
            "settings": job_settings,
            "inputs": [(i["path"], i["sha256"]) for i in described_inputs],
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()
