"""The last step of a run, without Beam: a hand-made version folder judged, recorded and published (or
kept as failed), and a step run again (a runner's retry) leaving a published version as it is."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.internal import cloudpickle_pickler

from vlnkit.io import integrity, layout
from vlnkit.io.lock import LOCK
from vlnkit.provenance import code_identity
from vlnkit.runs.ending import Ending, expected_outputs, finish, read_ending
from vlnkit.runs.publication import Publication


def _run(root, rows: int, counted: int, read: int = 3) -> Ending:
    root.mkdir()
    publication = Publication(str(root))
    publication.begin()
    out = publication.staging([str(root.parent / "extra.json")])
    pq.write_table(pa.table({"x": list(range(rows))}), out.join("paths-00000-of-00001.parquet"))
    open(out.join("dead_letter-00000-of-00001.jsonl"), "w").close()
    (root.parent / "in.json").write_text("[]")
    with open(out.join("summary.json"), "w") as f:
        json.dump({"records_read": read, "dead_letters": 0, "joined": counted}, f)
    with open(out.staged(str(root.parent / "extra.json")), "w") as f:
        f.write("{}")
    publication.lock.stop_heartbeat()  # the launcher hands over: the step below releases the lock
    ending = Ending(
        job="demo",
        publication=publication,
        prefixes=["paths", "dead_letter"],
        staged={str(root.parent / "extra.json"): out.staged(str(root.parent / "extra.json"))},
        max_failure_fraction=0.5,
        settings={"seed": 0},
        options={},
        inputs=[(str(root.parent / "in.json"), 2)],
        code=code_identity(),
        declared=lambda summary: {"paths": summary["joined"], str(root.parent / "extra.json"): None},
    )
    return cloudpickle_pickler.loads(
        cloudpickle_pickler.dumps(ending)
    )  # as a worker gets it (Beam pickles with cloudpickle)


def test_a_good_run_is_published_and_a_retried_step_leaves_it_as_it_is(tmp_path):
    root = tmp_path / "D"
    ending = _run(root, rows=4, counted=4)
    assert expected_outputs(ending, {"joined": 4, "dead_letters": 0}) == {
        "dead_letter-*-of-*": 0,
        "summary.json": None,
        "paths-*-of-*": 4,
        "extra.json": None,
        "README.md": None,  # the dataset card, written by the step itself
    }
    assert finish(ending) is None
    assert layout.current_version(str(root)) == ending.publication.version and not (root / LOCK).exists()
    assert integrity.verify(str(root)) == []
    record = read_ending(ending.folder)
    assert record["status"] == "complete" and record["inputs"][0]["sha256"].startswith("4f53cda18c2baa0c")
    assert record["code"] == code_identity() and "counters" not in record
    before = (root / "current" / "manifest.json").read_bytes()
    assert finish(ending) is None  # the same step again: nothing changes
    assert (root / "current" / "manifest.json").read_bytes() == before
    assert (tmp_path / "extra.json").read_text() == "{}"


def test_a_short_output_fails_the_run_and_keeps_its_folder(tmp_path):
    root = tmp_path / "D"
    ending = _run(root, rows=3, counted=4)
    verdict = finish(ending)
    assert verdict.startswith("an output does not hold what the run counted") and "holds 3 row(s)" in verdict
    assert layout.current_version(str(root)) is None and not (root / LOCK).exists()
    record = json.loads((root / "failed" / "manifest.json").read_text())
    assert record["status"] == "failed" and record["failure"] == verdict and record["output_problems"]


def test_the_last_step_waits_for_the_launchers_checksums_and_reads_the_inputs_itself_when_it_has_none(tmp_path):
    import threading
    import time
    from concurrent.futures import Future

    from vlnkit.runs.ending import hand_digests, input_digests

    ending = _run(tmp_path / "D", rows=1, counted=1)
    ending.digests_file = str(tmp_path / "handed.json")
    done: Future = Future()
    hand_digests(done, ending.digests_file)  # before the pipeline runs: the file exists, locked
    got = []
    step = threading.Thread(target=lambda: got.append(input_digests(ending)))
    step.start()
    time.sleep(0.3)
    assert step.is_alive() and not got  # the step waits on the lock, without polling
    done.set_result([{"path": "x", "bytes": 1, "sha256": "from the launcher"}])
    step.join(10)
    assert got == [[{"path": "x", "bytes": 1, "sha256": "from the launcher"}]]
    assert not (tmp_path / "handed.json").exists()
    failed: Future = Future()
    hand_digests(failed, ending.digests_file)
    failed.set_exception(OSError("unreadable"))  # the step then reads the inputs itself
    assert input_digests(ending)[0]["sha256"] == "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"


def test_a_launcher_that_dies_releases_the_step(tmp_path):
    import subprocess
    import sys
    import threading
    import time

    from vlnkit.runs.ending import input_digests

    ending = _run(tmp_path / "D", rows=1, counted=1)
    ending.digests_file = str(tmp_path / "handed.json")
    launcher = (
        "import os, sys; from concurrent.futures import Future; from vlnkit.runs.ending import hand_digests; "
        f"f = Future(); hand_digests(f, {ending.digests_file!r}); print('locked', flush=True); sys.stdin.read(); os._exit(9)"
    )
    proc = subprocess.Popen([sys.executable, "-c", launcher], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    got = []
    step = threading.Thread(target=lambda: got.append(input_digests(ending)))
    step.start()
    time.sleep(0.3)
    assert step.is_alive()
    proc.stdin.close()  # the launcher dies without its checksums: its lock goes with it
    assert proc.wait(30) == 9
    step.join(10)
    assert got[0][0]["sha256"] == "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
