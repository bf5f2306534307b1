"""The score job on REVERIE end to end: two agents with intervals, comparisons and breakdowns naming RGS and
RGSPL, its declared episode schema, the report's comparison page, and the one-line refusals."""

import json

import pyarrow.parquet as pq
import pytest

from pipelines import report, score

SCANS = 3  # the records of the first three scans of v1 val_seen


def run(out, *flags):
    return score.main(["--runner=DirectRunner", f"--output_dir={out}", *flags])


@pytest.fixture(scope="module")
def scored(tmp_path_factory, reverie_dir, connectivity_dir):
    tmp = tmp_path_factory.mktemp("reverie")
    records = json.loads((reverie_dir / "REVERIE_val_seen.json").read_text())
    scans = sorted({r["scan"] for r in records})[:SCANS]
    records = [r for r in records if r["scan"] in scans]
    dataset = tmp / "REVERIE_val_seen_subset.json"
    dataset.write_text(json.dumps(records))
    good, short = [], []
    for r in records:
        for k in range(len(r["instructions"])):
            iid = f"{r['path_id']}_{r['objId']}_{k}"
            good.append({"instr_id": iid, "trajectory": [[v, 0, 0] for v in r["path"]], "predObjId": r["objId"]})
            nested = [[v] for v in (r["path"][:-1] or r["path"])]  # DUET's layout, one hop short
            item = {"instr_id": iid, "trajectory": nested}
            if k:  # the first instruction of each record names no object
                item["pred_objid"] = r["objId"] + k % 2
            short.append(item)
    (tmp / "good.json").write_text(json.dumps(good))
    (tmp / "short.json").write_text(json.dumps(short))
    summary = run(
        tmp / "score",
        f"--predictions=good={tmp / 'good.json'}",
        f"--predictions=short={tmp / 'short.json'}",
        f"--dataset={dataset}",
        f"--connectivity_dir={connectivity_dir}",
        f"--visibility={reverie_dir / 'BBox'}",
        "--bootstrap=200",
    )
    return {"tmp": tmp, "out": tmp / "score", "records": records, "summary": summary, "dataset": dataset}


def test_two_agents_with_intervals_comparisons_and_breakdowns(scored):
    s, records = scored["summary"], scored["records"]
    episodes = sum(len(r["instructions"]) for r in records)
    good, short = s["agents"]["good"], s["agents"]["short"]
    assert good["count"] == short["count"] == episodes and s["dead_letters"] == 0
    assert good["metrics"]["sr"] == good["metrics"]["rgs"] == good["metrics"]["rgspl"] == 1.0
    assert short["metrics"]["sr"] < 1 and short["metrics"]["rgs"] < 0.5
    assert short["object_id_unusable"] == len(records) and good["object_id_unusable"] == 0
    assert s["options"]["task"] == "reverie" and s["options"]["evaluator"] == "official"
    rows = {r["agent"]: r for r in s["leaderboard"]}
    assert rows["good"]["rank"] == 1 and rows["good"]["rgs_ci"] == [1.0, 1.0]
    low, high = rows["short"]["rgs_ci"]
    assert low < rows["short"]["rgs"] < high
    compared = {c["metric"]: c for c in s["comparisons"]}
    assert {"rgs", "rgspl", "sr", "spl", "steps"} <= set(compared)
    assert compared["rgs"]["significant"] and compared["rgs"]["difference"] > 0.5
    breakdown = s["breakdowns"]["scan"]
    assert {r["group"] for r in breakdown} == {r["scan"] for r in records}
    assert all("rgs_ci" in r and "rgspl_ci" in r for r in breakdown)
    md = (scored["out"] / "leaderboard.md").read_text()
    assert "RGS (%)" in md and "RGSPL (%)" in md and "target object is visible" in md


def test_episode_rows_have_the_declared_schema(scored):
    files = sorted(scored["out"].glob("episodes-*.parquet"))
    table = pq.read_table(files)
    meta = table.schema.metadata
    assert meta[b"vlnkit.schema"] == b"reverie_episode_scores" and meta[b"vlnkit.schema_version"] == b"1"
    assert scored["summary"]["schema_version"] == "1"
    rows = {(r["agent"], r["instr_id"]): r for r in table.to_pylist()}
    r = scored["records"][0]
    first = rows[("short", f"{r['path_id']}_{r['objId']}_0")]
    assert first["predicted_object"] is None and first["target_object"] == r["objId"] and first["rgs"] == 0.0
    assert rows[("good", f"{r['path_id']}_{r['objId']}_0")]["predicted_object"] == r["objId"]


def test_the_comparison_page_names_the_grounding_metrics(scored, connectivity_dir):
    out = scored["tmp"] / "report"
    report.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={out}",
            "--draw=0",
            f"--inputs={scored['out']}",
            f"--connectivity_dir={connectivity_dir}",
            "--bootstrap=200",
        ]
    )
    page = (out / "comparison.html").read_text()
    assert "RGS" in page and "RGSPL" in page
    assert f"{scored['records'][0]['path_id']}_{scored['records'][0]['objId']}_0" in page


def test_a_test_split_and_a_mixed_run_are_refused_in_one_line(reverie_dir, r2r_dir, connectivity_dir, tmp_path, capsys):
    preds = tmp_path / "p.json"
    preds.write_text("[]")
    common = [f"--predictions={preds}", f"--connectivity_dir={connectivity_dir}"]
    with pytest.raises(SystemExit) as exc:
        run(tmp_path / "a", *common, f"--dataset={reverie_dir / 'REVERIE_test.json'}")
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "test-split records have no 'objId'" in err[0]
    with pytest.raises(SystemExit) as exc:
        run(
            tmp_path / "b",
            *common,
            f"--dataset={reverie_dir / 'REVERIE_val_seen.json'},{r2r_dir / 'R2R_val_seen.json'}",
        )
    assert exc.value.code == 2 and "mixes tasks" in capsys.readouterr().err


def test_the_visibility_files_are_an_input_of_the_run(scored, reverie_dir, connectivity_dir, tmp_path):
    """They decide success (the copies of the evaluator drift with them): the manifest records them as one
    input with a checksum over every file, and a changed file makes --skip_if_unchanged run again."""
    from vlnkit.provenance import set_digest

    scans = {r["scan"] for r in scored["records"]}
    bbox = tmp_path / "BBox"
    bbox.mkdir()
    for source in (reverie_dir / "BBox").iterdir():
        if source.name.split("_")[0] in scans:
            (bbox / source.name).write_bytes(source.read_bytes())
    flags = [
        f"--predictions=good={scored['tmp'] / 'good.json'}",
        f"--dataset={scored['dataset']}",
        f"--connectivity_dir={connectivity_dir}",
        f"--visibility={bbox}",
        "--bootstrap=0",
        "--skip_if_unchanged",
    ]
    first = run(tmp_path / "out", *flags)
    manifest = json.loads((tmp_path / "out" / "current" / "manifest.json").read_text())
    entry = next(i for i in manifest["inputs"] if i["path"] == f"{bbox}/*.json")
    assert entry["sha256"] == set_digest(f"{bbox}/*.json")
    assert entry["bytes"] == sum(p.stat().st_size for p in bbox.iterdir())
    assert not first.get("skipped") and run(tmp_path / "out", *flags).get("skipped")
    changed = next(iter(sorted(bbox.iterdir())))
    changed.write_bytes(changed.read_bytes() + b"\n")  # the same visibility, other bytes
    assert not run(tmp_path / "out", *flags).get("skipped")
