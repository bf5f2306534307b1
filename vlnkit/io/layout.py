"""The layout of a job's output folder, and the one way to read what is published there.

A run never writes where a reader looks. Each run writes a version folder of its own; one small
pointer, switched in a single step a reader cannot observe half-done, says which version is
published:

    D/
      current                      the pointer: a symlink to versions/<id> (local disk), or an object
                                   whose text is <id> (gs:// and other object stores)
      versions/<id>/               one folder per run: every file of that run, _SUCCESS last
      <name> -> current/<name>     (local disk only) each top-level file of the current version, so
                                   D/summary.json, D/paths-00000-of-00001.parquet, ... keep working
      failed -> versions/<id>      (local disk only) the last failed run's folder, for inspection
      lock.json                    the lock of the run in progress (vlnkit.io.lock)

Readers either resolve the pointer once and read that version's folder (`published(D)`, or
`in_current_version` for a name or glob inside D: what every job does with its inputs, through
`vlnkit.io.inputs`), or open `D/<name>`, which resolves through the pointer at open time. Version
ids sort by the UTC time their run started.

    >>> import tempfile, os
    >>> root = tempfile.mkdtemp()
    >>> current_version(root) is None
    True
    >>> vid = new_version_id()
    >>> os.makedirs(version_folder(root, vid)); open(os.path.join(version_folder(root, vid), "_SUCCESS"), "w").close()
    >>> point(root, vid)
    >>> current_version(root) == vid and [os.path.basename(p) for p in published(root)]
    ['_SUCCESS']
"""

from __future__ import annotations

import datetime
import os
import re
import secrets

from vlnkit.io import fileio, gcs

POINTER = "current"
VERSIONS = "versions"
FAILED = "failed"
SUCCESS = "_SUCCESS"
MANIFEST = "manifest.json"
# A job's data files: `<prefix>-SSSSS-of-NNNNN.<ext>` (dead letters are not data).
_SHARD = re.compile(r"-\d{5}-of-\d{5}\.\w")


def fault_point(name: str) -> None:
    """The fault tests' way of stopping a run at an exact moment of staging or publishing, chosen by
    `VLNKIT_FAULT_POINT` (never set in normal use): `NAME` kills this process's group with SIGKILL
    here (the run: its launcher and the local worker processes it started, wherever the point is
    reached), `NAME+SECONDS` that long after this point (while the work that follows runs),
    `NAME?PATH` waits here until PATH exists (at most a minute), to hold a run at a known moment."""
    wanted = os.environ.get("VLNKIT_FAULT_POINT", "")
    point, how, arg = wanted.partition("+") if "+" in wanted else wanted.partition("?")
    if point != name:
        return
    import signal
    import threading
    import time

    if how == "?":
        deadline = time.monotonic() + 60
        while not os.path.exists(arg) and time.monotonic() < deadline:
            time.sleep(0.02)
    elif how == "+":
        threading.Timer(float(arg), os.killpg, (os.getpgrp(), signal.SIGKILL)).start()
    else:
        os.killpg(os.getpgrp(), signal.SIGKILL)


class NothingPublished(FileNotFoundError):
    """The folder holds no published version (no pointer, and no complete run of the older layout)."""


def _parent(path: str) -> tuple[str, str]:
    """(folder, name) of a path or URL."""
    if fileio.is_remote(path):
        head, _, tail = path.rstrip("/").rpartition("/")
        return head, tail
    return os.path.dirname(path), os.path.basename(path)


def new_version_id() -> str:
    """A version id that sorts by start time (UTC) and is unique: `20260101T120000.123456Z-1a2b3c4d`."""
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y%m%dT%H%M%S.%fZ") + "-" + secrets.token_hex(4)


def version_folder(root: str, version: str) -> str:
    return fileio.join(root, VERSIONS, version)


def current_version(root: str) -> str | None:
    """The id the pointer of `root` names, or None when nothing is published there."""
    pointer = fileio.join(root, POINTER)
    if fileio.is_remote(root):
        got = gcs.read(pointer) if root.startswith("gs://") else None
        if got is None and not root.startswith("gs://") and fileio.exists(pointer):
            got = (fileio.read_bytes(pointer), 0)
        return (got[0].decode().strip() or None) if got else None
    try:
        return os.path.basename(os.readlink(pointer).rstrip("/")) or None
    except OSError:
        return None


def pointer_generation(root: str) -> int:
    """The generation of a gs:// pointer object (0: none yet); what a publish must find unchanged."""
    got = gcs.read(fileio.join(root, POINTER)) if root.startswith("gs://") else None
    return got[1] if got else 0


def list_tree(folder: str) -> list[str]:
    """Every file under a folder (local or any Beam filesystem), sorted."""
    if fileio.is_remote(folder):
        return [path for path, _ in fileio.match([folder.rstrip("/") + "/**"])]
    found = []
    for base, dirs, names in os.walk(folder):
        dirs.sort()
        found.extend(os.path.join(base, n) for n in names)
    return sorted(found)


