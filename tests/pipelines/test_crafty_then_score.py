"""build_crafty's `instructions.json` scored by score_instructions, the two jobs run in sequence (issue 49, point 3).

The R2R-format file a generator writes for agent code must be read as the system's instructions (three per
path, ids `<path_id>_<k>`), scored against the dataset's human references, with every instruction scored and
none dead-lettered. Before the `r2r` layout, the reader took its `instructions` for references and found no
text, so every record went to the dead letters.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipelines import build_crafty, score_instructions
from tests.oracles.coco_caption import reference_scores
from vlnkit.captioning.layouts import detect, parse
from vlnkit.captioning.ptb import tokenize

SCANS = ("SN83YJsR3w2", "s8pcmisQ38h", "17DRP5sb8fy")  # the val_seen scans with fewest paths (1, 2, 2)


def test_r2r_layout_reads_every_instruction_without_references():
    text = json.dumps([{"path_id": 7, "scan": "s", "instructions": ["go left.", "stop."], "path": ["a", "b"]}])
    assert detect(json.loads(text)) == "r2r"
    got = parse(text, "crafty")
    assert [(g.instr_id, g.path_id, g.text, g.references, g.scan) for g in got] == [
        ("7_0", "7", "go left.", None, "s"),
        ("7_1", "7", "stop.", None, "s"),
    ]
    # a list record with its own text keeps its `instructions` as references (the `list` layout)
    carried = [{"path_id": 7, "instruction": "go.", "instructions": ["walk.", "stop."]}]
    assert detect(carried) == "list" and parse(json.dumps(carried), "x")[0].references == ("walk.", "stop.")


@pytest.fixture(scope="module")
def composed(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("crafty_score")
    records = json.loads((shared_data / "r2r" / "R2R_val_seen.json").read_text())
    small = [r for r in records if r["scan"] in SCANS]
    dataset = root / "paths.json"
    dataset.write_text(json.dumps(small))
    crafty = root / "crafty"
    build_crafty.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={crafty}",
            f"--dataset={dataset}",
            f"--connectivity_dir={shared_data / 'connectivity'}",
            f"--objects_dir={shared_data / 'crafty'}",
            f"--bbox_dir={shared_data / 'reverie' / 'v1' / 'BBox'}",
            "--seed=0",
        ]
    )
    scores = root / "scores"
    summary = score_instructions.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={scores}",
            f"--predictions=crafty={crafty / 'instructions.json'}",
            f"--references={dataset}",
            "--bootstrap=50",
        ]
    )
    rows = pq.read_table(sorted(str(p) for p in scores.glob("instructions-*.parquet"))).to_pylist()
    generated = json.loads((crafty / "instructions.json").read_text())
    return small, generated, summary, rows


def test_every_crafty_instruction_is_scored_against_the_human_references(composed):
    small, generated, summary, rows = composed
    assert summary["dead_letters"] == 0 and summary["instructions"] == 3 * len(small) == len(rows)
    assert sorted(summary["by_system"]) == ["crafty"]
    refs = {str(r["path_id"]): r["instructions"] for r in small}
    texts = {f"{r['path_id']}_{k}": t for r in generated for k, t in enumerate(r["instructions"])}
    ids = sorted(texts)
    mine = {r["instr_id"]: r for r in rows}
    assert sorted(mine) == ids
    # per item and corpus, what pycocoevalcap gives for the Crafty text against the path's human references
    theirs = reference_scores(
        [tokenize(texts[i]) for i in ids], [[tokenize(x) for x in refs[i.split("_")[0]]] for i in ids]
    )
    for metric in ("bleu_4", "rouge_l", "cider_d"):
        assert np.max(np.abs(np.array([mine[i][metric] for i in ids]) - theirs[metric][1])) <= 1e-9, metric
        assert abs(summary["by_system"]["crafty"][metric]["score"] - theirs[metric][0]) <= 1e-9, metric
