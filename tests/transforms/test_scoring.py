"""The score job's pipeline (as `pipelines.score.build` wires it) and the dataset reader on the synthetic environment,
checked against the core library."""

import json
import math

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.deadletter import DEAD_LETTER
from transforms.random_walks import RandomBaseline, allocation
from transforms.read import ReadDataset
from transforms.score.read import TOTALS
from vlnkit.datasets.json_chunks import plan_line_ranges
from vlnkit.datasets.records import flatten_trajectory
from vlnkit.datasets.trajectories import collapse_repeats
from vlnkit.evaluation.batch import score_batch
from vlnkit.evaluation.common import METRICS
from vlnkit.evaluation.metrics import score
from vlnkit.evaluation.random_baseline import draw, neighbour_table, walk
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.fixtures.grid import write_environment
from vlnkit.io.exactsum import SUM_SCALE
from vlnkit.navigation.graph import GraphStore


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("env")
    r2r_path, conn_dir = write_environment(str(tmp), scans=2, paths_per_scan=6, seed=5, instructions=2)
    records = json.loads(open(r2r_path).read())
    return tmp, r2r_path, conn_dir, records


def predictions_for(records, store):
    """Every episode's prediction (a mix of layouts and variations), minus one, plus every kind of bad one."""
    rng = np.random.default_rng(1)
    preds = []
    for r in records:
        g = store.get(r["scan"])
        for k in range(len(r["instructions"])):
            instr_id = f"{r['path_id']}_{k}"
            if instr_id == "0_1":
                continue  # a missing prediction
            walk_ = [g.idx(r["path"][0])]
            for _ in range(int(rng.integers(0, 6))):
                walk_.append(int(rng.choice(g.neighbours[walk_[-1]])))
            vps = [g.viewpoints[i] for i in walk_]
            layout = (r["path_id"] + k) % 3
            if layout == 0:
                traj = [[v, 0.0, 0.0] for v in vps for _ in range(2)]  # turning in place
            elif layout == 1:
                traj = vps
            else:
                traj = [[v] for v in vps] + [[]]
            preds.append({"instr_id": instr_id, "trajectory": traj})
    first = records[0]
    preds += [
        {"instr_id": "999_0", "trajectory": [first["path"][0]]},  # unknown instr_id
        {"instr_id": "1_0", "trajectory": [records[1]["path"][0]]},  # duplicate (second one loses)
        {"instr_id": "2_0", "trajectory": []},  # empty
        {"instr_id": "3_0", "trajectory": [records[3]["path"][0], "nowhere"]},  # unknown viewpoint
        {"instr_id": "4_0", "trajectory": [records[4]["path"][1]]},  # wrong start
    ]
    return preds


def run_score_job(out, agents, dataset_files, conn_dir, config=None, buckets=None, range_bytes=None) -> dict:
    """The score job's pipeline, as `pipelines.score.build` wires it, in a TestPipeline (no bootstrap); what it
    wrote, read back: sorted episode rows, dead letters, the two episode lists, the summed totals."""
    import glob
    import os

    from pipelines.score import build
    from pipelines.score_outputs import MISSING_FILE, UNUSABLE_FILE
    from vlnkit.comparison.config import BootstrapConfig

    config = config or ScoringConfig()
    with TestPipeline() as p:
        build(
            p, agents, dataset_files, conn_dir, str(out), config, BootstrapConfig(replicates=0),
            buckets=buckets, range_bytes=range_bytes,
        )  # fmt: skip
    rows = [r for f in sorted(glob.glob(os.path.join(out, "episodes-*.parquet"))) for r in pq.read_table(f).to_pylist()]
    return {
        "rows": sorted(rows, key=lambda r: (r["agent"], r["instr_id"])),
        "dead": sorted(
            (json.loads(line) for line in open(os.path.join(out, "dead_letter-00000-of-00001.jsonl"))),
            key=lambda d: json.dumps(d, sort_keys=True),
        ),
        "missing": open(os.path.join(out, MISSING_FILE)).read().split(),
        "unusable": open(os.path.join(out, UNUSABLE_FILE)).read().split(),
        "summary": json.load(open(os.path.join(out, "summary.json"))),
    }


