"""The random baseline on RxR guide files: --dataset (one walk set per instruction) and --steps_from (one
step count per distinct path), checked against the R2R records the RxR-format fixture was made from."""

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from pipelines import random_baseline
from vlnkit.fixtures.rxr import read_jsonl, write_rxr_fixtures

pytestmark = pytest.mark.real_data
RECORDS = 40
WALKS_PER_EPISODE = 50


@pytest.fixture(scope="module")
def data(r2r_dir, connectivity_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rxr_random")
    out = {}
    for split in ("val_unseen", "train"):
        records = json.loads((r2r_dir / f"R2R_{split}.json").read_text())[:RECORDS]
        r2r_file = tmp / f"R2R_{split}_{RECORDS}.json"
        r2r_file.write_text(json.dumps(records))
        rxr = write_rxr_fixtures(records, split, connectivity_dir, str(tmp / split), pose_traces=False)
        out[split] = (records, r2r_file, rxr)
    return tmp, out


def run(out, dataset, steps_from, connectivity_dir, walks):
    return random_baseline.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={out}",
            f"--dataset={dataset}",
            f"--steps_from={steps_from}",
            f"--connectivity_dir={connectivity_dir}",
            f"--num_trajectories={walks}",
            "--seed=7",
            "--write_episodes",
        ]
    )


def rows(out) -> list[dict]:
    return pq.read_table(sorted(out.glob("episodes-*-of-*.parquet"))).to_pylist()


def test_rxr_dataset_walks_every_instruction_and_counts_paths_once(data, connectivity_dir):
    tmp, d = data
    records, r2r_val, rxr_val = d["val_unseen"]
    _, r2r_train, rxr_train = d["train"]
    guides = read_jsonl(rxr_val.guide)
    n = len(guides)
    assert n == sum(len(r["instructions"]) for r in records) == rxr_val.instructions > RECORDS
    rxr = run(tmp / "rxr", rxr_val.guide, rxr_train.guide, connectivity_dir, n * WALKS_PER_EPISODE)
    r2r = run(tmp / "r2r", r2r_val, r2r_train, connectivity_dir, n * WALKS_PER_EPISODE)
    for s in (rxr, r2r):
        assert s["count"] == n * WALKS_PER_EPISODE and s["dead_letters"] == 0
        assert s["evaluation_episodes"] == n and s["evaluation_paths"] == RECORDS == s["training_paths"]
    assert (rxr["evaluation_records"], r2r["evaluation_records"]) == (n, RECORDS)
    # One step count per distinct training path: RxR train (one line per instruction) gives the histogram
    # of the R2R records it was made from.
    assert rxr["steps_distribution"] == r2r["steps_distribution"]
    want = Counter(len(r["path"]) - 1 for r in json.loads(r2r_train.read_text()))
    assert rxr["steps_distribution"] == {str(k): want[k] / RECORDS for k in sorted(want)}
    # Every instruction is an episode addressed str(instruction_id), with its equal share of walks on its scan.
    got = rows(tmp / "rxr")
    per_episode = Counter(r["instr_id"] for r in got)
    assert per_episode == {str(g["instruction_id"]): WALKS_PER_EPISODE for g in guides}
    scan_of = {str(g["instruction_id"]): g["scan"] for g in guides}
    assert all(r["scan"] == scan_of[r["instr_id"]] for r in got)
    # Walks are seeded by instr_id, so RxR and R2R episodes walk differently; their means agree loosely.
    assert abs(rxr["metrics"]["ne"] - r2r["metrics"]["ne"]) < 1.0


def test_rxr_steps_from_gives_the_same_walks_as_its_r2r_source(data, connectivity_dir):
    tmp, d = data
    _, r2r_val, _ = d["val_unseen"]
    _, r2r_train, rxr_train = d["train"]
    walks = 3001
    a = run(tmp / "steps_r2r", r2r_val, r2r_train, connectivity_dir, walks)
    b = run(tmp / "steps_rxr", r2r_val, rxr_train.guide, connectivity_dir, walks)
    assert a["training_paths"] == b["training_paths"] == RECORDS and b["dead_letters"] == 0
    assert a["metrics"] == b["metrics"] and a["null_counts"] == b["null_counts"]
    key = lambda r: (r["instr_id"], r["sample"])  # noqa: E731
    assert sorted(rows(tmp / "steps_r2r"), key=key) == sorted(rows(tmp / "steps_rxr"), key=key)


def test_a_follower_file_as_steps_from_is_refused_before_the_pipeline(data, connectivity_dir, capsys):
    tmp, d = data
    _, r2r_val, rxr_val = d["val_unseen"]
    with pytest.raises(SystemExit) as exc:
        run(tmp / "follower", r2r_val, rxr_val.follower, connectivity_dir, 10)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--steps_from" in err and "RxR follower file" in err and rxr_val.follower in err
