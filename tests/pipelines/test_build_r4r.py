"""End-to-end runs of `python -m pipelines.build_r4r` (in-process, DirectRunner)."""

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from pipelines import build_r4r
from tests.conftest import ROOT
from tests.oracles.r4r_generator import generate

# Counts the R4R generator's rule gives on ../shared/data (its README).
R4R_RULE_COUNTS = {"train": (25_921, 233_532), "val_seen": (115, 1_035), "val_unseen": (5_026, 45_234)}


def run(tmp_path, *flags):
    out = tmp_path / "out"
    summary = build_r4r.main(["--runner=DirectRunner", f"--output_dir={out}", *flags])
    return out, summary


def parquet_rows(out):
    return pq.read_table(sorted(out.glob("paths-*-of-*.parquet"))).to_pylist()


def test_default_run_uses_the_built_in_synthetic_environment(tmp_path):
    out, summary = run(tmp_path)
    assert (out / "_SUCCESS").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["job"] == "build_r4r" and manifest["inputs"][0]["path"].endswith("R2R_synthetic.json")
    rows = parquet_rows(out)
    assert summary["dataset"]["paths"] == len(rows) > 0
    assert sum(o["rows"] for o in manifest["outputs"] if o["path"].endswith(".parquet")) == len(rows)
    assert summary["records_read"] == 120 and summary["dead_letters"] == 0
    assert summary["join"]["pairs_considered"] == 3 * 40 * 40
    assert (out / "dead_letter-00000-of-00001.jsonl").read_text() == ""


