"""ReadFiles / ReadR2R / DedupeBy / ReadUniqueR2R: valid records out, everything else a dead letter."""

from __future__ import annotations

import json
import os

import apache_beam as beam
import numpy as np
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.deadletter import DEAD_LETTER
from transforms.read import DedupeBy, ReadFiles, ReadR2R, ReadUniqueR2R
from vlnkit.datasets.r2r import RecordError


def _record(path_id, scan="S", path=("a", "b"), **extra):
    return {"path_id": path_id, "scan": scan, "path": list(path), "heading": 0.5, "instructions": ["go"], **extra}


def _write(tmp_path, name, obj) -> str:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(p)


def _ids(records):
    return sorted(r["path_id"] for r in records)


def _where(dead):
    return sorted((d["stage"], d["source"].rsplit("/", 1)[-1], d["record"]) for d in dead)


def test_read_r2r_valid_records_and_dead_letters(tmp_path):
    good = _write(tmp_path, "a.json", [_record(1), {"scan": "S"}, _record(2, distance=7)])
    with TestPipeline() as p:
        out = p | ReadR2R([good])
        assert_that(out["records"] | beam.combiners.ToList() | beam.Map(_ids), equal_to([[1, 2]]), label="ids")
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: (d["stage"], d["source"], d["record"].split()[0])),
            equal_to([("read", good, "#1")]),
            label="dead",
        )


def test_records_carry_source_index_and_a_total_order(tmp_path):
    a = _write(tmp_path, "a.json", [_record(10), _record(11)])
    b = _write(tmp_path, "b.jsonl", json.dumps(_record(20)) + "\n")
    with TestPipeline() as p:
        out = p | ReadR2R([a, b])
        got = out["records"] | beam.Map(lambda r: (r["path_id"], r["_source"], r["_index"], r["_order"]))
        assert_that(got, equal_to([(10, a, 0, (0, 0)), (11, a, 1, (0, 1)), (20, b, 0, (1, 0))]))


def test_require_distance_dead_letters_records_without_it(tmp_path):
    f = _write(tmp_path, "a.json", [_record(1), _record(2, distance=3.5)])
    with TestPipeline() as p:
        out = p | ReadR2R([f], require_distance=True)
        assert_that(out["records"] | beam.Map(lambda r: r["path_id"]), equal_to([2]), label="ids")
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: d["reason"]), equal_to(["missing field 'distance'"]), label="r"
        )


def test_an_unreadable_file_is_one_dead_letter_naming_it(tmp_path):
    missing = str(tmp_path / "gone.json")
    broken = _write(tmp_path, "broken.json", "[{not json")
    with TestPipeline() as p:
        out = p | ReadR2R([missing, broken])
        assert_that(out["records"], equal_to([]), label="none")
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: (d["source"], d["record"], bool(d["reason"]))),
            equal_to([(missing, "", True), (broken, "", True)]),
            label="dead",
        )


def test_read_files_with_a_custom_parser(tmp_path):
    f = _write(tmp_path, "lines.txt", "x\ny\n\nz\n")

    def parse(data, path):
        for i, line in enumerate(data.decode().splitlines()):
            yield {"text": line, "_index": i} if line else RecordError(path, f"#{i}", "empty line")

    with TestPipeline() as p:
        out = p | ReadFiles([f], parse, reshuffle=False)
        assert_that(out["records"] | beam.Map(lambda r: r["text"]), equal_to(["x", "y", "z"]), label="ok")
        assert_that(out[DEAD_LETTER] | beam.Map(lambda d: d["record"]), equal_to(["#2"]), label="dead")


