"""REVERIE through the score job's core (read, join, score by the task's rule), held to a separate plain
implementation of the two evaluators' rules (tests/oracles/reverie_rules.py) on crafted agents."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pyarrow as pa
import pytest

from tests.oracles import reverie_rules
from vlnkit.datasets.columns import Vocabulary
from vlnkit.datasets.line_scan import scan_records, scan_submissions
from vlnkit.datasets.reverie import (
    NO_OBJECT,
    predicted_object,
    read_visibility,
    record_reason,
    split_reverie_ids,
    visibility_entries,
)
from vlnkit.evaluation.score_summary import agent_key
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.navigation.graph import GraphStore
from vlnkit.scoring.join import join_bucket
from vlnkit.scoring.reading import in_buckets, read_predictions, read_references
from vlnkit.scoring.registry import task_for
from vlnkit.scoring.reverie import REVERIE, ReverieOptions
from vlnkit.scoring.scans import ScanTables
from vlnkit.scoring.score import score_bucket

METRICS = ("sr", "osr", "spl", "rgs", "rgspl", "pl", "steps")
CONTEXTS: dict = {}


@pytest.fixture(scope="module")
def reverie(reverie_dir):
    return reverie_dir


@pytest.fixture(scope="module")
def world(connectivity_dir):
    vocab = Vocabulary.load(connectivity_dir)
    graphs = GraphStore(connectivity_dir)
    return vocab, graphs, ScanTables(graphs)


def score_files(dataset, predictions, world, options, tmp_path) -> pa.Table:
    """The episode rows the score job's core gives (one bucket, one agent)."""
    return scored_bucket(dataset, predictions, world, options).table


def scored_bucket(dataset, predictions, world, options):
    """What the score job's core gives for one bucket of one agent ("a"): rows, totals, dead letters."""
    vocab, graphs, scans = world
    pieces = list(read_references(str(dataset), 0, vocab, instruction_set=options.instruction_set))
    pieces += list(read_predictions(str(predictions), "a", 0, vocab, parts=3))
    errors = [p for p in pieces if not hasattr(p, "paths")]
    assert not errors, errors[:3]
    batches = [b for _, b in in_buckets(pieces, 1)]
    join = join_bucket(batches, {"a": [str(predictions)]}, [str(dataset)], vocab, graphs, REVERIE.format_ids)
    if options not in CONTEXTS:  # loaded once per worker in the job
        CONTEXTS[options] = REVERIE.context(options, vocab, graphs)
    context = CONTEXTS[options]
    return score_bucket(join, scans, ScoringConfig(), task=REVERIE, context=context)


def oracle_agent(records):
    """The reference paths with the right object ids."""
    return [
        {
            "instr_id": f"{r['path_id']}_{r['objId']}_{k}",
            "trajectory": [[v, 0, 0] for v in r["path"]],
            "predObjId": r["objId"],
        }
        for r in records
        for k in range(len(r["instructions"]))
    ]


def agents(records, connectivity_dir, seed=0):
    """Crafted agents: {name: predictions}, on every instruction of `records`."""
    rng = random.Random(seed)
    neighbours = {}
    out = {k: [] for k in ("oracle", "wrong_object", "one_hop_short", "revisits", "duet_nested", "random", "bad_ids")}
    for r in records:
        if r["scan"] not in neighbours:
            neighbours[r["scan"]] = reverie_rules.graph(connectivity_dir, r["scan"])
        g = neighbours[r["scan"]]
        for k in range(len(r["instructions"])):
            iid, path, obj = f"{r['path_id']}_{r['objId']}_{k}", r["path"], r["objId"]
            step = lambda vps: [[v, 0.5, 0.0] for v in vps]  # noqa: E731
            out["oracle"].append({"instr_id": iid, "trajectory": step(path), "predObjId": obj})
            out["wrong_object"].append({"instr_id": iid, "trajectory": step(path), "predObjId": obj + 1})
            out["one_hop_short"].append({"instr_id": iid, "trajectory": step(path[:-1] or path), "predObjId": obj})
            back = path + ([path[-2], path[-1]] if len(path) > 1 else [])
            out["revisits"].append({"instr_id": iid, "trajectory": step(back), "predObjId": str(obj)})
            nested = [[path[0]]] + [[v] for v in path[1:-1]] + ([[path[-1], path[-1]]] if len(path) > 1 else [])
            out["duet_nested"].append({"instr_id": iid, "trajectory": nested, "pred_objid": obj})
            walk = [path[0]]
            for _ in range(rng.randint(0, 6)):
                walk.append(rng.choice(sorted(g[walk[-1]])))
            out["random"].append({"instr_id": iid, "trajectory": step(walk), "predObjId": rng.choice([obj, obj + 2])})
            bad = rng.choice([None, 1.0 * obj, True, [obj], "0" + str(obj), "x"])
            item = {"instr_id": iid, "trajectory": step(walk)}
            if bad is not None:
                item["predObjId"] = bad
            out["bad_ids"].append(item)
    return out


