"""SPICE 1.0 through the reference jar, as pycocoevalcap 1.2's wrapper drives it (`spice/spice.py`).

The wrapper writes the set as one JSON list `[{"image_id", "test", "refs"}]` in sorted id order (l. 33-61),
runs `java -jar -Xmx8G spice-1.0.jar IN -cache DIR -out OUT -subset -silent` from the jar's folder
(l. 69-76), reads each item's `scores.All.f` (null becomes NaN) and reports their mean as the set's
SPICE (l. 84-89). "Equal" for SPICE is identical output of the same jar on the same input file.

On OpenJDK 16 and later the jar cannot start that way (`../shared/data/speaker/checks/SOURCE.md`): its
parse cache (LMDB through the FST serializer) needs `--add-opens` for java.base packages, and writing
`-out` needs a JSR-223 JavaScript engine (Nashorn left the JDK in 15), so Rhino
(`/usr/share/java/js.jar`, Debian's `librhino-java`) goes on the classpath and `edu.anu.spice.SpiceScorer`
is started by class (`-cp`, not `-jar`). Those flags change how the JVM runs, not what the jar computes.

A JVM call costs 20-50 s before the first sentence (CoreNLP's parser and three NER models load; 51 s
for a 2-item call on a busy 2-core machine), then parsing runs at about a sentence a second or slower
(PTB-tokenized instructions lose their full stops and parse as one long sentence), so a caller sends
many items per call (one Beam batch), never one. The parse cache is a folder per `Spice` (one per worker): two workers never share an LMDB.
A cache kept across runs (`Spice.in_slot`) is a folder of slots, each locked by the one `Spice` that uses it:
a rerun on the same references parses only the sentences its slot has not seen (pycocoevalcap keeps its
cache in its package folder for the same reason).

The jar's per-item scores depend on the set they are scored in (measured in `checks/SOURCE.md`: an
item's F can differ scored alone and in a 340-item batch), so a per-item SPICE is that of its call's set;
it equals the reference's on a set exactly when the call holds the same items in the same order.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from vlnkit.captioning.jars import java, missing, rhino_jar, spice_jar

# The java.base packages the jar's FST serializer reflects into (found by running it on JDK 17).
OPENS = (
    "java.lang",
    "java.util",
    "java.math",
    "java.net",
    "java.text",
    "java.util.concurrent",
    "java.io",
    "java.lang.reflect",
    "java.nio",
    "sun.nio.ch",
)
MAIN_CLASS = "edu.anu.spice.SpiceScorer"


class SpiceUnavailable(RuntimeError):
    """Java, the jars or Rhino is missing: the message is one line naming the install command."""


def jvm_flags(memory: str = "8G") -> list[str]:
    """The JVM options SPICE 1.0 needs on JDK 17 (before the class name): heap, the opens, the classpath."""
    jar = spice_jar()
    classpath = ":".join((str(jar), str(jar.parent / "lib" / "*"), str(rhino_jar())))
    return [f"-Xmx{memory}", *(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in OPENS), "-cp", classpath]


def _f_score(value) -> float:
    """The wrapper's float_convert: a null (no tuples on either side) is NaN."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class Spice:
    """The SPICE 1.0 jar: `score(hypotheses, references, ids)` -> (mean F, per-item F), one JVM per call.

    `memory` is the JVM's heap ceiling (the reference's 8G; measured resident: 1.3 GB for 2 AC-GG items,
    1.8 GB for 20, 3.3 GB while parsing R2R val_seen's 1,021 references); `cache` the parse-cache folder
    (default: a fresh one per instance, removed by `close`)."""

    def __init__(self, memory: str = "8G", cache: str | Path | None = None):
        reason = missing("spice")
        if reason:
            raise SpiceUnavailable(reason)
        self.memory = memory
        self._own_cache = cache is None
        self._slot_lock: int | None = None
        self.cache = Path(cache) if cache is not None else Path(tempfile.mkdtemp(prefix="vlnkit-spice-cache-"))
        self.cache.mkdir(parents=True, exist_ok=True)  # the jar's LMDB needs the folder to exist

    @classmethod
    def in_slot(cls, root: str | Path, memory: str = "8G") -> Spice:
        """A `Spice` whose parse cache is kept in `root` (a local folder) after `close`: the first slot
        `root/slot-<k>` that no other `Spice` holds, locked (flock) until `close` or the process's end."""
        path, fd = lock_slot(Path(root))
        try:
            spice = cls(memory, cache=path)
        except BaseException:
            os.close(fd)
            raise
        spice._slot_lock = fd
        return spice

    def command(self, input_path: Path, output_path: Path) -> list[str]:
        return [
            java(),
            *jvm_flags(self.memory),
            MAIN_CLASS,
            str(input_path),
            "-cache",
            str(self.cache),
            "-out",
            str(output_path),
            "-subset",
            "-silent",
        ]

    def details(self, hypotheses: list[str], references: list[list[str]], ids: list[str] | None = None) -> list[dict]:
        """The jar's output records ({"image_id", "scores": {category: {pr, re, f, tp, fp, fn, ...}}}) in
        the order of the input; one JVM call for the whole list."""
        if len(hypotheses) != len(references):
            raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
        ids = [str(i) for i in range(len(hypotheses))] if ids is None else [str(i) for i in ids]
        if len(set(ids)) != len(ids):
            raise ValueError("SPICE item ids must be distinct (the jar keys its output by them)")
        if not hypotheses:
            return []
        items = [{"image_id": i, "test": h, "refs": list(r)} for i, h, r in zip(ids, hypotheses, references)]
        with tempfile.TemporaryDirectory(prefix="vlnkit-spice-") as tmp:
            src, out = Path(tmp) / "in.json", Path(tmp) / "out.json"
            src.write_text(json.dumps(items, indent=2), encoding="utf-8")
            done = subprocess.run(
                self.command(src, out), cwd=spice_jar().parent, capture_output=True, text=True, errors="replace"
            )
            if done.returncode != 0 or not out.exists():
                tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
                raise RuntimeError(f"SPICE jar failed (exit {done.returncode}) on {len(items)} items: {tail}")
            results = json.loads(out.read_text(encoding="utf-8"))
        by_id = {str(r["image_id"]): r for r in results}
        absent = [i for i in ids if i not in by_id]
        if absent:
            raise RuntimeError(f"SPICE jar returned no score for {len(absent)} items (first: {absent[0]})")
        return [by_id[i] for i in ids]

    def score(
        self, hypotheses: list[str], references: list[list[str]], ids: list[str] | None = None
    ) -> tuple[float, list[float]]:
        """(the set's SPICE: the mean of the items' F, NaN if any is NaN, as the wrapper's np.mean; per-item F)."""
        scores = [_f_score(r["scores"]["All"]["f"]) for r in self.details(hypotheses, references, ids)]
        return (float(np.mean(np.array(scores))) if scores else math.nan), scores

    def close(self) -> None:
        if self._own_cache:
            shutil.rmtree(self.cache, ignore_errors=True)
        if self._slot_lock is not None:
            os.close(self._slot_lock)  # releases the slot's flock
            self._slot_lock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def lock_slot(root: Path) -> tuple[Path, int]:
    """(the first `root/slot-<k>` whose `slot-<k>.lock` this call could lock, the lock's file descriptor).

    An flock belongs to one open file: another process, or another worker thread of this one, that holds
    slot k makes this call take k + 1, and the kernel releases it when the holder closes it or dies, so a
    crashed worker leaves no stale lock. The lowest free slot is taken, so a rerun with as many workers
    finds the parses its predecessors left."""
    root.mkdir(parents=True, exist_ok=True)
    for k in itertools.count():
        fd = os.open(root / f"slot-{k}.lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        slot = root / f"slot-{k}"
        slot.mkdir(exist_ok=True)
        return slot, fd
    raise AssertionError("unreachable")
