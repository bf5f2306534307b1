"""The batch score job against an independent, simple computation on real agent files, bit for bit.

The "before" values are computed here from scratch: predictions parsed with the record parser,
the first prediction per instr_id kept, repeats collapsed, and every pair scored on its own with
`metrics.score` (what a pair's score is, whatever batch it is scored in). The job's per-episode
rows must equal them exactly, its summary means must equal the exact means of them, and its dead
letters and episode lists must be the ones this computation predicts.
"""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipelines import score as score_job
from vlnkit.datasets.r2r import RecordError
from vlnkit.datasets.trajectories import collapse_repeats, parse_predictions
from vlnkit.evaluation.batch import means, totals
from vlnkit.evaluation.common import METRICS
from vlnkit.evaluation.metrics import score
from vlnkit.navigation.graph import GraphStore

FILES = [
    "rszia+rpl2024-final-group9/val_unseen_phi_agent.json",
    "rszia+rpl2024-final-group9/val_seen_random_agent.json",
    "weituo12321+PREVALENT_R2R/seq2seq_teacher_imagenet_val_unseen_iter_36000_add.json",
    "weituo12321+PREVALENT_R2R/seq2seq_teacher_imagenet_val_seen_iter_36000.json",
    "Malak-Mansour+Language_In_RobNav/custom-gpt-test_100__submit_R2R_val_unseen_instr.json",
]


def independent(pred_file, dataset_file, store):
    refs = {
        f"{r['path_id']}_{k}": r for r in json.loads(dataset_file.read_text()) for k in range(len(r["instructions"]))
    }
    first = {}
    for p in parse_predictions(pred_file.read_bytes(), str(pred_file)):
        if not isinstance(p, RecordError):
            first.setdefault(p["instr_id"], p)
    rows, dead = {}, set()
    for instr_id, p in first.items():
        r = refs[instr_id]
        g = store.get(r["scan"])
        if p["path"][0] != r["path"][0]:
            dead.add(instr_id)
            continue
        q = collapse_repeats(p["path"])
        s = score(g.indices(r["path"]), g.indices(q), g.distances)
        rows[instr_id] = {"scan": r["scan"], **s, "path": q}
    return rows, dead, set(refs) - set(first), set(refs) - set(rows)


@pytest.mark.real_data
@pytest.mark.parametrize("relpath", FILES)
def test_job_equals_an_independent_computation(tmp_path, shared_data, connectivity_dir, relpath):
    f = shared_data / "agent_outputs" / relpath
    split = "val_seen" if "val_seen" in f.name else "val_unseen"
    dataset = shared_data / "r2r" / f"R2R_{split}.json"
    want, dead, missing, unusable = independent(f, dataset, GraphStore(str(connectivity_dir)))
    out = tmp_path / "o"
    summary = score_job.main(
        [
            "--runner=DirectRunner",
            f"--predictions={f}",
            f"--dataset={dataset}",
            f"--connectivity_dir={connectivity_dir}",
            f"--output_dir={out}",
        ]
    )
    got = {}
    for r in pq.read_table(sorted(out.glob("episodes-*-of-*.parquet"))).to_pylist():
        assert r.pop("agent") == f.name.rsplit(".", 1)[0]  # an unnamed agent is its file's name
        got[r.pop("instr_id")] = r
    assert set(got) == set(want)
    for instr_id, w in want.items():
        g = got[instr_id]
        assert g["scan"] == w["scan"] and g["path"] == w["path"], instr_id
        for m in METRICS:
            assert g[m] == w[m], (instr_id, m, g[m], w[m])  # bit for bit (no value here is +inf)
    summed = {}
    for m in METRICS:
        for k, v in totals({m: np.asarray([w[m] for w in want.values()])}).items():
            summed[k] = v
    assert summary["metrics"] == means(summed)[0]
    assert summary["count"] == len(want) and summary["dead_letters"] == len(dead)
    letters = [json.loads(x) for x in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    assert {d["record"].split("instr_id=")[1].rstrip(")") for d in letters} == dead
    assert set((out / score_job.MISSING_FILE).read_text().split()) == missing
    assert set((out / score_job.UNUSABLE_FILE).read_text().split()) == unusable
    assert summary["without_usable_prediction"] == len(unusable) == summary["reference_episodes"] - len(want)