def test_json_lines_read_in_byte_ranges_score_exactly_as_read_whole(env, tmp_path):
    """The score job's outputs do not depend on how its JSON Lines inputs are cut into ranges."""
    _, r2r_path, conn_dir, records = env
    preds = predictions_for(records, GraphStore(conn_dir))
    lines = [json.dumps(x) for x in preds]
    lines[3:3] = ["{broken", "", "   ", json.dumps({"instr_id": "", "trajectory": [["a", 0, 0]]})]
    pred_path, data_path = tmp_path / "preds.jsonl", tmp_path / "data.jsonl"
    pred_path.write_text("\n".join(lines) + "\n")
    data_path.write_text("\n".join(json.dumps(r) for r in records + records[:2]) + "\n")  # two duplicate paths
    with open(pred_path, "rb") as f:
        assert len(plan_line_ranges(f, 300)) > 5  # the small range size really cuts the file
    agents = {"a": [str(pred_path)]}
    whole = run_score_job(tmp_path / "whole", agents, [str(data_path)], conn_dir, buckets=3)
    ranged = run_score_job(tmp_path / "ranged", agents, [str(data_path)], conn_dir, buckets=3, range_bytes=300)
    assert whole["rows"] and whole["dead"] and whole == ranged


@pytest.mark.parametrize("buckets", [1, 3, 16])
def test_read_join_and_score_match_the_core(env, tmp_path, buckets):
    _, r2r_path, conn_dir, records = env
    store = GraphStore(conn_dir)
    preds = predictions_for(records, store)
    # Duplicates of 2_0/3_0/4_0 replaced their good predictions; drop the good ones so each id has one.
    bad_ids = {"2_0", "3_0", "4_0"}
    seen_bad = set()
    kept = []
    for p in reversed(preds):
        if p["instr_id"] in bad_ids:
            if p["instr_id"] in seen_bad:
                continue
            seen_bad.add(p["instr_id"])
        kept.append(p)
    preds = list(reversed(kept))
    pred_path = tmp_path / "preds.json"
    pred_path.write_text(json.dumps(preds))

    # What the core says for the good ones: each pair scored on its own, compared bit for bit.
    by_id = {f"{r['path_id']}_{k}": r for r in records for k in range(len(r["instructions"]))}
    good = [p for p in preds if p["instr_id"] in by_id and p["instr_id"] not in bad_ids]
    good = list({p["instr_id"]: p for p in reversed(good)}.values())  # first prediction per id wins
    expected = []
    for p in good:
        r = by_id[p["instr_id"]]
        g = store.get(r["scan"])
        q = collapse_repeats(flatten_trajectory(p["trajectory"])[0])
        s = score(g.indices(r["path"]), g.indices(q), g.distances, 2.0)
        expected.append(("a", p["instr_id"], r["scan"], None, *[s[m] for m in METRICS], q))  # None: no language

    got = run_score_job(tmp_path / "out", {"a": [str(pred_path)]}, [r2r_path], conn_dir, ScoringConfig(2.0), buckets)
    rows = [tuple(r.values()) for r in got["rows"]]
    assert sorted(r[:-2] + r[-1:] for r in rows) == sorted(expected)
    # 2_0's only prediction was empty (a dead letter): a prediction was given, so it is not missing...
    assert got["missing"] == ["0_1"]
    # ... but without a usable one, like 3_0 (unknown viewpoint) and 4_0 (wrong start).
    assert got["unusable"] == ["0_1", "2_0", "3_0", "4_0"]
    dead = sorted((d["stage"], d["record"].split("instr_id=")[-1].rstrip(")")) for d in got["dead"])
    assert dead == sorted(
        [("read", "2_0"), ("match", "999_0"), ("match", "1_0"), ("viewpoint", "3_0"), ("start", "4_0")]
    )
    assert got["summary"]["count"] == len(expected) and got["summary"]["dead_letters"] == 5


