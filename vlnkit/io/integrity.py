"""Account for every file a run wrote, and re-check a published version later against its manifest.

A run counts what it makes (its tallies: joined paths, episodes scored, dead letters, ...) on one side
of the pipeline and writes files on another; a sink that loses rows (a buggy runner, a full network
filesystem, a broken upload) would otherwise go unnoticed. So, before `_SUCCESS`, the run reads back
what was actually written and compares it with what the job declares it wrote:

- `describe(path)`: a file's size, its crc32c (the checksum Cloud Storage keeps for every object, in
  its base64 form, so `gsutil hash -c` and the manifest can be compared by eye) and its rows: the
  Parquet footer's row count (the data itself is not read), the lines of a JSON Lines or text file,
  the data lines of a CSV file, the records of a JSON list in the layout the toolkit's writer uses
  (one record per line between `[` and `]`). A file whose structure is broken (a Parquet file
  without a footer, a JSON list without its closing bracket, a JSON document that does not parse, a
  line file whose last line has no end) says so in `defect`.
- `check(folder, declared, described)`: the problems of a version folder against a job's
  declaration, one line each naming the file and both counts: a declared output not written, one
  holding other than the declared rows, an incomplete set of shards, a file nobody declared.
- `verify(D)` / `vlnkit verify D`: a published version against its `manifest.json`: every file
  present, with the recorded size, checksum and rows, and nothing else (a consumer runs it before
  reading, an operator after a copy).

Each file is read once, in 1 MB pieces (crc32c in C: about 10 GB/s; newlines counted by `bytes.count`);
on gs:// the checksum is the one Cloud Storage computed from the stored bytes (no download), and only
files whose rows are lines are streamed.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "dead_letter-00000-of-00001.jsonl"), "w") as f:
    ...     _ = f.write('{"reason": "x"}\\n')
    >>> described = [describe(p) for p in files_of(folder)]
    >>> described[0]["rows"], described[0]["crc32c"]
    (1, 'IUiFcw==')
    >>> check(folder, {"dead_letter-*-of-*": 2}, described)
    [Problem(file='.../dead_letter-00000-of-00001.jsonl', rows=1, expected=2, what='holds 1 row(s), the run counted 2')]
"""

from __future__ import annotations

import base64
import fnmatch
import json
import os
import re
from dataclasses import dataclass

from vlnkit.io import fileio, layout

CHUNK = 1 << 20
MAX_DOCUMENT_BYTES = 64 << 20  # a JSON document (summary, tables) larger than this is not parsed to be checked
LINE_FILES = (".jsonl", ".txt")
# Files the layout writes around a run's outputs: never an output, never declared.
RUN_FILES = (layout.MANIFEST, layout.SUCCESS)
_SHARD = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})(?P<suffix>\.[^/]+)$")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a written or published file; `what` is the sentence a person reads."""

    file: str
    rows: int | None
    expected: int | None
    what: str

    def line(self) -> str:
        return f"{self.file}: {self.what}"

    def to_dict(self) -> dict:
        return {"file": self.file, "rows": self.rows, "expected": self.expected, "problem": self.what}


def crc32c_text(value: int) -> str:
    """A crc32c as Cloud Storage shows it: base64 of its 4 big-endian bytes.

    >>> crc32c_text(0xE3069283)  # crc32c("123456789"), the standard check value
    '4waSgw=='
    """
    return base64.b64encode(value.to_bytes(4, "big")).decode()


def _stored_crc32c(path: str) -> str | None:
    """The crc32c Cloud Storage keeps for a gs:// object (a metadata call); None elsewhere."""
    if not path.startswith("gs://"):
        return None
    found = fileio.stored_checksum(path)  # None: a store that keeps none, the bytes are streamed instead
    return found if isinstance(found, str) and len(found) == 8 else None


