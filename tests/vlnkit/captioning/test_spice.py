"""SPICE 1.0 through the fetched jars against pycocoevalcap's own `Spice().compute_score` (tests/oracles/coco_spice.py).

Both run the same jar on the same input file, so "equal" is identical output. SPICE takes 30-60 s per
JVM call (CoreNLP's parser and NER models load first), so the set is small: the 12 AC-GG val_seen items
with the shortest text (48 sentences), and the two calls run side by side.
"""

from __future__ import annotations

import math
import threading

import pytest

from tests.oracles.coco_spice import reference_spice_once
from tests.vlnkit.captioning import shared_sets
from vlnkit.captioning.jars import INSTALL_COMMAND, RHINO_INSTALL, missing
from vlnkit.captioning.ptb import tokenize
from vlnkit.captioning.spice import Spice, SpiceUnavailable, lock_slot


def small_set(speaker_dir, n=12):
    """Real items, PTB-tokenized and space-joined as pycocoevalcap's COCOEvalCap hands them to Spice."""
    rows = shared_sets.shortest_acgg(speaker_dir, n)
    ids = [r["image_id"] for r in rows]
    return (
        ids,
        [" ".join(tokenize(r["test"])) for r in rows],
        [[" ".join(tokenize(x)) for x in r["refs"]] for r in rows],
    )


def test_spice_equals_the_reference_wrapper(speaker_dir, tmp_path, tmp_path_factory):
    ids, hyps, refs = small_set(speaker_dir)
    order = sorted(range(len(ids)), key=ids.__getitem__)  # the wrapper's order: sorted ids
    theirs = {}
    oracle = threading.Thread(
        target=lambda: theirs.update(result=reference_spice_once(tmp_path_factory, hyps, refs, ids))
    )
    oracle.start()
    with Spice(memory="4G", cache=tmp_path / "cache") as spice:
        mean, items = spice.score([hyps[i] for i in order], [refs[i] for i in order], [ids[i] for i in order])
    oracle.join()
    expected_mean, expected_items = theirs["result"]
    assert items == [expected_items[i] for i in order]  # identical floats, item by item
    assert mean == expected_mean
    assert len(set(items)) > 5 and all(0 <= x <= 1 for x in items)  # real scores, not a constant


def test_ids_are_checked_before_the_jar_runs():
    with Spice() as spice:
        with pytest.raises(ValueError, match="distinct"):
            spice.score(["a b", "c d"], [["a"], ["c"]], ["x", "x"])
        with pytest.raises(ValueError, match="2 hypotheses but 1"):
            spice.score(["a b", "c d"], [["a"]])
        mean, items = spice.score([], [])
        assert items == [] and math.isnan(mean)


def test_without_java_jars_or_rhino_the_refusal_is_one_line_naming_the_install(monkeypatch, tmp_path):
    monkeypatch.setenv("VLNKIT_CAPTION_JARS", str(tmp_path))
    reason = missing("spice")
    assert reason and "\n" not in reason and f"{INSTALL_COMMAND} --spice" in reason
    with pytest.raises(SpiceUnavailable, match="vlnkit.captioning.jars --spice"):
        Spice()
    monkeypatch.delenv("VLNKIT_CAPTION_JARS")
    monkeypatch.setenv("VLNKIT_RHINO_JAR", str(tmp_path / "js.jar"))
    reason = missing("spice")
    assert reason and "\n" not in reason and RHINO_INSTALL in reason and "Rhino" in reason
    assert missing("meteor") is None  # METEOR does not need Rhino
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "needs Java" in missing("spice")


def test_a_kept_cache_gives_each_holder_its_own_slot_and_frees_it_on_close(tmp_path):
    """Two workers never share an LMDB: a slot is flocked by its holder (another thread's or process's
    lock makes the next caller take the next slot) and the lowest free slot is reused after a close."""
    import os
    import subprocess
    import sys

    first, fd0 = lock_slot(tmp_path)
    second, fd1 = lock_slot(tmp_path)
    assert (first.name, second.name) == ("slot-0", "slot-1") and first.is_dir()
    os.close(fd0)
    again, fd2 = lock_slot(tmp_path)
    assert again == first  # reused: a rerun finds its predecessor's parses
    os.close(fd1)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys; from vlnkit.captioning.spice import lock_slot; lock_slot(__import__('pathlib').Path({str(tmp_path)!r})); print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"  # the child holds slot-1 (slot-0 is still ours)
        taken, fd3 = lock_slot(tmp_path)
        assert taken.name == "slot-2"
        os.close(fd3)
    finally:
        holder.communicate("", timeout=30)  # it exits: the kernel frees its lock
    freed, fd4 = lock_slot(tmp_path)
    assert freed.name == "slot-1"
    os.close(fd2), os.close(fd4)
