"""End-to-end runs of `python -m pipelines.random_baseline` (in-process, DirectRunner)."""

import json

import pyarrow.parquet as pq
import pytest

from pipelines import random_baseline
from vlnkit.fixtures.grid import write_environment


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rb_env")
    r2r_path, conn_dir = write_environment(str(tmp), scans=2, paths_per_scan=6, seed=4, instructions=2)
    return r2r_path, conn_dir


def run(out, r2r_path, conn_dir, *flags):
    return random_baseline.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={out}",
            f"--dataset={r2r_path}",
            f"--steps_from={r2r_path}",
            f"--connectivity_dir={conn_dir}",
            *flags,
        ]
    )


def test_synthetic_run_is_deterministic_and_writes_every_walk(env, tmp_path):
    r2r_path, conn_dir = env
    a = run(tmp_path / "a", r2r_path, conn_dir, "--num_trajectories=5003", "--seed=3", "--write_episodes")
    assert a["count"] == 5003 and a["evaluation_paths"] == 12 and a["training_paths"] == 12
    assert sum(a["steps_distribution"].values()) == pytest.approx(1.0)
    rows = pq.read_table(sorted((tmp_path / "a").glob("episodes-*-of-*.parquet"))).to_pylist()
    assert len(rows) == 5003 and len({(r["instr_id"], r["sample"]) for r in rows}) == 5003
    counts = {}
    for r in rows:
        counts[r["instr_id"]] = counts.get(r["instr_id"], 0) + 1
    assert sorted(set(counts.values())) == [208, 209] and len(counts) == 24  # 5003 = 24 * 208 + 11
    for m, v in a["metrics"].items():
        assert v == pytest.approx(sum(r[m] for r in rows) / len(rows), rel=1e-9), m
    assert 0 < a["metrics"]["sr"] < 1 and a["metrics"]["ndtw"] < 1
    # Same seed, no episode output: the same numbers; another seed: different numbers.
    b = run(tmp_path / "b", r2r_path, conn_dir, "--num_trajectories=5003", "--seed=3")
    assert b["metrics"] == pytest.approx(a["metrics"], rel=1e-12)
    assert not list((tmp_path / "b").glob("episodes-*"))
    c = run(tmp_path / "c", r2r_path, conn_dir, "--num_trajectories=5003", "--seed=4")
    assert c["metrics"]["dtw"] != a["metrics"]["dtw"]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["job"] == "random_baseline" and (tmp_path / "a" / "_SUCCESS").exists()


@pytest.mark.real_data
def test_real_val_unseen_random_baseline(tmp_path, r2r_dir, connectivity_dir):
    s = run(
        tmp_path / "o",
        r2r_dir / "R2R_val_unseen.json",
        connectivity_dir,
        "--num_trajectories=50000",
        "--seed=0",
    )
    s = {**s, "steps_from": None}
    assert s["count"] == 50_000 and s["dead_letters"] == 0 and s["evaluation_paths"] == 783
    # Walk lengths drawn from val_unseen itself here (4 to 6 edges); a random walk rarely succeeds.
    assert 0.02 < s["metrics"]["sr"] < 0.12 and 7 < s["metrics"]["ne"] < 12
    assert all(v is not None for v in s["metrics"].values())


def test_multi_process_runner_gives_the_same_summary(env, tmp_path):
    r2r_path, conn_dir = env
    flags = ["--num_trajectories=3001", "--seed=5"]
    one = run(tmp_path / "one", r2r_path, conn_dir, *flags)
    two = run(
        tmp_path / "two", r2r_path, conn_dir, *flags, "--direct_running_mode=multi_processing", "--direct_num_workers=2"
    )
    assert one["metrics"] == two["metrics"] and one["count"] == two["count"] == 3001  # exact sums: same bits
