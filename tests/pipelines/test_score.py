"""End-to-end runs of `python -m pipelines.score` (in-process, DirectRunner)."""

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import score
from tests.conftest import ROOT
from vlnkit.datasets.r2r import RecordError
from vlnkit.datasets.trajectories import parse_predictions
from vlnkit.evaluation.metrics import METRICS, score_batch
from vlnkit.navigation.graph import GraphStore
from vlnkit.navigation.synthetic import write_environment


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("score_env")
    r2r_path, conn_dir = write_environment(str(tmp), scans=2, paths_per_scan=5, seed=2, instructions=2)
    return tmp, r2r_path, conn_dir, json.loads(open(r2r_path).read())


def run(out, *flags):
    return score.main(["--runner=DirectRunner", f"--output_dir={out}", *flags])


def episodes(out):
    return pq.read_table(sorted(out.glob("episodes-*-of-*.parquet"))).to_pylist()


def test_synthetic_end_to_end_with_options_and_parquet_inputs(env, tmp_path):
    _, r2r_path, conn_dir, records = env
    # Predictions: each reference path walked with every step repeated (turning in place), as Parquet.
    preds = [
        {"instr_id": f"{r['path_id']}_{k}", "path": [v for v in r["path"] for _ in range(2)]}
        for r in records
        for k in range(2)
        if (r["path_id"], k) != (0, 0)
    ]
    pred_path = tmp_path / "preds.parquet"
    pq.write_table(pa.Table.from_pylist(preds), pred_path)
    common = [f"--predictions={pred_path}", f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}"]

    out = tmp_path / "collapsed"
    summary = run(out, *common)
    assert (out / "_SUCCESS").exists() and summary["count"] == len(preds) == len(episodes(out))
    assert summary["metrics"]["sr"] == summary["metrics"]["ndtw"] == summary["metrics"]["cls"] == 1.0
    assert summary["missing_predictions"] == 1 and summary["dead_letters"] == 0
    assert (out / score.MISSING_FILE).read_text() == "0_0\n"
    assert summary["options"] == {"success_distance": 3.0, "keep_repeats": False, "spl_reference": "shortest"}
    assert summary["repeats_collapsed"] == sum(len(p["path"]) // 2 for p in preds)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["summary"] == summary and len(manifest["inputs"]) == 2 + 2  # predictions, dataset, 2 graphs

    out2 = tmp_path / "kept"
    kept = run(out2, *common, "--keep_repeats", "--spl_reference=path", "--success_distance=2.5")
    assert kept["options"] == {"success_distance": 2.5, "keep_repeats": True, "spl_reference": "path"}
    assert kept["metrics"]["ndtw"] == 1.0  # repeats align at zero cost with the same node ...
    assert kept["metrics"]["sed"] < 1.0  # ... but add (v, v) edges
    rows = {r["instr_id"]: r for r in episodes(out2)}
    store = GraphStore(conn_dir)
    for p in preds[:5]:
        r = records[int(p["instr_id"].split("_")[0])]
        g = store.get(r["scan"])
        want = score_batch(
            g.distances, [g.indices(r["path"])], [g.indices(p["path"])], 2.5, keep_repeats=True, spl_reference="path"
        )
        for m in METRICS:
            assert rows[p["instr_id"]][m] == pytest.approx(float(want[m][0]), abs=1e-12)


def test_structural_errors_are_one_clear_line(env, tmp_path):
    _, r2r_path, conn_dir, _ = env
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.score",
            "--runner=DirectRunner",
            f"--predictions={tmp_path}/none*.json",
            f"--dataset={r2r_path}",
            f"--connectivity_dir={conn_dir}",
            f"--output_dir={tmp_path}/o",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        proc.returncode == 2
        and proc.stderr.strip().startswith("error: score: --predictions:")
        and "matches no file" in proc.stderr
    )
    with pytest.raises(SystemExit):
        run(
            tmp_path / "o",
            f"--predictions={r2r_path}",
            f"--dataset={r2r_path}",
            f"--connectivity_dir={conn_dir}",
            "--spl_reference=nope",
        )


# ----------------------------------------------------------------------------- real agent outputs
AGENTS = "agent_outputs"


def split_of(name: str) -> str:
    return "val_seen" if "val_seen" in name else "val_unseen"


@pytest.mark.real_data
def test_every_real_agent_output_scores_with_the_library(shared_data, connectivity_dir):
    """All 17 files: every viewpoint known, every start right (except path 4554 of the older val_seen)."""
    store = GraphStore(connectivity_dir)
    datasets = {s: json.loads((shared_data / "r2r" / f"R2R_{s}.json").read_text()) for s in ("val_seen", "val_unseen")}
    refs = {
        s: {f"{r['path_id']}_{k}": r for r in d for k in range(len(r["instructions"]))} for s, d in datasets.items()
    }
    for f in sorted((shared_data / AGENTS).glob("*/*.json")):
        preds = [p for p in parse_predictions(f.read_bytes(), str(f)) if not isinstance(p, RecordError)]
        by_scan = {}
        for p in preds:
            r = refs[split_of(f.name)][p["instr_id"]]
            if p["path"][0] != r["path"][0]:
                assert p["instr_id"].startswith("4554_") and "val_seen" in f.name, (f, p["instr_id"])
                continue
            g = store.get(r["scan"])
            by_scan.setdefault(r["scan"], []).append((g.indices(r["path"]), g.indices(p["path"])))
        for scan, pairs in by_scan.items():
            s = score_batch(store.get(scan).distances, [a for a, _ in pairs], [b for _, b in pairs])
            assert all(np.isfinite(s[m]).all() for m in METRICS), (f, scan)
            if "shortest_agent" in f.name:
                assert (s["sr"] == 1.0).all()
            if "stop_agent" in f.name:
                assert (s["pl"] == 0.0).all()


@pytest.mark.real_data
@pytest.mark.parametrize(
    "relpath, dead",
    [
        ("rszia+rpl2024-final-group9/val_unseen_shortest_agent.json", 0),
        ("rszia+rpl2024-final-group9/val_seen_stop_agent.json", 3),
        ("Malak-Mansour+Language_In_RobNav/custom-gpt-test_100__submit_R2R_val_unseen_instr.json", 0),
    ],
)
def test_real_agent_outputs_end_to_end(tmp_path, shared_data, connectivity_dir, relpath, dead):
    f = shared_data / AGENTS / relpath
    dataset = shared_data / "r2r" / f"R2R_{split_of(f.name)}.json"
    out = tmp_path / "out"
    summary = run(out, f"--predictions={f}", f"--dataset={dataset}", f"--connectivity_dir={connectivity_dir}")
    assert summary["dead_letters"] == dead and (out / "_SUCCESS").exists()
    assert summary["count"] + summary["missing_predictions"] + dead == summary["reference_episodes"]
    assert all(v is not None for v in summary["metrics"].values())
    if dead:
        reasons = [json.loads(line) for line in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
        assert {d["stage"] for d in reasons} == {"start"} and all("4554_" in d["record"] for d in reasons)
    if "shortest" in relpath:
        assert summary["metrics"]["sr"] == 1.0 and summary["count"] == 2349
    if "stop" in relpath:
        assert summary["metrics"]["pl"] == 0.0 and summary["metrics"]["sr"] == 0.0
    if "Malak" in relpath:
        assert summary["count"] == 100 and summary["missing_predictions"] == 2349 - 100