def _legacy_complete(root: str) -> bool:
    """A folder of the older layout (files directly in it) whose run was complete."""
    if fileio.is_remote(root):
        return fileio.exists(fileio.join(root, SUCCESS))
    return os.path.isfile(os.path.join(root, SUCCESS)) and not os.path.islink(os.path.join(root, SUCCESS))


def published(root: str) -> list[str]:
    """The files of the version of `root` that is published now, sorted (paths inside its version
    folder, which stay readable for `--keep_versions` further runs). Raises NothingPublished.

    An output folder written by an older vlnkit (files directly in it, with `_SUCCESS`) is read as
    one published version.
    """
    version = current_version(root)
    if version is not None:
        files = list_tree(version_folder(root, version))
        if not files:  # a dangling or looping pointer, or a version folder someone removed
            raise NothingPublished(
                f"{root}: its pointer {POINTER} names version {version!r}, which holds no file: nothing is published"
            )
        return files
    if _legacy_complete(root):
        return [p for p, _ in fileio.match(fileio.join(root, "*")) if not _parent(p)[1].startswith("beam-temp")]
    raise NothingPublished(f"{root}: nothing is published here (no {POINTER} pointer and no {SUCCESS})")


def data_files(paths: list[str]) -> list[str]:
    """The data files among a version's files: `<prefix>-SSSSS-of-NNNNN.<ext>`, dead letters excluded.

    >>> data_files(["v/paths-00000-of-00001.parquet", "v/dead_letter-00000-of-00001.jsonl", "v/summary.json"])
    ['v/paths-00000-of-00001.parquet']
    """
    return [p for p in paths if _SHARD.search(_parent(p)[1]) and not _parent(p)[1].startswith("dead_letter-")]


def in_current_version(pattern: str) -> str:
    """A path or glob whose folder is a published output -> the same name inside the current version
    (the pointer resolved once), so a reader lists and opens one version even if a run publishes
    meanwhile. Anything else is returned as is.

    >>> in_current_version("/nonexistent/paths-*.parquet")
    '/nonexistent/paths-*.parquet'
    """
    folder, name = _parent(pattern)
    if not folder or fileio.is_glob(folder) or folder.rstrip("/").endswith("/" + VERSIONS):
        return pattern
    if not fileio.is_remote(folder) and not os.path.islink(os.path.join(folder, POINTER)):
        return pattern  # the cheap local answer for every ordinary folder
    if not fileio.is_glob(name) and _own_file(pattern):
        return pattern  # a file someone put beside the layout, not a name of the published version
    version = current_version(folder)
    return fileio.join(version_folder(folder, version), name) if version else pattern


def _own_file(path: str) -> bool:
    """A file directly in an output folder that is not one of the links to its current version."""
    if fileio.is_remote(path):
        return _parent(path)[1] not in (POINTER, FAILED) and fileio.exists(path)
    return os.path.isfile(path) and not os.path.islink(path)


VERSION_ID = re.compile(r"\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{8}")


def holding_versions(path: str) -> str | None:
    """The output folder D when `path` is D's `versions/` folder or lies in one of its versions (through
    `D/current`, `D/failed` or a link to them too, on local disk); else None. Nothing may be written
    there but D's own runs: a version is what D's readers see, and `versions/` is D's to prune.

    >>> holding_versions("/data/D/versions/20260101T020000.123456Z-1a2b3c4d/sub")
    '/data/D'
    >>> holding_versions("/data/elsewhere/versions_old") is None
    True
    """
    if fileio.is_remote(path):
        head, _, rest = path.partition("://")
        parts = [f"{head}://{rest.split('/', 1)[0]}", *rest.rstrip("/").split("/")[1:]]
        pointer_object = [i for i, p in enumerate(parts) if p == POINTER and i > 0]
        for i in pointer_object:  # gs://b/D/current/sub: beside a pointer object, never a version
            if current_version("/".join(parts[:i])) is not None:
                return "/".join(parts[:i])
    else:
        parts = os.path.realpath(path).split(os.sep)
    for i, part in enumerate(parts[1:], start=1):
        if part != VERSIONS:
            continue
        root = (os.sep if not fileio.is_remote(path) else "/").join(parts[:i]) or os.sep
        below = parts[i + 1] if i + 1 < len(parts) else None
        if below is not None and VERSION_ID.fullmatch(below):
            return root
        if below is None and current_version(root) is not None:
            return root
    return None