@pytest.mark.parametrize("split", ["val_seen", "val_unseen"])
def test_oracle_agent_scores_sr_and_rgs_100(reverie, world, connectivity_dir, tmp_path, split):
    records = json.load(open(reverie / f"REVERIE_{split}.json"))
    preds = oracle_agent(records)
    path = tmp_path / "oracle.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in preds))
    table = score_files(reverie / f"REVERIE_{split}.json", path, world, ReverieOptions(str(reverie / "BBox")), tmp_path)
    assert table.num_rows == sum(len(r["instructions"]) for r in records)
    for m in ("sr", "osr", "rgs", "ndtw"):
        assert np.asarray(table[m]).min() == 1.0, m
    # Official SPL takes the shortest distance start-goal: the few reference paths longer than that (val_unseen)
    # score below 1 even when walked exactly; DUET takes the reference path's length, so they score 1.
    spl = np.asarray(table["spl"])
    assert (spl == 1.0).mean() > 0.97 and (spl == np.asarray(table["rgspl"])).all()
    duet = score_files(
        reverie / f"REVERIE_{split}.json", path, world, ReverieOptions(str(reverie / "BBox"), "duet"), tmp_path
    )
    assert np.asarray(duet["spl"]).min() == 1.0


@pytest.mark.parametrize("evaluator", ["official", "duet"])
@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_every_metric_matches_the_plain_rules(reverie, world, connectivity_dir, tmp_path, evaluator, layout):
    records = json.load(open(reverie / "REVERIE_val_seen.json"))
    scans = sorted({r["scan"] for r in records})[:2]
    records = [r for r in records if r["scan"] in scans]
    dataset = tmp_path / "subset.json"
    dataset.write_text(json.dumps(records))
    visible = reverie_rules.visible_objects(str(reverie / "BBox"), set(scans))
    dist = reverie_rules.Distances(connectivity_dir)
    options = ReverieOptions(str(reverie / "BBox"), evaluator)
    for name, preds in agents(records, connectivity_dir).items():
        path = tmp_path / f"{name}.{layout}"
        text = json.dumps(preds) if layout == "json" else "".join(json.dumps(p) + "\n" for p in preds)
        path.write_text(text)
        rows = score_files(dataset, path, world, options, tmp_path).to_pylist()
        want = reverie_rules.score(records, preds, visible, dist, evaluator)
        assert len(rows) == len(want), name
        for row in rows:
            w = want[row["instr_id"]]
            for m in METRICS:
                assert row[m] == pytest.approx(w[m], rel=1e-12, abs=1e-12), (name, row["instr_id"], m)
        means = {m: np.mean([r[m] for r in rows]) for m in ("sr", "rgs")}
        if name == "oracle":
            assert means == {"sr": 1.0, "rgs": 1.0}
        if name == "wrong_object":
            assert means == {"sr": 1.0, "rgs": 0.0}
        if name == "bad_ids":
            assert means["rgs"] == 0.0 and all(r["predicted_object"] is None for r in rows)
        if name == "one_hop_short":
            assert means["sr"] < 1  # but the target may be visible a hop early


def test_targets_no_viewpoint_of_their_scan_sees_are_counted_and_never_succeed(reverie, world, tmp_path):
    """`targets_never_visible` counts the episodes whose target no viewpoint of its own scan sees: an object
    id seen only in another scan counts, as does one seen nowhere; the others are seen where their paths end."""
    records = json.load(open(reverie / "REVERIE_val_seen.json"))
    two = sorted({r["scan"] for r in records})[:2]
    records = [r for r in records if r["scan"] in two]
    seen = reverie_rules.visible_objects(str(reverie / "BBox"), set(two))
    by_scan = {s: {int(o) for name, objects in seen.items() if name.startswith(s + "_") for o in objects} for s in two}
    elsewhere = sorted(by_scan[two[1]] - by_scan[two[0]])
    assert elsewhere, "the two scans see the same object ids"
    moved, paths = {}, set()  # record index -> its new target
    for i, r in enumerate(records):
        if r["scan"] == two[0] and r["path_id"] not in paths and len(moved) < 6:
            paths.add(r["path_id"])  # one record a path: the new (path_id, objId) keys stay unique
            moved[i] = elsewhere[0] if len(moved) % 2 else 10**6
    records = [{**r, "objId": moved.get(i, r["objId"])} for i, r in enumerate(records)]
    dataset, path = tmp_path / "moved.json", tmp_path / "oracle.jsonl"
    dataset.write_text(json.dumps(records))
    path.write_text("".join(json.dumps(p) + "\n" for p in oracle_agent(records)))
    scored = scored_bucket(dataset, path, world, ReverieOptions(str(reverie / "BBox")))
    never = {
        f"{r['path_id']}_{r['objId']}_{k}"
        for i, r in enumerate(records)
        if i in moved
        for k in range(len(r["instructions"]))
    }
    rows = {row["instr_id"]: row["sr"] for row in scored.table.to_pylist()}
    assert scored.totals[agent_key("a", "targets_never_visible")] == len(never) > 0
    assert {i for i, sr in rows.items() if sr == 0.0} == never


