"""End-to-end runs of `python -m pipelines.build_crafty` (in-process, DirectRunner) on the shared data."""

import json
import os

import pyarrow.parquet as pq
import pytest

from pipelines import build_crafty
from vlnkit.crafty.appraiser import Appraiser
from vlnkit.crafty.guide import Guide
from vlnkit.crafty.objects import ObjectSources
from vlnkit.crafty.observer import Observer, ScanModel
from vlnkit.crafty.schemas import R2R_JSON_KEYS
from vlnkit.navigation import NavGraph

SCANS = ("SN83YJsR3w2", "s8pcmisQ38h", "17DRP5sb8fy")  # the val_seen scans with fewest paths (1, 2, 2)


@pytest.fixture(scope="module")
def inputs(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("crafty_inputs")
    records = json.loads((shared_data / "r2r" / "R2R_val_seen.json").read_text())
    small = [r for r in records if r["scan"] in SCANS]
    broken = dict(small[0], path_id=999999, path=[small[0]["path"][0], small[0]["path"][-1]])  # not an edge
    dataset = root / "paths.json"
    dataset.write_text(json.dumps([*small, broken]))
    # objects without one scan, and one scan whose only object REVERIE never names: no landmark at all
    objpos = json.loads((shared_data / "crafty" / "objpos.json").read_text())
    kept = {s: objpos[s] for s in SCANS if s != "17DRP5sb8fy"}
    kept["SN83YJsR3w2"] = {"999999": [0.0, 0.0, 0.0]}
    partial = root / "objects"
    partial.mkdir()
    (partial / "objpos.json").write_text(json.dumps(kept))
    os.symlink(shared_data / "crafty" / "category_mapping.tsv", partial / "category_mapping.tsv")
    return {
        "dataset": str(dataset),
        "records": small,
        "connectivity_dir": str(shared_data / "connectivity"),
        "objects_dir": str(shared_data / "crafty"),
        "partial_objects": str(partial),
        "bbox_dir": str(shared_data / "reverie" / "v1" / "BBox"),
        "rxr": str(shared_data / "rxr_sample" / "rxr_sample_guide.jsonl.gz"),
    }


def run(out, i, *flags, objects=None):
    return build_crafty.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={out}",
            f"--connectivity_dir={i['connectivity_dir']}",
            f"--objects_dir={objects or i['objects_dir']}",
            f"--bbox_dir={i['bbox_dir']}",
            *flags,
        ]
    )


@pytest.fixture(scope="module")
def done(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("crafty") / "out"
    summary = run(out, inputs, f"--dataset={inputs['dataset']}", "--seed=4")
    return out, summary


def test_outputs_and_counts(done, inputs):
    out, summary = done
    assert summary["records_read"] == 6 and summary["paths"] == 5 and summary["instructions"] == 15
    assert summary["dead_letters"] == 1 and summary["fallback_instructions"] == 0
    dead = [json.loads(line) for line in next(out.glob("dead_letter-*.jsonl")).read_text().splitlines()]
    assert dead[0]["stage"] == "graph" and "path_id=999999" in dead[0]["record"] and "not an edge" in dead[0]["reason"]
    agent = json.loads((out / "instructions.json").read_text())
    assert [r["path_id"] for r in agent] == [r["path_id"] for r in inputs["records"]]  # input order
    for r, source in zip(agent, inputs["records"]):
        assert sorted(r) == sorted(R2R_JSON_KEYS) and len(r["instructions"]) == 3
        assert r["path"] == source["path"] and r["distance"] == source["distance"]
    rows = pq.read_table(sorted(out.glob("instructions-*.parquet"))).to_pylist()
    assert len(rows) == 15
    for row in rows:
        assert len(row["moves"]) == len(row["landmarks"]) == len(row["categories"]) == 2 * len(row["path"]) - 1
        assert row["moves"][0] == "STOP" and row["words"] == len(row["instruction"].split())
        assert row["instruction"] in next(r for r in agent if r["path_id"] == row["path_id"])["instructions"]
    appraiser = json.loads((out / "appraiser.json").read_text())
    assert appraiser["scans"] == 3 and summary["appraiser"]["categories"] == len(appraiser["idf"]) > 50
    assert (out / "README.md").exists() and (out / "_SUCCESS").exists()


def test_job_words_are_the_cores_words(done, inputs):
    """The runner changes nothing: the core, called path by path with the published Appraiser, says the same."""
    out, _ = done
    appraiser = json.loads((out / "appraiser.json").read_text())
    guide = Guide(Observer(Appraiser(appraiser["idf"], appraiser["panoramas"])))
    sources = ObjectSources(inputs["objects_dir"], inputs["bbox_dir"])
    agent = {r["path_id"]: r["instructions"] for r in json.loads((out / "instructions.json").read_text())}
    for record in inputs["records"]:
        graph = NavGraph.load(inputs["connectivity_dir"], record["scan"])
        model = ScanModel.build(graph, sources.scan(graph), guide.observer.params)
        said = [
            guide.describe(
                model, record["path"], record["heading"], key=(record["scan"], record["path_id"]), draw=k, seed=4
            ).instruction
            for k in range(3)
        ]
        assert said == agent[record["path_id"]]


def test_missing_scan_and_no_objects(inputs, tmp_path):
    summary = run(
        tmp_path / "out",
        inputs,
        f"--dataset={inputs['dataset']}",
        "--max_failure_fraction=1",
        objects=inputs["partial_objects"],
    )
    dead = [json.loads(line) for line in next((tmp_path / "out").glob("dead_letter-*.jsonl")).read_text().splitlines()]
    missing = [d for d in dead if d["stage"] == "objects"]
    assert len(missing) == 3  # 17DRP5sb8fy's two paths and the broken one
    assert all("'17DRP5sb8fy' has no objects in objpos.json" in d["reason"] for d in missing)
    appraised = [d for d in dead if d["stage"] == "appraiser"]  # the Appraiser could not read the scan either
    assert [d["record"] for d in appraised] == ["scan 17DRP5sb8fy"]
    assert summary["fallback_instructions"] == 3  # SN83YJsR3w2's one path, 3 instructions, no landmark
    rows = pq.read_table(sorted((tmp_path / "out").glob("instructions-*.parquet"))).to_pylist()
    fallback = [r for r in rows if r["fallback"]]
    assert {r["scan"] for r in fallback} == {"SN83YJsR3w2"} and all(set(r["landmarks"]) == {-1} for r in fallback)


def test_rxr_guide_paths(inputs, tmp_path):
    summary = run(tmp_path / "out", inputs, f"--dataset={inputs['rxr']}", "--num_instructions=2")
    assert summary["paths"] == 1 and summary["instructions"] == 2 and summary["dead_letters"] == 0


def test_bad_flags_stop_before_running(inputs, tmp_path):
    with pytest.raises(SystemExit) as exc:
        run(tmp_path / "out", inputs, f"--dataset={inputs['dataset']}", "--num_instructions=0")
    assert exc.value.code == 2
