"""Malformed and adversarial inputs for every job: a clear error or dead-letter rows, never a traceback
without context, never a silent drop."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

HUGE = "Walk past the sofa and keep going. " * 3000  # ~100k characters
NON_ASCII = "Gehen Sie geradeaus zur Küche, dann links — 台所へ行って止まってください。"


def adversarial_dataset(data: Path, tmp: Path) -> dict:
    """Files mixing good records with every kind of bad one; returns paths and what must be reported."""
    real = json.loads((data / "r2r" / "R2R_val_seen.json").read_text())[:12]
    good = [dict(r) for r in real[:10]]
    good[0] = {**good[0], "instructions": [HUGE, *good[0]["instructions"][1:]]}
    good[1] = {**good[1], "instructions": [NON_ASCII, *good[1]["instructions"][1:]]}
    wrong_type = {**real[10], "path_id": "not-an-int"}
    unknown_scan = {**real[11], "path_id": 990_001, "scan": "NoSuchScan00"}
    mixed = tmp / "mixed.json"
    mixed.write_text(json.dumps([*good, wrong_type, unknown_scan], ensure_ascii=False), encoding="utf-8")
    truncated = tmp / "truncated.json"
    truncated.write_text(json.dumps(real[:3])[:500])
    empty = tmp / "empty.json"
    empty.write_text("")
    return {
        "dataset": f"{mixed},{truncated},{empty}",
        "truncated": str(truncated),
        "mixed": str(mixed),
        "good": good,
    }


def run(job: str, flags: list[str]) -> dict:
    # Adversarial inputs are mostly dead letters by design: these tests check that each is reported, so the
    # run must finish whatever their share (the verdict itself is tested in test_failure_semantics.py).
    return importlib.import_module(f"pipelines.{job}").main(
        ["--runner=DirectRunner", "--max_failure_fraction=1", *flags]
    )


def dead_letters(out: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(out.glob("dead_letter-*.jsonl")) for line in f.read_text().splitlines()]


JOBS = {
    # job: (flags, whether it needs graphs, so an unknown scan is a dead letter)
    "build_r4r": (lambda d, c: [f"--r2r_path={d}", f"--connectivity_dir={c}"], True),
    "perturb": (
        lambda d, c: [
            f"--dataset={d}",
            f"--connectivity_dir={c}",
            "--spacy_model=blank:en",
            "--methods=direction_swap,random_walk,path_reversal,viewpoint_swap",
        ],
        True,
    ),
    "build_compat": (
        lambda d, c: [
            f"--dataset={d}",
            f"--connectivity_dir={c}",
            "--spacy_model=blank:en",
            "--methods=direction_swap,random_walk,path_reversal,viewpoint_swap",
        ],
        True,
    ),
    "paraphrase": (lambda d, c: [f"--dataset={d}", "--translator=offline", "--languages=de"], False),
    "random_baseline": (
        lambda d, c: [f"--dataset={d}", f"--steps_from={d}", f"--connectivity_dir={c}", "--num_trajectories=2000"],
        True,
    ),
}


@pytest.mark.real_data
@pytest.mark.parametrize("job", sorted(JOBS))
def test_adversarial_dataset_inputs_are_dead_lettered_not_dropped(job, shared_data, tmp_path):
    files = adversarial_dataset(shared_data, tmp_path)
    make_flags, uses_graphs = JOBS[job]
    out = tmp_path / "out"
    summary = run(job, [*make_flags(files["dataset"], f"{shared_data}/connectivity"), f"--output_dir={out}"])
    assert (out / "_SUCCESS").exists()
    dead = dead_letters(out)
    assert summary["dead_letters"] == len(dead)
    reasons = [(d["source"], d["record"], d["reason"]) for d in dead]
    assert any(s == files["truncated"] and "invalid JSON" in r for s, _, r in reasons), reasons
    assert any(s == files["mixed"] and rec.startswith("#10") and "path_id" in r for s, rec, r in reasons), reasons
    if uses_graphs:
        assert any(s == files["mixed"] and rec.startswith("#11") and "NoSuchScan00" in r for s, rec, r in reasons)
    # The good records (huge and non-ASCII ones included) were not dropped: none is a dead letter...
    assert not any(s == files["mixed"] and rec.startswith(f"#{i} ") for s, rec, _ in reasons for i in range(10))
    # ...and the manifest lists every input file, the empty one too.
    manifest = json.loads((out / "manifest.json").read_text())
    listed = {i["path"] for i in manifest["inputs"]}
    assert set(files["dataset"].split(",")) <= listed


@pytest.mark.parametrize("job", sorted(JOBS))
def test_an_input_that_matches_nothing_is_one_clear_line(job, tmp_path, capsys):
    make_flags, _ = JOBS[job]
    with pytest.raises(SystemExit) as exc:
        run(job, [*make_flags(str(tmp_path / "nothing-*.json"), str(tmp_path)), f"--output_dir={tmp_path}/o"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[-1].startswith("error: ") and "Traceback" not in "\n".join(err)
    assert not (tmp_path / "o" / "_SUCCESS").exists()


@pytest.mark.real_data
def test_adversarial_predictions_are_dead_lettered_with_reasons(shared_data, tmp_path):
    files = adversarial_dataset(shared_data, tmp_path)
    good = files["good"]
    preds = [
        {"instr_id": f"{good[0]['path_id']}_0", "trajectory": [[v, 0.0, 0.0] for v in good[0]["path"]]},
        {"instr_id": f"{good[1]['path_id']}_0", "trajectory": good[1]["path"]},
        {"instr_id": f"{good[2]['path_id']}_0", "trajectory": [[good[2]["path"][0]], [], good[2]["path"][1:]]},
        {"instr_id": f"{good[2]['path_id']}_0", "trajectory": good[2]["path"]},  # duplicate
        {"instr_id": "999999_0", "trajectory": good[3]["path"]},  # unknown instr_id
        {"instr_id": f"{good[3]['path_id']}_0", "trajectory": []},  # empty
        {"instr_id": f"{good[4]['path_id']}_0", "trajectory": [good[4]["path"][0], "nowhere"]},  # unknown viewpoint
        {"instr_id": f"{good[5]['path_id']}_0", "trajectory": good[6]["path"]},  # starts elsewhere
        {"instr_id": f"{good[6]['path_id']}_0", "trajectory": 42},  # wrong type
        {"instr_id": f"{good[7]['path_id']}_0", "trajectory": ["ünïcødé-viewpoint"]},
    ]
    pred_file = tmp_path / "preds.json"
    pred_file.write_text(json.dumps(preds, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "out"
    summary = run(
        "score",
        [
            f"--predictions=agent={pred_file},{files['truncated']}",  # one agent, two files
            f"--dataset={files['dataset']}",
            f"--connectivity_dir={shared_data}/connectivity",
            f"--output_dir={out}",
        ],
    )
    assert (out / "_SUCCESS").exists()
    dead = dead_letters(out)
    assert summary["dead_letters"] == len(dead)
    assert summary["count"] == 3  # the three good predictions, in three layouts
    text = json.dumps(dead, ensure_ascii=False)
    for needle in ("duplicate", "999999_0", "empty", "nowhere", "start", "invalid JSON", "ünïcødé-viewpoint"):
        assert needle in text, needle
    assert len(dead) >= 8