def test_dedupe_keeps_the_first_by_order_whatever_arrives_first():
    records = [
        {"k": 1, "_order": (1, 0), "_source": "b.json", "_index": 0},
        {"k": 1, "_order": (0, 5), "_source": "a.json", "_index": 5},
        {"k": 2, "_order": (0, 1), "_source": "a.json", "_index": 1},
    ]
    with TestPipeline() as p:
        out = p | beam.Create(records) | DedupeBy(lambda r: r["k"], "key")
        assert_that(
            out["records"] | beam.Map(lambda r: (r["k"], r["_source"])),
            equal_to([(1, "a.json"), (2, "a.json")]),
            label="kept",
        )
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: (d["stage"], d["source"], d["record"], d["reason"])),
            equal_to([("dedupe", "b.json", "#0", "duplicate key 1 (kept a.json #5)")]),
            label="dead",
        )


def test_read_unique_r2r_gathers_read_and_duplicate_dead_letters(tmp_path):
    a = _write(tmp_path, "a.json", [_record(1), _record(2), {"path_id": 3}])
    b = _write(tmp_path, "b.json", [_record(2), _record(4)])
    with TestPipeline() as p:
        out = p | ReadUniqueR2R([a, b])
        assert_that(
            out["records"] | beam.Map(lambda r: (r["path_id"], r["_source"])),
            equal_to([(1, a), (2, a), (4, b)]),
            label="ok",
        )
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: (d["stage"], d["source"])),
            equal_to([("read", a), ("dedupe", b)]),
            label="dead",
        )


def _expected_dedupe(records):
    """The rule, worked out directly: per key the record with the smallest `_order` is kept."""
    first = {}
    for r in sorted(records, key=lambda r: r["_order"]):
        first.setdefault(r["k"], r)
    kept = sorted((r["k"], r["_source"], r["_index"]) for r in first.values())
    dead = sorted(
        (
            r["_source"],
            f"#{r['_index']}",
            f"duplicate key {r['k']!r} (kept {first[r['k']]['_source']} #{first[r['k']]['_index']})",
        )
        for r in records
        if first[r["k"]] is not r
    )
    return kept, dead


def test_batched_dedupe_keeps_and_refuses_exactly_what_the_per_record_dedupe_does():
    # 60 records over 3 files, keys repeating within and across files, arriving out of order.
    records = [{"k": (i * 7) % 23, "_order": (i % 3, i), "_source": f"f{i % 3}.json", "_index": i} for i in range(60)][
        ::-1
    ]
    kept, dead = _expected_dedupe(records)
    assert len(kept) == 23 and len(dead) == 37
    with TestPipeline() as p:
        one_by_one = p | "Records" >> beam.Create(records) | "PerRecord" >> DedupeBy(lambda r: r["k"], "key")
        runs = {"per record": (one_by_one["records"], one_by_one[DEAD_LETTER])}
        for buckets, lists in ((1, 1), (4, 3), (16, 7)):
            out = (
                p
                | f"Lists{buckets}" >> beam.Create([records[i::lists] for i in range(lists)])
                | f"Batched{buckets}" >> DedupeBy(lambda r: r["k"], "key", batched=True, buckets=buckets)
            )
            flat = out["records"] | f"Flat{buckets}" >> beam.FlatMap(lambda batch: batch)
            runs[f"{buckets} buckets"] = (flat, out[DEAD_LETTER])
        for name, (kept_records, dead_letters) in runs.items():
            assert_that(
                kept_records | f"Kept {name}" >> beam.Map(lambda r: (r["k"], r["_source"], r["_index"])),
                equal_to(kept),
                label=f"kept, {name}",
            )
            assert_that(
                dead_letters | f"Dead {name}" >> beam.Map(lambda d: (d["source"], d["record"], d["reason"])),
                equal_to(dead),
                label=f"dead, {name}",
            )


def test_batched_dedupe_gives_each_bucket_its_kept_records_in_order():
    records = [{"k": k, "_order": (0, -k), "_source": "a", "_index": k} for k in range(50)]
    with TestPipeline() as p:
        out = p | beam.Create([records]) | DedupeBy(lambda r: r["k"], "key", batched=True, buckets=5)
        orders = out["records"] | beam.Map(lambda batch: [r["_order"] for r in batch])
        assert_that(orders | beam.Map(lambda o: o == sorted(o)), equal_to([True] * 5))