def _kind(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(LINE_FILES):
        return "lines"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith(".json"):
        return "json"
    return "bytes"


def _scan(path: str, count_lines: bool, checksum: bool) -> tuple[int, str | None, int, bytes, bytes]:
    """One pass over a file: (bytes, crc32c, newlines, first 2 bytes, last 2 bytes)."""
    import google_crc32c

    crc = google_crc32c.Checksum() if checksum else None
    size = newlines = 0
    head = tail = b""
    with fileio.open_stored(path) as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            if crc is not None:
                crc.update(chunk)
            if count_lines:
                newlines += chunk.count(b"\n")
            if size < 2:
                head = (head + chunk)[:2]
            tail = (tail + chunk)[-2:]
            size += len(chunk)
    digest = crc32c_text(int.from_bytes(crc.digest(), "big")) if crc is not None else None
    return size, digest, newlines, head, tail


def _parquet(path: str, out: dict) -> None:
    import pyarrow.parquet as pq

    try:
        with fileio.open_read(path) as f:
            meta = pq.ParquetFile(f).metadata
    except Exception as exc:  # noqa: BLE001 -- a truncated or foreign file: a defect of this output
        out["defect"] = f"not a readable Parquet file ({type(exc).__name__}: {exc})"
        return
    out["rows"] = meta.num_rows
    kv = meta.metadata or {}
    out["schema"] = kv.get(b"vlnkit.schema", b"").decode() or None
    out["schema_version"] = kv.get(b"vlnkit.schema_version", b"").decode() or None


def describe(path: str, size: int | None = None) -> dict:
    """A written file as the manifest records it: path, bytes, rows (None where a file has no rows:
    a JSON document, a page, a figure), crc32c, and for Parquet the declared schema; with `defect`
    when its structure is broken."""
    kind = _kind(path)
    stored = _stored_crc32c(path)
    lines = kind in ("lines", "csv", "json")
    out: dict = {"path": path, "bytes": size, "rows": None, "crc32c": stored}
    if stored is None or lines:
        nbytes, digest, newlines, head, tail = _scan(path, lines, checksum=stored is None)
        out["bytes"] = nbytes
        out["crc32c"] = stored or digest
    elif size is None:
        out["bytes"] = fileio.match(path)[0][1]
    if kind == "parquet":
        _parquet(path, out)
    elif kind in ("lines", "csv"):
        out["rows"] = max(0, newlines - (1 if kind == "csv" else 0))
        if out["bytes"] and tail[-1:] != b"\n":
            out["defect"] = "its last line has no end (the file was cut short)"
    elif kind == "json" and head == b"[\n":
        # The toolkit's JSON lists (transforms.write.WriteJsonFile): "[", one record per line, "]".
        out["rows"] = max(0, newlines - 2) if tail == b"]\n" else max(0, newlines - 1)
        if tail != b"]\n":
            out["defect"] = "the JSON list has no closing bracket (the file was cut short)"
    elif kind == "json" and out["bytes"] <= MAX_DOCUMENT_BYTES:
        try:
            json.loads(_stored_bytes(path))
        except ValueError as exc:
            out["defect"] = f"not a complete JSON document ({exc})"
    return out


def _stored_bytes(path: str) -> bytes:
    with fileio.open_stored(path) as f:
        return f.read()


def files_of(folder: str) -> list[str]:
    """Every file of a version folder but the run's own `manifest.json` and `_SUCCESS`, sorted."""
    return [p for p in layout.list_tree(folder) if relative(folder, p) not in RUN_FILES]


def relative(folder: str, path: str) -> str:
    """A file's name inside its version folder, `/`-separated (what the manifest calls it)."""
    base = folder.rstrip("/") + "/"
    name = path[len(base) :] if path.startswith(base) else os.path.relpath(path, folder)
    return name.replace(os.sep, "/")


def _plural_rows(n: int | None) -> str:
    return f"{n} row(s)"


def _missing_shards(names: list[str]) -> list[str]:
    """Shards absent from a set whose names say how many there are (`-SSSSS-of-NNNNN`)."""
    sets: dict[tuple[str, str, str], set[int]] = {}
    for name in names:
        m = _SHARD.match(name)
        if m:
            sets.setdefault((m["prefix"], m["count"], m["suffix"]), set()).add(int(m["index"]))
    missing = []
    for (prefix, count, suffix), present in sorted(sets.items()):
        missing += [f"{prefix}-{i:05d}-of-{count}{suffix}" for i in range(int(count)) if i not in present]
    return missing


def check(folder: str, declared: dict[str, int | None], described: list[dict]) -> list[Problem]:
    """What is wrong with a version folder's files against a job's declaration.

    `declared` maps a name or glob inside `folder` (a sharded output is `<prefix>-*-of-*`) to the rows
    its files must hold together, or None when they must only exist (a page, a figure, a JSON
    document). Every file of `described` must be covered by some declared name: a file nobody
    declared is a problem too (an output the run did not account for).
    """
    by_name = {relative(folder, d["path"]): d for d in described}
    problems: list[Problem] = []
    covered: set[str] = set()
    defects = {d["path"]: d["defect"] for d in described if d.get("defect")}
    for missing in _missing_shards(list(by_name)):
        problems.append(Problem(fileio.join(folder, missing), None, None, "this shard of the set was not written"))
    for pattern, expected in declared.items():
        matched = sorted(n for n in by_name if fnmatch.fnmatchcase(n, pattern))
        covered.update(matched)
        if not matched:
            problems.append(Problem(fileio.join(folder, pattern), None, expected, _not_written(expected)))
            continue
        if expected is None:
            continue
        rows = sum(int(by_name[n].get("rows") or 0) for n in matched)
        if rows != expected:
            where = by_name[matched[0]]["path"] if len(matched) == 1 else fileio.join(folder, pattern)
            files = "" if len(matched) == 1 else f" ({len(matched)} files)"
            defect = f"; {defects.pop(where)}" if where in defects else ""
            problems.append(
                Problem(where, rows, expected, f"holds {_plural_rows(rows)}{files}, the run counted {expected}{defect}")
            )
    problems += [
        Problem(path, by_name[relative(folder, path)].get("rows"), None, what) for path, what in defects.items()
    ]
    for name in sorted(set(by_name) - covered):
        problems.append(Problem(by_name[name]["path"], by_name[name].get("rows"), None, "written, but not declared"))
    return problems


def _not_written(expected: int | None) -> str:
    return "was not written" + ("" if expected is None else f" (the run counted {expected} row(s))")


# ---------------------------------------------------------------------------- a published version
def version_folders(root: str, every: bool = False) -> list[str]:
    """The folder of `root`'s published version, or with `every` of each complete kept version
    (those with `_SUCCESS`, oldest first). A folder of the older layout is its own one version.
    Raises `layout.NothingPublished`."""
    current = layout.current_version(root)
    if current is None:
        layout.published(root)  # raises NothingPublished, or accepts a complete folder of the older layout
        return [root]
    if not every:
        return [layout.version_folder(root, current)]
    return [
        layout.version_folder(root, v)
        for v in layout.versions(root)
        if fileio.exists(fileio.join(layout.version_folder(root, v), layout.SUCCESS))
    ]


def verify_version(folder: str) -> list[Problem]:
    """A version folder against its `manifest.json`: `_SUCCESS` and the manifest present and complete,
    every recorded output present with its size, crc32c and rows, and no file the manifest does not name."""
    manifest_path = fileio.join(folder, layout.MANIFEST)
    if not fileio.exists(fileio.join(folder, layout.SUCCESS)):
        return [Problem(fileio.join(folder, layout.SUCCESS), None, None, "missing: this version is not complete")]
    try:
        manifest = json.loads(_stored_bytes(manifest_path))
    except FileNotFoundError:
        return [Problem(manifest_path, None, None, "missing: nothing to verify against")]
    except (OSError, ValueError) as exc:
        return [Problem(manifest_path, None, None, f"cannot be read ({exc})")]
    if manifest.get("status") != "complete":
        return [Problem(manifest_path, None, None, f"says the run is {manifest.get('status')!r}, not complete")]
    outputs = manifest.get("outputs") or []
    if not outputs or any("crc32c" not in o or "name" not in o for o in outputs):
        return [Problem(manifest_path, None, None, "records no checksums (written by an older vlnkit): cannot verify")]
    present = {relative(folder, p): p for p in files_of(folder)}
    problems = []
    for recorded in outputs:
        name = recorded["name"]
        path = present.pop(name, None)
        if path is None:
            problems.append(Problem(fileio.join(folder, name), None, recorded.get("rows"), "missing"))
            continue
        problems += _compare(path, recorded)
    problems += [Problem(p, None, None, "not in the manifest") for _, p in sorted(present.items())]
    return problems


def _compare(path: str, recorded: dict) -> list[Problem]:
    found = describe(path)
    problems = []
    if found["bytes"] != recorded.get("bytes"):
        problems.append(Problem(path, None, None, f"{found['bytes']} bytes, the manifest records {recorded['bytes']}"))
    if found["crc32c"] != recorded.get("crc32c"):
        problems.append(
            Problem(path, None, None, f"crc32c {found['crc32c']}, the manifest records {recorded['crc32c']}")
        )
    if found.get("defect"):
        problems.append(Problem(path, found.get("rows"), recorded.get("rows"), found["defect"]))
    elif found.get("rows") != recorded.get("rows"):
        what = f"{found['rows']} rows, the manifest records {recorded['rows']}"
        problems.append(Problem(path, found.get("rows"), recorded.get("rows"), what))
    return problems


def verify(root: str, every: bool = False) -> list[Problem]:
    """The problems of `root`'s published version (with `every`, of each complete kept version)
    against its manifest; [] when everything matches. Raises `layout.NothingPublished`.

        problems = vlnkit.io.verify("output/r4r_val_seen")
        if problems: raise SystemExit("\\n".join(p.line() for p in problems))
    """
    root = root.rstrip("/") if fileio.is_remote(root) else root
    return [p for folder in version_folders(root, every) for p in verify_version(folder)]


def main(argv: list[str]) -> int:
    """`vlnkit verify D [--all]`: exit 0 when the published version (every kept one with --all) matches
    its manifest; 1 with one line per problem naming the file (or when nothing is published)."""
    import sys

    every = "--all" in argv
    rest = [a for a in argv if a != "--all"]
    if len(rest) != 1 or rest[0].startswith("-"):
        print(
            "usage: vlnkit verify OUTPUT_DIR [--all]   (re-check the published version, or every kept one, "
            "against its manifest: files, sizes, crc32c, rows)",
            file=sys.stderr,
        )
        return 0 if rest and rest[0] in ("-h", "--help") else 2
    root = rest[0]
    try:
        folders = version_folders(root.rstrip("/") if fileio.is_remote(root) else root, every)
        problems = [(folder, verify_version(folder)) for folder in folders]
    except layout.NothingPublished as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    bad = [p for _, found in problems for p in found]
    for problem in bad:
        print(f"error: {problem.line()}", file=sys.stderr)
    try:
        for folder, found in problems:
            if not found:
                print(f"verified: {folder}", flush=True)
    except BrokenPipeError:  # a reader that stopped reading: the answer is the exit code
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if bad else 0