def test_command_line_entry_point_runs(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.build_r4r",
            "--runner=DirectRunner",
            f"--output_dir={tmp_path}/o",
            "--synthetic_paths_per_scan=8",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "paths generated" in proc.stdout and (tmp_path / "o" / "_SUCCESS").exists()


def key(r):
    return r["first_path_id"], r["second_path_id"]


@pytest.mark.real_data
@pytest.mark.parametrize("split", ["val_seen", "val_unseen", "train"])
def test_real_splits_give_exactly_the_r4r_generators_joins(tmp_path, split, r2r_dir, connectivity_dir):
    r2r = r2r_dir / f"R2R_{split}.json"
    json_out = tmp_path / f"R4R_{split}.json"
    out, summary = run(
        tmp_path, f"--r2r_path={r2r}", f"--connectivity_dir={connectivity_dir}", f"--json_output={json_out}"
    )
    paths, instructions = R4R_RULE_COUNTS[split]
    assert summary["dataset"]["paths"] == paths and summary["dataset"]["instructions"] == instructions
    assert summary["dead_letters"] == 0 and (out / "_SUCCESS").exists()

    expected = generate(json.loads(r2r.read_text()), connectivity_dir)
    ours = json.loads(json_out.read_text())
    # Same pairs, in the R4R generator's order.
    assert [key(r) for r in ours] == [key(r) for r in expected]
    for mine, ref in zip(ours, expected):
        assert mine["path"] == ref["path"]
        assert mine["shortest_path"] == ref["shortest_path"]
        assert mine["instructions"] == ref["instructions"]
        assert mine["heading"] == ref["heading"] and mine["scan"] == ref["scan"]
        assert mine["distance"] == pytest.approx(ref["distance"], abs=1e-9)
        assert mine["shortest_path_distance"] == pytest.approx(ref["shortest_path_distance"], abs=1e-9)
        assert mine["path_id"] == mine["first_path_id"] * 1_000_000 + mine["second_path_id"]
    rows = parquet_rows(out)
    assert sorted(key(r) for r in rows) == sorted(key(r) for r in ours)
    assert set(ours[0]) == {
        "distance",
        "first_path_id",
        "heading",
        "instructions",
        "path",
        "path_id",
        "scan",
        "second_path_id",
        "shortest_path",
        "shortest_path_distance",
    }


@pytest.mark.real_data
def test_val_seen_matches_the_independently_released_r4r_file(tmp_path, shared_data, connectivity_dir):
    json_out = tmp_path / "R4R_val_seen.json"
    run(
        tmp_path,
        f"--r2r_path={shared_data}/r2r/R2R_val_seen.json",
        f"--connectivity_dir={connectivity_dir}",
        f"--json_output={json_out}",
    )
    released = {key(r): r for r in json.loads((shared_data / "r4r_published" / "R4R_val_seen.json").read_text())}
    ours = {key(r): r for r in json.loads(json_out.read_text())}
    assert set(ours) == set(released) and len(ours) == 115
    changed_texts = 0
    for k, ref in released.items():
        assert ours[k]["path"] == ref["path"]
        assert ours[k]["shortest_path"] == ref["shortest_path"]
        assert ours[k]["distance"] == pytest.approx(ref["distance"], abs=1e-9)
        assert ours[k]["shortest_path_distance"] == pytest.approx(ref["shortest_path_distance"], abs=1e-9)
        changed_texts += ours[k]["instructions"] != ref["instructions"]
    assert changed_texts == 4  # R2R instruction texts were revised in 4 paths since that file was made


@pytest.mark.real_data
def test_config_profile_and_heading_threshold(tmp_path, shared_data):
    cfg = tmp_path / "profile.yaml"
    cfg.write_text(
        f"r2r_path: {shared_data}/r2r/R2R_val_seen.json\n"
        f"connectivity_dir: {shared_data}/connectivity\n"
        "heading_threshold: 0.5\n"
    )
    _, summary = run(tmp_path, f"--config={cfg}")
    assert summary["heading_threshold"] == 0.5
    j = summary["join"]
    assert j["filtered_heading"] > 0
    assert summary["dataset"]["paths"] == 115 - j["filtered_heading"]
    # An explicit flag overrides the profile.
    _, summary = run(tmp_path, f"--config={cfg}", "--heading_threshold=4.0")
    assert summary["join"]["filtered_heading"] == 0 and summary["dataset"]["paths"] == 115


def test_missing_graphs_and_bad_records_go_to_dead_letters(tmp_path):
    from vlnkit.fixtures.grid import write_environment

    r2r_path, conn_dir = write_environment(str(tmp_path / "env"), scans=2, paths_per_scan=6, seed=5)
    records = json.loads(open(r2r_path).read())
    (tmp_path / "env" / "connectivity" / "synthetic_grid_01_connectivity.json").unlink()
    records.append({"scan": "synthetic_grid_00", "path_id": "x"})
    (tmp_path / "in.json").write_text(json.dumps(records))
    out, summary = run(
        tmp_path, f"--r2r_path={tmp_path}/in.json", f"--connectivity_dir={conn_dir}", "--max_failure_fraction=0.7"
    )
    assert summary["records_read"] == 12 and summary["dead_letters"] == 7
    dead = [json.loads(line) for line in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    assert sum("synthetic_grid_01_connectivity.json: cannot read" in d["reason"] for d in dead) == 6
    assert any(d["record"].startswith("#12") and "missing field 'path'" in d["reason"] for d in dead)
    assert (out / "_SUCCESS").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--r2r_path=/nonexistent/*.json", "--connectivity_dir=/tmp"], "matches no file"),
        (["--r2r_path=/nonexistent.json"], "must be given together"),
        (["--distance_threshold=-1"], "distance_threshold must be"),
    ],
)
def test_structural_problems_stop_the_job_with_one_clear_line(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, *flags)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out" / "_SUCCESS").exists()


def test_empty_connectivity_dir_is_structural(tmp_path, capsys):
    (tmp_path / "in.json").write_text("[]")
    (tmp_path / "conn").mkdir()
    with pytest.raises(SystemExit):
        run(tmp_path, f"--r2r_path={tmp_path}/in.json", f"--connectivity_dir={tmp_path}/conn")
    assert "no *_connectivity.json files" in capsys.readouterr().err


def test_empty_input_file_is_a_failed_run_not_a_complete_one(tmp_path, capsys):
    """Nothing read is never success: no _SUCCESS, exit 3, and the manifest says why."""
    from vlnkit.fixtures.grid import write_environment

    _, conn_dir = write_environment(str(tmp_path / "env"), scans=1, paths_per_scan=1)
    (tmp_path / "in.json").write_text("[]")
    with pytest.raises(SystemExit) as exc:
        run(
            tmp_path,
            f"--r2r_path={tmp_path}/in.json",
            f"--connectivity_dir={conn_dir}",
            f"--json_output={tmp_path}/r4r.json",
        )
    assert exc.value.code == 3
    assert "nothing was read" in capsys.readouterr().err
    out = tmp_path / "out"
    assert not (out / "_SUCCESS").exists()
    manifest = json.loads((out / "failed" / "manifest.json").read_text())  # the failed run, kept for inspection
    assert manifest["status"] == "failed" and "nothing was read" in manifest["failure"]