# ---------------------------------------------------------------------------- the writer's side
def point(root: str, version: str, expected_generation: int | None = None) -> None:
    """Publish `version`: switch the pointer in one step (a symlink renamed over the old one; on
    gs:// one object written only if its generation is still the one this run saw)."""
    pointer = fileio.join(root, POINTER)
    if root.startswith("gs://"):
        gcs.write(pointer, version.encode() + b"\n", if_generation_match=expected_generation or 0)
        return
    if fileio.is_remote(root):
        with fileio.open_write(pointer) as f:
            f.write(version.encode() + b"\n")
        return
    _replace_link(root, POINTER, os.path.join(VERSIONS, version))


def _replace_link(root: str, name: str, target: str) -> None:
    tmp = os.path.join(root, f".{name}.{secrets.token_hex(6)}.tmp")
    os.symlink(target, tmp)
    fault_point(f"link:{name}")
    os.replace(tmp, os.path.join(root, name))
    fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename is durable before the run says it published
    finally:
        os.close(fd)


def link_top_level(root: str, version: str, owned: list[str]) -> None:
    """(Local disk.) Make each top-level entry of the current version reachable as `root/<name>`
    through the pointer, and remove links (or files of the older layout) among `owned` patterns that
    the current version no longer has."""
    folder = version_folder(root, version)
    names = set(os.listdir(folder))
    for name in sorted(names):
        link = os.path.join(root, name)
        target = os.path.join(POINTER, name)
        if os.path.islink(link) and os.readlink(link) == target:
            continue
        if os.path.isdir(link) and not os.path.islink(link):
            fileio.remove_tree(link)  # a folder of the older layout (e.g. report figures)
        _replace_link(root, name, target)
    for name in os.listdir(root):
        link = os.path.join(root, name)
        if name not in names and os.path.islink(link) and os.readlink(link).startswith(POINTER + os.sep):
            os.remove(link)  # a name the previous version had and this one has not
    import glob

    for pattern in owned:
        for path in glob.glob(os.path.join(glob.escape(root), pattern)):
            name = os.path.basename(path)
            if name in names or name in (POINTER, VERSIONS, FAILED):
                continue
            if os.path.islink(path) or os.path.isfile(path):
                os.remove(path)
            elif os.path.isdir(path):
                fileio.remove_tree(path)


def mark_failed(root: str, version: str) -> None:
    """Point `root/failed` at a failed run's folder (local disk; on object stores the error names it)."""
    if not fileio.is_remote(root):
        _replace_link(root, FAILED, os.path.join(VERSIONS, version))


def versions(root: str) -> list[str]:
    """Every version id with a folder under `root/versions/`, sorted (oldest first)."""
    base = fileio.join(root, VERSIONS)
    if fileio.is_remote(root):
        prefix = base.rstrip("/") + "/"
        return sorted({p[len(prefix) :].split("/", 1)[0] for p in list_tree(base) if p.startswith(prefix)})
    try:
        return sorted(n for n in os.listdir(base) if os.path.isdir(os.path.join(base, n)))
    except FileNotFoundError:
        return []


def stale_versions(root: str, keep: int, running: str | None = None) -> list[str]:
    """Versions to delete: every one never published (no `_SUCCESS`, or newer than the current one:
    a killed, failed or refused run's), and complete ones older than the `keep` newest (the current
    included). `running` (this run's own folder) is never listed.

    A reader that resolved the pointer just before a publish keeps its version for `keep - 1` more runs.
    """
    current = current_version(root)
    complete = []
    stale = []
    for version in versions(root):
        if version in (running, current):
            continue
        done = fileio.exists(fileio.join(version_folder(root, version), SUCCESS))
        if done and current is not None and version < current:
            complete.append(version)
        else:
            stale.append(version)
    keep_older = max(0, keep - 1) if current else 0
    stale += complete[: len(complete) - keep_older] if len(complete) > keep_older else []
    return sorted(stale)


def remove_versions(root: str, stale: list[str]) -> None:
    for version in stale:
        fileio.remove_tree(version_folder(root, version))
    if not fileio.is_remote(root):
        failed = os.path.join(root, FAILED)
        if os.path.islink(failed) and not os.path.exists(failed):
            os.remove(failed)
        for name in os.listdir(root) if os.path.isdir(root) else []:
            if name.startswith(".") and name.endswith(".tmp") and os.path.islink(os.path.join(root, name)):
                os.remove(os.path.join(root, name))  # a link a killed publish left half-made


def main(argv: list[str]) -> int:
    """`vlnkit published D`: the files of D's current version, one per line; exit 1 when nothing is
    published (one line on stderr saying so)."""
    import sys

    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: vlnkit published OUTPUT_DIR   (the files of its current version, one per line)", file=sys.stderr)
        return 2 if not argv or argv[0] not in ("-h", "--help") else 0
    try:
        files = published(argv[0].rstrip("/") if fileio.is_remote(argv[0]) else argv[0])
    except NothingPublished as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(files))
    return 0
