"""Hostile REVERIE and CVDN inputs, as a new user would give them from the docs alone: each ends in one line
(exit 2 before the run, or 3 for a run that cannot be trusted), never a traceback; a CVDN prediction
without its id names the field."""

import json

import pytest

from pipelines import score

SCANS = 2


def run(out, *flags):
    return score.main(["--runner=DirectRunner", f"--output_dir={out}", "--bootstrap=0", *flags])


@pytest.fixture
def reverie(tmp_path, reverie_dir):
    """A REVERIE subset (two scans), a walker that follows the reference paths, and a copy of the visibility
    files of those scans."""
    records = json.loads((reverie_dir / "REVERIE_val_seen.json").read_text())
    scans = sorted({r["scan"] for r in records})[:SCANS]
    records = [r for r in records if r["scan"] in scans]
    dataset = tmp_path / "REVERIE_val_seen_subset.json"
    dataset.write_text(json.dumps([{k: v for k, v in r.items() if k != "instructions_l"} for r in records]))
    walker = [
        {"instr_id": f"{r['path_id']}_{r['objId']}_{k}", "trajectory": [[v, 0, 0] for v in r["path"]]}
        for r in records
        for k in range(len(r["instructions"]))
    ]
    (tmp_path / "walker.json").write_text(json.dumps(walker))
    bbox = tmp_path / "BBox"
    bbox.mkdir()
    for source in (reverie_dir / "BBox").iterdir():
        if source.name.split("_")[0] in scans:
            (bbox / source.name).write_bytes(source.read_bytes())
    return tmp_path, dataset, bbox


def _refused_run(reverie, connectivity_dir, *flags) -> int:
    """The exit code of a score run of the REVERIE subset's walker that does not end well."""
    tmp, dataset, _ = reverie
    walker = f"--predictions={tmp / 'walker.json'}"
    with pytest.raises(SystemExit) as exc:
        run(tmp / "out", f"--dataset={dataset}", walker, f"--connectivity_dir={connectivity_dir}", *flags)
    return exc.value.code


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_a_cut_visibility_file_fails_the_run_in_one_line_naming_it(reverie, connectivity_dir, capsys):
    tmp, dataset, bbox = reverie
    cut = sorted(bbox.iterdir())[0]
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    code = _refused_run(reverie, connectivity_dir, f"--visibility={bbox}")
    line = _one_line(capsys)
    assert code == 3 and str(cut) in line and "not a REVERIE BBox file" in line, line
    assert not (tmp / "out" / "current").exists()


def test_a_visibility_file_that_cannot_be_read_fails_the_run_in_one_line_naming_it(
    reverie, connectivity_dir, capsys, monkeypatch
):
    """A file of the set that is there but cannot be opened (no permission, simulated: the suite runs as root)
    is never left out: the run fails in one line naming it."""
    import os

    tmp, dataset, bbox = reverie
    locked = sorted(bbox.iterdir())[0]
    real_open = os.open

    def refusing_open(path, flags, *args, **kwargs):
        if os.path.basename(os.fsdecode(path)) == locked.name:
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    code = _refused_run(reverie, connectivity_dir, f"--visibility={bbox}")
    line = _one_line(capsys)
    assert code == 3 and f"cannot read {locked}: Permission denied" in line, line
    assert not (tmp / "out" / "current").exists()


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--visibility={empty}", "no visibility files found"),
        ("--instruction_set=instructions_l", "has no 'instructions_l' in its records"),
    ],
)
def test_reverie_inputs_that_cannot_be_scored_are_refused_before_the_run(
    reverie, connectivity_dir, capsys, flag, message
):
    tmp, dataset, bbox = reverie
    (tmp / "empty").mkdir()
    code = _refused_run(reverie, connectivity_dir, f"--visibility={bbox}", flag.format(empty=tmp / "empty"))
    line = _one_line(capsys)
    assert code == 2 and message in line, line
    assert not (tmp / "out").exists() or not any((tmp / "out").iterdir())


def test_a_cvdn_prediction_without_its_id_names_the_field(shared_data, connectivity_dir, tmp_path):
    dataset = shared_data / "cvdn" / "val_seen.json"
    instances = json.loads(dataset.read_text())[:20]
    (tmp_path / "cvdn.json").write_text(json.dumps(instances))
    predictions = [{"inst_idx": r["inst_idx"], "trajectory": [[v, 0, 0] for v in r["planner_path"]]} for r in instances]
    del predictions[0]["inst_idx"]
    (tmp_path / "p.json").write_text(json.dumps(predictions))
    summary = run(
        tmp_path / "out",
        f"--dataset={tmp_path / 'cvdn.json'}",
        f"--predictions={tmp_path / 'p.json'}",
        f"--connectivity_dir={connectivity_dir}",
    )
    assert summary["dead_letters"] == 1
    dead = [json.loads(line) for p in (tmp_path / "out").glob("current/dead_letter-*.jsonl") for line in p.open()]
    assert [d["reason"] for d in dead] == [
        "no episode id: none of 'instr_id', 'instruction_id' (RxR), 'inst_idx' (CVDN)"
    ]


def test_gzipped_json_lines_predictions_cut_short_are_refused_whole(r2r_dir, connectivity_dir, tmp_path, capsys):
    """As docs/failure_semantics.md says: one dead letter for the file, none of its lines scored."""
    import gzip

    records = json.loads((r2r_dir / "R2R_val_seen.json").read_text())[:40]
    (tmp_path / "r2r.json").write_text(json.dumps(records))
    lines = "".join(
        json.dumps({"instr_id": f"{r['path_id']}_{k}", "trajectory": r["path"]}) + "\n"
        for r in records
        for k in range(len(r["instructions"]))
    )
    whole = gzip.compress(lines.encode())
    (tmp_path / "p.jsonl.gz").write_bytes(whole[: len(whole) * 2 // 3])
    with pytest.raises(SystemExit) as exc:
        run(
            tmp_path / "out",
            f"--dataset={tmp_path / 'r2r.json'}",
            f"--predictions={tmp_path / 'p.jsonl.gz'}",
            f"--connectivity_dir={connectivity_dir}",
        )
    assert exc.value.code == 3 and "Traceback" not in capsys.readouterr().err
    manifest = json.loads(next((tmp_path / "out").glob("versions/*/manifest.json")).read_text())
    assert manifest["summary"]["predictions_read"] == 0 and manifest["summary"]["dead_letters"] == 1
