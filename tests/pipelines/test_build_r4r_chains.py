"""`python -m pipelines.build_r4r --num_paths=K`: R6R / R8R-style chains end to end (DirectRunner)."""

import json
from collections import defaultdict

import pyarrow.parquet as pq
import pytest

from pipelines import build_r4r
from tests.oracles.r4r_chains import Distances, chain_problems
from tests.oracles.r4r_generator import load_graph
from vlnkit.datasets.r4r import JoinConfig, join_paths
from vlnkit.fixtures.grid import write_environment
from vlnkit.navigation.graph import GraphStore


def run(tmp_path, *flags):
    out = tmp_path / "out"
    return out, build_r4r.main(["--runner=DirectRunner", f"--output_dir={out}", *flags])


@pytest.mark.real_data
def test_val_seen_chains_of_three_are_valid_complete_and_in_both_layouts(tmp_path, r2r_dir, connectivity_dir):
    r2r = r2r_dir / "R2R_val_seen.json"
    json_out = tmp_path / "R6R_val_seen.json"
    out, summary = run(
        tmp_path,
        f"--dataset={r2r}",
        f"--connectivity_dir={connectivity_dir}",
        "--num_paths=3",
        f"--json_output={json_out}",
        "--landmark_layout",
    )
    # val_seen has at most 6 chains of three per scan, under the default cap of 50: every one is kept.
    assert summary["num_paths"] == 3 and summary["max_paths_per_scan"] == 50
    assert summary["join"]["chains_valid"] == summary["dataset"]["paths"] == 32
    assert summary["join"]["chains_capped"] == 0 and summary["dataset"]["instructions"] == 864

    records = json.loads(r2r.read_text())
    sources = {r["path_id"]: r for r in records}
    chains = json.loads(json_out.read_text())
    distances = {}
    for joined in chains:
        scan = joined["scan"]
        distances.setdefault(scan, Distances(load_graph(connectivity_dir, scan)))
        assert chain_problems(joined, sources, distances[scan], 3.0) == []
        assert len(joined["path_ids"]) == 3 and joined["first_path_id"] == joined["path_ids"][0]
    # The R4R generator's order: scans by first appearance, then the sources' positions in the file.
    position = {r["path_id"]: i for i, r in enumerate(records)}
    scan_rank = {}
    for r in records:
        scan_rank.setdefault(r["scan"], len(scan_rank))
    keys = [(scan_rank[j["scan"]], [position[p] for p in j["path_ids"]]) for j in chains]
    assert keys == sorted(keys)

    rows = pq.read_table(sorted(out.glob("paths-*.parquet"))).to_pylist()
    assert sorted(r["path_ids"] for r in rows) == sorted(j["path_ids"] for j in chains)

    landmark = json.loads((tmp_path / "R6R_val_seen_landmark.json").read_text())
    assert len(landmark) == 864
    by_path = defaultdict(list)
    for item in landmark:
        by_path[item["path_id"]].append(item)
    for joined in chains:
        items = by_path[joined["path_id"]]
        assert ["".join(i["instructions"]) for i in items] == joined["instructions"]
        assert [i["instr_id"] for i in items] == [f"{joined['path_id']}_{k}" for k in range(len(items))]
        merged = items[0]["path"][0] + [v for sub in items[0]["path"][1:] for v in sub[1:]]
        assert merged == joined["path"]


def test_a_cap_on_r4r_keeps_a_seeded_subset_of_the_full_join(tmp_path):
    r2r_path, conn_dir = write_environment(str(tmp_path / "env"), scans=2, paths_per_scan=30, seed=2)
    json_out = tmp_path / "capped.json"
    _, summary = run(
        tmp_path,
        f"--dataset={r2r_path}",
        f"--connectivity_dir={conn_dir}",
        "--max_paths_per_scan=5",
        f"--json_output={json_out}",
        "--seed=3",
    )
    records = json.loads(open(r2r_path).read())
    store = GraphStore(conn_dir)
    full = {}
    for scan in {r["scan"] for r in records}:
        joined, _ = join_paths(store.get(scan), [r for r in records if r["scan"] == scan], JoinConfig())
        full[scan] = {(j["first_path_id"], j["second_path_id"]): j for j in joined}
    capped = json.loads(json_out.read_text())
    assert summary["join"]["chains_valid"] == sum(len(f) for f in full.values()) > 10
    assert len(capped) == summary["dataset"]["paths"] == 10  # 5 from each scan
    for record in capped:
        reference = full[record["scan"]][(record["first_path_id"], record["second_path_id"])]
        assert record == {k: reference[k] for k in record}
        assert "path_ids" not in record  # R4R's JSON keys stay the R4R generator's


def test_landmark_layout_needs_a_json_output(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, "--landmark_layout", "--num_paths=3")
    assert exc.value.code == 2 and "--landmark_layout needs --json_output" in capsys.readouterr().err