def test_dedupe_is_by_canonical_value_not_by_type():
    """5, 5.0 and numpy.int64(5) are one key (as in a dict), in every bucket count; "5" is another key."""
    keys = [np.int64(5), 5.0, 5, "5", np.float32(7.0), 7]
    records = [{"k": k, "_order": (0, i), "_source": "a.json", "_index": i} for i, k in enumerate(keys)]
    with TestPipeline() as p:
        runs = {"per record": p | "Records" >> beam.Create(records) | "PerRecord" >> DedupeBy(lambda r: r["k"], "key")}
        for buckets in (1, 4, 97):
            out = (
                p
                | f"Lists{buckets}" >> beam.Create([records[:3], records[3:]])
                | f"Batched{buckets}" >> DedupeBy(lambda r: r["k"], "key", batched=True, buckets=buckets)
            )
            runs[f"{buckets} buckets"] = {
                "records": out["records"] | f"Flat{buckets}" >> beam.FlatMap(lambda batch: batch),
                DEAD_LETTER: out[DEAD_LETTER],
            }
        for name, out in runs.items():
            assert_that(
                out["records"] | f"Kept {name}" >> beam.Map(lambda r: r["_index"]),
                equal_to([0, 3, 4]),
                label=f"kept {name}",
            )
            assert_that(
                out[DEAD_LETTER] | f"Dead {name}" >> beam.Map(lambda d: d["record"]),
                equal_to(["#1", "#2", "#5"]),
                label=f"dead {name}",
            )


def test_stable_bucket_does_not_depend_on_the_process_hash_seed():
    import subprocess
    import sys

    code = (
        "from vlnkit.hashing import stable_bucket; print([stable_bucket(k, buckets=97) for k in ('4567_0', 4567, 'x')])"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed}
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(seen) == 1 and seen.pop().startswith("[")


def test_batched_readers_hand_over_lists_of_the_same_records(tmp_path):
    a = _write(tmp_path, "a.json", [_record(i) for i in range(10)] + [{"path_id": 99}])
    b = _write(tmp_path, "b.json", [_record(3), _record(20)])
    with TestPipeline() as p:
        single = p | "Single" >> ReadUniqueR2R([a, b])
        lists = p | "Lists" >> ReadUniqueR2R([a, b], batched=True)
        flat = lists["records"] | beam.FlatMap(lambda batch: batch)
        key = lambda r: (r["path_id"], r["_source"], r["_index"])  # noqa: E731
        expected = [(i, a, i) for i in range(10)] + [(20, b, 1)]
        assert_that(single["records"] | "K1" >> beam.Map(key), equal_to(expected), label="single")
        assert_that(flat | "K2" >> beam.Map(key), equal_to(expected), label="lists")
        assert_that(
            lists[DEAD_LETTER] | beam.Map(lambda d: (d["stage"], d["record"].split()[0])),
            equal_to([("read", "#10"), ("dedupe", "#0")]),
            label="dead",
        )


def test_an_empty_path_is_a_dead_letter_for_every_job_that_reads_records(tmp_path):
    """ReadUniqueR2R (paraphrase, perturb, probes) and ReadR2R (build_r4r) refuse it alike."""
    f = _write(tmp_path, "a.json", [_record(1), _record(2, path=(), distance=1.0), _record(3, distance=1.0)])
    want = [("read", "#1 (path_id=2)", "'path' has 0 viewpoints, at least 1 required")]
    with TestPipeline() as p:
        for name, reader in (("unique", ReadUniqueR2R([f])), ("r4r", ReadR2R([f], require_distance=True))):
            out = p | name >> reader
            assert_that(
                out[DEAD_LETTER] | f"{name}Dead" >> beam.Map(lambda d: (d["stage"], d["record"], d["reason"])),
                equal_to(want if name == "unique" else [*want, ("read", "#0 (path_id=1)", "missing field 'distance'")]),
                label=f"{name}_dead",
            )
