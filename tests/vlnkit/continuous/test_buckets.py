"""The score job's core for continuous datasets: files read into bucketed pieces, and a bucket joined and
scored, checked on hand-worked episodes (every number below is worked out from the definitions, not
taken from the code), with every join rule's dead letter."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from vlnkit.continuous.buckets import ContinuousOptions, score_bucket
from vlnkit.continuous.documents import sniff_kind
from vlnkit.continuous.pieces import agent_pieces, dataset_pieces
from vlnkit.evaluation.batch import means
from vlnkit.evaluation.score_summary import SEP
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.io.dead_letters import RecordError

GT = {1: [[0, 0, 0], [1, 0, 0], [2, 0, 0]], 2: [[0, 0, 0], [1, 0, 0], [2, 0, 0]], 3: [[0, 0, 0], [0, 0, 3]]}


def episode(eid: int, tid: int, goal) -> dict:
    return {
        "episode_id": eid,
        "trajectory_id": tid,
        "scene_id": f"mp3d/scan{tid}/scan{tid}.glb",
        "start_position": [0.0, 0.0, 0.0],
        "info": {"geodesic_distance": 2.0},
        "goals": [{"position": goal, "radius": 3.0}],
        "instruction": {"instruction_text": f"go {eid}"},
        "reference_path": [[0.0, 0.0, 0.0], goal],
    }


@pytest.fixture
def files(tmp_path):
    """Episodes 1 and 2 (trajectory 5) and 3 (trajectory 6) with their gt; episode 4 has none (refused)."""
    episodes = [episode(1, 5, [2, 0, 0]), episode(2, 5, [2, 0, 0]), episode(3, 6, [0, 0, 3]), episode(4, 7, [1, 0, 0])]
    (tmp_path / "split.json.gz").write_bytes(gzip.compress(json.dumps({"episodes": episodes}).encode()))
    gt = {str(k): {"locations": v} for k, v in GT.items()}
    (tmp_path / "split_gt.json.gz").write_bytes(gzip.compress(json.dumps(gt).encode()))
    a_positions = {"1": [[0, 0, 0], [0, 0, 0], [1, 0, 0], [2, 0, 1]]}
    a_results = {"1": {"success": 1, "spl": 0.5, "ndtw": 0.7, "distance_to_goal": 1.0, "path_length": 2.5},
                 "3": {"success": 0.0, "spl": 0.0, "distance_to_goal": 3.5}}  # fmt: skip
    b_first = {"2": GT[2], "99": [[0, 0, 0]], "4": [[0, 0, 0]]}
    b_second = {"2": [[5, 5, 5]]}
    out = {}
    for name, value in (("a_pos.json", a_positions), ("a_res.json", a_results), ("b1.json", b_first),
                        ("b2.json", b_second)):  # fmt: skip
        (tmp_path / name).write_text(json.dumps(value))
        out[name] = str(tmp_path / name)
    out["dataset"] = str(tmp_path / "split.json.gz")
    return out


def read_all(files, buckets: int = 1, **options):
    agents = {"a": [files["a_pos.json"], files["a_res.json"]], "b": [files["b1.json"], files["b2.json"]]}
    pieces, dead = [], []
    for x in dataset_pieces(files["dataset"], 0, gt="auto", reference="gt", buckets=buckets):
        (dead if isinstance(x, RecordError) else pieces).append(x)
    for agent, paths in agents.items():
        for rank, path in enumerate(paths):
            for x in agent_pieces(path, agent, rank, sniff_kind(path), buckets):
                (dead if isinstance(x, RecordError) else pieces).append(x)
    return agents, pieces, dead


def score(files, buckets: int = 1, config=ScoringConfig(), **options):
    agents, pieces, dead = read_all(files, buckets)
    by_bucket: dict[int, list] = {}
    for b, piece in pieces:
        by_bucket.setdefault(b, []).append(piece)
    return (
        agents,
        dead,
        [
            score_bucket(found, agents, [files["dataset"]], config, ContinuousOptions(**options), label_agents=True)
            for found in by_bucket.values()
        ],
    )


def test_a_bucket_joins_scores_and_combines_results_with_positions(files):
    agents, read_dead, (bucket,) = score(files)
    assert [d.reason for d in read_dead] == [
        f"no ground-truth path for episode 4 in {files['dataset'][:-8]}_gt.json.gz"
    ]
    rows = {(r["agent"], r["episode_id"]): r for r in bucket.table.to_pylist()}
    assert sorted(rows) == [("a", 1), ("a", 3), ("b", 2)]
    a1, a3, b2 = rows["a", 1], rows["a", 3], rows["b", 2]
    # Agent a, episode 1: positions (0,0,0) x2, (1,0,0), (2,0,1) against gt (0,0,0), (1,0,0), (2,0,0); the
    # repeat is dropped, the best alignment is the diagonal: DTW = 0 + 0 + 1.
    ndtw = math.exp(-1 / (3 * 3))
    pc = (1 + 1 + math.exp(-1 / 3)) / 3  # nearest positions: 0, 0 and 1 m away
    pl_ours = 1 + math.sqrt(2)
    epl = pc * 2  # the gt path is 2 m long
    cls = pc * epl / (epl + abs(epl - pl_ours))
    assert a1["sources"] == "positions+results" and a1["instr_id"] == "5_0" and a1["trajectory_id"] == 5
    assert a1["sr"] == 1 and a1["spl"] == 0.5 and a1["ne"] == 1.0  # the simulator's
    assert a1["ndtw"] == 0.7 and a1["pl"] == 2.5  # both give them: the file's value is reported
    assert a1["sdtw"] == pytest.approx(1 * ndtw, abs=1e-15)  # the file's success x our nDTW
    assert a1["dtw"] == pytest.approx(1.0, abs=1e-15) and a1["cls"] == pytest.approx(cls, abs=1e-15)
    assert a1["steps"] == 3 and a1["osr"] is None and a1["sed"] is None
    assert a1["positions"] == [[0, 0, 0], [1, 0, 0], [2, 0, 1]]  # as scored: the repeat collapsed
    assert a3["sources"] == "results" and a3["sr"] == 0 and a3["positions"] is None and a3["ndtw"] is None
    assert b2["ndtw"] == 1.0 and b2["pl"] == 2.0 and b2["sources"] == "positions" and b2["sr"] is None
    # |file - ours| where both give a metric
    d = bucket.differences["a"]
    assert d["ndtw"]["count"] == 1 and d["ndtw"]["max"] == pytest.approx(abs(0.7 - ndtw), abs=1e-15)
    assert d["pl"]["max"] == pytest.approx(abs(2.5 - pl_ours), abs=1e-15) and "steps" not in d
    # every join rule's dead letter, and the episode lists
    reasons = sorted((x.source.rsplit("/", 1)[-1], x.record, x.stage, x.reason) for x in bucket.dead)
    assert reasons == [
        ("b1.json", "episode_id=4", "match",
         f"episode 4 has no usable episode: its dataset record was refused ({files['dataset']}; see that dead letter)"),
        ("b1.json", "episode_id=99", "match", f"no episode 99 in {files['dataset']}"),
        ("b2.json", "episode_id=2", "match", f"duplicate positions for episode 2 (kept {files['b1.json']} episode_id=2)"),
    ]  # fmt: skip
    assert sorted(bucket.missing) == ["a\t5_1", "b\t5_0", "b\t6_0"] and bucket.unusable == bucket.missing
    t = bucket.totals
    assert t["reference_episodes"] == 3 and t[f"a{SEP}repeats_collapsed"] == 1 and t[f"b{SEP}dead_letters"] == 3
    assert (t[f"a{SEP}rows_from_both"], t[f"a{SEP}rows_from_results"], t[f"b{SEP}rows_from_positions"]) == (1, 1, 1)
    own = {k.split(SEP, 1)[1]: v for k, v in t.items() if k.startswith(f"a{SEP}")}
    assert means(own, ("sr", "ndtw"))[0] == {"sr": 0.5, "ndtw": 0.7}  # ndtw only where some input gives it
    assert bucket.reference_length.tolist() == [2.0, 3.0, 2.0]  # the episodes' reference paths


def test_euclidean_bounds_are_computed_from_positions_and_named_so(files):
    _, _, (bucket,) = score(files, goal_distance="euclidean")
    rows = {(r["agent"], r["episode_id"]): r for r in bucket.table.to_pylist()}
    a1 = rows["a", 1]  # stops at (2, 0, 1), 1 m from the goal (2, 0, 0): within 3 m
    assert a1["ne_euclidean"] == 1.0 and a1["sr_euclidean"] == 1.0 and a1["osr_euclidean"] == 1.0
    assert a1["spl_euclidean"] == pytest.approx(2.0 / (1 + math.sqrt(2)), abs=1e-15)  # geodesic 2 m / walked
    assert a1["sr"] == 1 and rows["a", 3]["sr_euclidean"] is None  # no positions, no bound


@pytest.mark.parametrize("buckets", [2, 3, 5])
def test_any_number_of_buckets_gives_the_same_rows_and_totals(files, buckets):
    def gathered(parts):
        rows = sorted((r for p in parts if p.table is not None for r in p.table.to_pylist()),
                      key=lambda r: (r["agent"], r["episode_id"]))  # fmt: skip
        totals: dict = {}
        for p in parts:
            for k, v in p.totals.items():
                totals[k] = totals.get(k, 0) + v
        dead = sorted(d.reason for p in parts for d in p.dead)
        return rows, totals, dead, sorted(m for p in parts for m in p.missing)

    _, _, one = score(files)
    _, _, many = score(files, buckets)
    assert gathered(many) == gathered(one)


def test_an_rxr_habitat_submission_is_joined_by_instruction_id(tmp_path, files):
    episodes = json.loads(gzip.decompress(open(files["dataset"], "rb").read()))["episodes"][:3]
    for k, e in enumerate(episodes):
        e["instruction"].update(instruction_id=100 + k, language=["en-US", "hi-IN", "en-US"][k])
    (tmp_path / "rxr.json.gz").write_bytes(gzip.compress(json.dumps({"episodes": episodes}).encode()))
    (tmp_path / "rxr_gt.json.gz").write_bytes(open(files["dataset"][:-8] + "_gt.json.gz", "rb").read())
    lines = [{"instruction_id": 101, "path": GT[2]}, {"instruction_id": 555, "path": [[0, 0, 0]]}]
    (tmp_path / "sub.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    dataset, sub = str(tmp_path / "rxr.json.gz"), str(tmp_path / "sub.jsonl")
    from vlnkit.continuous.pieces import instruction_map

    found = list(agent_pieces(sub, "x", 0, sniff_kind(sub), 1, lambda: instruction_map([dataset])))
    dead = [x for x in found if isinstance(x, RecordError)]
    assert [(d.record, d.stage, d.reason) for d in dead] == [
        ("instruction_id=555", "match", f"no RxR instruction 555 in {dataset}")
    ]
    pieces = [x[1] for x in found if not isinstance(x, RecordError)]
    pieces += [x[1] for x in dataset_pieces(dataset, 0, gt="auto", reference="gt", buckets=1)]
    bucket = score_bucket(pieces, {"x": [sub]}, [dataset], ScoringConfig(), ContinuousOptions())
    (row,) = bucket.table.to_pylist()
    assert (row["episode_id"], row["instr_id"], row["language"], row["ndtw"]) == (2, "101", "hi-IN", 1.0)
    assert bucket.totals[f"x{SEP}by_language{SEP}hi-IN{SEP}count"] == 1


def test_options_are_checked_once():
    with pytest.raises(ValueError, match="--dtw must be one of exact, fastdtw"):
        ContinuousOptions(dtw="fast")
    with pytest.raises(ValueError, match="--ce_reference must be one of gt, reference_path"):
        ContinuousOptions(reference="path")