def test_object_ids_and_instr_ids_are_read_as_the_evaluators_compare_them():
    assert [predicted_object({"predObjId": v}) for v in (66, "66", 66.0, True, None, "066", [66])] == [
        66,
        66,
        None,
        None,
        None,
        None,
        None,
    ]
    ok, key, k = split_reverie_ids(["1_2_3", "1_2", "a_b_c", "-1_2_3", f"{2**31}_0_0"])
    assert ok.tolist() == [True, False, False, False, False]
    assert (
        record_reason({"scan": "s", "path_id": 1, "objId": 2, "path": ["a"], "heading": 0, "instructions": ["x"]})
        is None
    )
    assert record_reason(
        {"scan": "s", "path_id": 1, "objId": "2", "path": ["a"], "heading": 0, "instructions": ["x"]}
    ) == ("'objId' must be an integer, got '2'")
    assert NO_OBJECT < 0


def test_a_test_split_or_a_mix_is_refused_in_one_line():
    with pytest.raises(ValueError, match="test-split records have no 'objId'"):
        task_for(["reverie_test"])
    with pytest.raises(ValueError, match="mixes tasks"):
        task_for(["reverie", "r2r"])


@pytest.mark.parametrize("instruction_set", ["instructions", "instructions_l"])
def test_records_and_predictions_read_alike_by_the_scanners_and_the_general_reader(
    reverie, world, tmp_path, instruction_set
):
    """JSON Lines go through the compiled scanners; a JSON list (and a block with one odd line) through msgspec
    and the general reader: the same batches either way."""
    vocab = world[0]
    records = json.load(open(reverie / "REVERIE_val_seen.json"))[:60]
    records[3] = {k: v for k, v in records[3].items() if k != "instructions_l"}  # valid, without the variants
    lines, whole = tmp_path / "r.jsonl", tmp_path / "r.json"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records))
    whole.write_text(json.dumps(records))

    def refs(path):
        got = list(read_references(str(path), 0, vocab, instruction_set=instruction_set))
        batches = [b for b in got if hasattr(b, "paths")]
        errors = sorted(e.reason for e in got if not hasattr(e, "paths") and hasattr(e, "reason"))
        b = batches[0].concat(batches)
        return b.path_id.tolist(), b.instructions.tolist(), b.paths.values.tolist(), b.extras, errors

    mode = 2 if instruction_set == "instructions_l" else 1
    assert (scan_records(lines.read_bytes(), vocab, mode) is None) == (mode == 2)  # a record lacks instructions_l
    a, b = refs(lines), refs(whole)
    assert a[:3] == b[:3] and a[4] == b[4] and a[3]["target_object"].tolist() == b[3]["target_object"].tolist()
    assert (len(a[0]) == 59) == (instruction_set == "instructions_l")  # the record without them is refused
    preds = [
        {"instr_id": f"{r['path_id']}_{r['objId']}_0", "trajectory": [[v, 0, 0] for v in r["path"]], "predObjId": i}
        for i, r in enumerate(records)
    ]
    plines, pwhole = tmp_path / "p.jsonl", tmp_path / "p.json"
    plines.write_text("".join(json.dumps(p) + "\n" for p in preds))
    pwhole.write_text(json.dumps(preds))
    assert scan_submissions(plines.read_bytes(), vocab, 3) is not None
    got = [[b for b in read_predictions(str(p), "a", 0, vocab, parts=3)] for p in (plines, pwhole)]
    for x, y in zip(*got):
        assert x.path_id.tolist() == y.path_id.tolist() and x.paths.values.tolist() == y.paths.values.tolist()
        assert x.extras["predicted_object"].tolist() == y.extras["predicted_object"].tolist() == list(range(60))


def test_duets_merged_file_gives_the_visibility_of_the_release_folder(reverie, world, tmp_path):
    """DUET's BBoxes.json ({"<scan>_<viewpoint>": {objId: {...}}}) made from some of the release's files reads
    as those files do; an object with an empty visible_pos is seen from nowhere in either layout."""
    vocab = world[0]
    folder = tmp_path / "BBox"
    folder.mkdir()
    merged = {}
    for name in sorted(os.listdir(reverie / "BBox"))[:300]:
        data = json.loads((reverie / "BBox" / name).read_text())
        (folder / name).write_text(json.dumps(data))
        merged[name[: -len(".json")]] = next(iter(data.values()))
    (tmp_path / "BBoxes.json").write_text(json.dumps(merged))
    a, b = read_visibility(str(folder), vocab), read_visibility(str(tmp_path / "BBoxes.json"), vocab)
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist() and len(a[0]) > 100
    want = {
        (name.split("_", 1)[0], name.split("_", 1)[1], int(o))
        for name, objects in merged.items()
        for o, info in objects.items()
        if info["visible_pos"]
    }
    assert set(visibility_entries(str(tmp_path / "BBoxes.json"))) == want