def test_dataset_reader_takes_build_r4r_parquet_and_dedupes(env, tmp_path):
    _, r2r_path, conn_dir, records = env
    table = pa.Table.from_pylist(
        [{k: r[k] for k in ("path_id", "scan", "path", "heading", "distance", "instructions")} for r in records]
    )
    pq.write_table(table, tmp_path / "paths-00000-of-00001.parquet")
    with TestPipeline() as p:
        read = p | ReadDataset([r2r_path, str(tmp_path / "paths-00000-of-00001.parquet")])
        assert_that(
            read["records"] | beam.Map(lambda r: r["path_id"]), equal_to([r["path_id"] for r in records]), label="ids"
        )
        assert_that(
            read[DEAD_LETTER] | beam.Map(lambda d: d["stage"]), equal_to(["dedupe"] * len(records)), label="dups"
        )


def test_batch_dataset_reader_dedupes_like_the_record_reader(env, tmp_path):
    """The same files through the record reader and through the batch join: the same dead letters."""
    _, r2r_path, conn_dir, records = env
    table = pa.Table.from_pylist(
        [{k: r[k] for k in ("path_id", "scan", "path", "heading", "distance", "instructions")} for r in records]
    )
    parquet = str(tmp_path / "paths-00000-of-00001.parquet")
    pq.write_table(table, parquet)
    files = [parquet, r2r_path]  # JSON files rank first whatever the order given
    with TestPipeline() as p:
        old = p | "Records" >> ReadDataset(files)
        assert_that(
            old[DEAD_LETTER] | beam.Map(lambda d: json.dumps(d, sort_keys=True)),
            lambda found: _same_dead_letters(found, tmp_path, files, conn_dir, records),
        )


def _same_dead_letters(found, tmp_path, files, conn_dir, records):
    new = run_score_job(tmp_path / "job", {"a": []}, files, conn_dir, buckets=4)
    assert sorted(found) == sorted(json.dumps(d, sort_keys=True) for d in new["dead"]) and len(found) == len(records)
    assert len(new["missing"]) == sum(len(r["instructions"]) for r in records)


def test_random_baseline_transform_is_the_core_recipe(env):
    _, r2r_path, conn_dir, records = env
    store = GraphStore(conn_dir)
    pool_values = [3, 4, 4, 6]
    n = 1001
    episodes = [(f"{r['path_id']}_{k}", r) for r in records for k in range(len(r["instructions"]))]
    shares = allocation([((0, i, 0), e[0]) for i, e in enumerate(episodes)], n)
    assert sum(shares.values()) == n and set(shares.values()) == {41, 42}
    sums = {m: 0.0 for m in METRICS}
    pool = np.asarray(sorted(pool_values))
    for instr_id, r in episodes:
        g = store.get(r["scan"])
        table, degree = neighbour_table(g)
        steps, uniforms = draw(11, instr_id, shares[instr_id], pool)
        start = np.full(len(steps), g.idx(r["path"][0]))
        q = walk(table, degree, start, steps, uniforms)
        ref = np.tile(g.indices(r["path"]), (len(steps), 1))
        s = score_batch(g.distances, (ref, np.full(len(steps), len(r["path"]))), q)
        for m in METRICS:
            sums[m] += float(s[m].sum())

    with TestPipeline() as p:
        dataset = p | ReadDataset([r2r_path])
        pool_pc = p | "Pool" >> beam.Create(pool_values)
        out = dataset["records"] | RandomBaseline(conn_dir, pool_pc, n, seed=11, chunk_size=100, tables=True)

        def check(totals):
            assert sum(t["count"] for t in totals) == n
            for m in METRICS:
                total = sum(t[f"sum_{m}"] for t in totals) / 2**SUM_SCALE  # exact sums (see batch.totals)
                assert math.isclose(total, sums[m], rel_tol=1e-12, abs_tol=1e-9), m

        assert_that(out[TOTALS], check, label="totals")
        rows = out["tables"] | beam.FlatMap(lambda t: t.to_pylist()) | beam.Map(lambda r: (r["instr_id"], r["sample"]))
        assert_that(rows | beam.combiners.Count.Globally(), equal_to([n]), label="rows")
        assert_that(out[DEAD_LETTER], equal_to([]), label="no dead letters")
