"""CVDN through the score job's core (read, join, score by the task's rule): against a plain
implementation of the official evaluator's rules (tests/oracles/cvdn_eval.py) on crafted agents and random
graphs, every dead letter where the evaluator stops, and the shared agent's training log."""

from __future__ import annotations

import csv
import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracles.cvdn_eval import PlainCVDNEvaluation
from vlnkit.datasets.columns import Vocabulary
from vlnkit.datasets.cvdn import TARGET_PATHS
from vlnkit.datasets.formats import file_format
from vlnkit.evaluation.cvdn import EVALUATOR_KEYS, evaluator_summary
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.navigation.graph import GraphStore, NavGraph
from vlnkit.scoring.cvdn import CVDN, CVDNOptions
from vlnkit.scoring.join import join_bucket
from vlnkit.scoring.reading import in_buckets, read_predictions, read_references
from vlnkit.scoring.registry import task_for
from vlnkit.scoring.scans import ScanTables
from vlnkit.scoring.score import score_bucket

# A crafted scan (metres): a line a-b-c-d-e-g along x, and f above b, joined to b and c.
COORDS = {"a": (0, 0), "b": (1, 0), "c": (2, 0), "d": (3, 0), "e": (4, 0), "g": (5, 0), "f": (1, 1)}
EDGES = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "g"), ("b", "f"), ("f", "c")]


def connectivity(coords: dict, edges: list) -> list[dict]:
    names = list(coords)
    linked = {(u, v) for u, v in edges} | {(v, u) for u, v in edges}
    return [
        {
            "image_id": v,
            "included": True,
            "unobstructed": [(v, w) in linked for w in names],
            "pose": [1, 0, 0, float(coords[v][0]), 0, 1, 0, float(coords[v][1]), 0, 0, 1, 0.0, 0, 0, 0, 1],
        }
        for v in names
    ]


def instance(idx, planner, player, ends, scan="s") -> dict:
    return {"inst_idx": idx, "scan": scan, "planner_path": planner, "player_path": player, "end_panos": ends}


def submission(idx, path) -> dict:
    return {"inst_idx": idx, "trajectory": [[v, 0.0, 0.0] for v in path]}


# (planner path, player path, end panos, trajectory): each a crafted agent on one instance.
CASES = [
    ("abcd", "abcde", "eg", "abcd"),  # stops at the planner's goal; the trusted path (the player's) ends at e
    ("abcd", "abcde", "eg", "aabbc"),  # one hop short, turning in place
    ("abcd", "abcde", "eg", "a"),  # stays at the start, exactly 3 m from d: no success
    ("abcd", "abcde", "g", "abcdcb"),  # revisits, ends 2 m from d
    ("c", "cd", "c", "c"),  # the start is the goal: SPL 1 for staying
    ("c", "cdc", "c", "cdc"),  # ... and 0 for walking away and back
    ("abc", "af", "g", "abfc"),  # detour over f; the player never reached c: trusted is the planner's path
    ("abc", "abfc", "dg", "abcdeg"),  # walks past both goals to the far end pano
    ("ab", "abcdeg", "g", "ab"),
]


def crafted():
    instances = [instance(i, list(p), list(q), list(e)) for i, (p, q, e, _) in enumerate(CASES)]
    preds = [submission(i, list(t)) for i, (*_, t) in enumerate(CASES)]
    return instances, preds


@dataclass
class Scored:
    """What the score job's core gives for one agent: its episode rows, missing instr_ids and dead letters."""

    table: pa.Table
    missing: list[str]
    dead: list

    def column(self, metric: str):
        return self.table.column(metric).to_numpy()


def score_files(dataset: str, predictions: str, vocab, graphs, target: str) -> Scored:
    """One agent's predictions of a CVDN file scored as the score job scores them (one bucket)."""
    pieces = list(read_references(dataset, 0, vocab, target_path=target))
    pieces += list(read_predictions(predictions, "a", 0, vocab))
    read_dead = [p for p in pieces if not hasattr(p, "paths")]
    join = join_bucket([b for _, b in in_buckets(pieces, 1)], {"a": [predictions]}, [dataset], vocab, graphs)
    context = CVDN.context(CVDNOptions(target), vocab, graphs)
    scores = score_bucket(join, ScanTables(graphs), ScoringConfig(success_rule="lt"), task=CVDN, context=context)
    table = scores.table if scores.table is not None else CVDN.schema.empty_table()
    return Scored(table, scores.missing, read_dead + scores.dead)


def ours(conn: dict, instances, preds, target, tmp_path) -> Scored:
    graphs = {s: NavGraph.from_connectivity(s, e) for s, e in conn.items()}
    vocab = Vocabulary(list(graphs), [list(g.viewpoints) for g in graphs.values()])
    dataset, predictions = tmp_path / "val.json", tmp_path / "p.json"
    dataset.write_text(json.dumps(instances))
    predictions.write_text(json.dumps(preds))
    return score_files(str(dataset), str(predictions), vocab, GraphStore(str(tmp_path), graphs), target)


PER_EPISODE = {
    "pl": "length",
    "ne": "nav_error",
    "one": "oracle_error",
    "gp": "dist_to_end_reduction",
    "spl": "spl",
    "sr": "success",
}


def assert_agrees(result, oracle_episodes, rel=0.0):
    table = result.table
    got = {iid: i for i, iid in enumerate(table.column("instr_id").to_pylist())}
    assert sorted(got) == sorted(str(e["inst_idx"]) for e in oracle_episodes)
    for e in oracle_episodes:
        row = got[str(e["inst_idx"])]
        for ours_name, theirs in PER_EPISODE.items():
            assert table.column(ours_name)[row].as_py() == pytest.approx(e[theirs], rel=rel, abs=rel), (e, ours_name)
        assert table.column("osr")[row].as_py() == float(e["oracle_error"] < 3.0)
        assert table.column("ops")[row].as_py() == float(e["oracle_plan_error"] < 3.0)
        assert table.column("sgp")[row].as_py() == pytest.approx(
            e["dist_to_end_reduction"] * e["success"], rel=rel, abs=rel
        )


@pytest.mark.parametrize("target", TARGET_PATHS)
def test_crafted_agents_score_as_the_plain_evaluator_does(target, tmp_path):
    instances, preds = crafted()
    conn = {"s": connectivity(COORDS, EDGES)}
    result = ours(conn, instances, preds, target, tmp_path)
    assert result.dead == [] and result.missing == []
    summary, episodes = PlainCVDNEvaluation(conn, instances, target).score(preds)
    assert_agrees(result, episodes)
    ours_summary = evaluator_summary({m: result.column(m) for m in EVALUATOR_KEYS})
    assert ours_summary == pytest.approx(summary, rel=1e-15)


def test_hand_worked_values_of_the_crafted_agents(tmp_path):
    instances, preds = crafted()
    table = ours({"s": connectivity(COORDS, EDGES)}, instances, preds, "planner", tmp_path).table
    rows = {r["instr_id"]: r for r in table.to_pylist()}
    assert (rows["0"]["sr"], rows["0"]["spl"], rows["0"]["gp"]) == (1.0, 1.0, 3.0)
    assert (rows["2"]["ne"], rows["2"]["sr"], rows["2"]["osr"]) == (3.0, 0.0, 0.0)  # 3 m is not < 3 m
    assert (rows["4"]["spl"], rows["5"]["spl"], rows["5"]["sr"]) == (1.0, 0.0, 1.0)  # the SPL rule for sp = 0
    assert rows["6"]["pl"] == 2.0 + math.sqrt(2) and rows["6"]["spl"] == 2 / (2 + math.sqrt(2))
    trusted = {
        r["instr_id"]: r
        for r in ours({"s": connectivity(COORDS, EDGES)}, instances, preds, "trusted", tmp_path).table.to_pylist()
    }
    assert (trusted["0"]["ne"], trusted["0"]["spl"]) == (1.0, 1.0)  # goal e, 1 m away; SPL = 4 / max(3, 4)
    assert trusted["8"]["ne"] == 4.0 and trusted["8"]["ops"] == 1.0  # target g, the planner's goal b reached


def test_a_move_along_no_edge_is_a_dead_letter_naming_the_instance_and_both_viewpoints(tmp_path):
    instances, preds = crafted()
    preds[6] = submission(6, ["a", "f", "c"])  # a and f share no edge
    conn = {"s": connectivity(COORDS, EDGES)}
    result = ours(conn, instances, preds, "planner", tmp_path)
    (dead,) = result.dead
    assert dead.stage == "rule" and dead.record == "#6 (instr_id=6)" and dead.source == str(tmp_path / "p.json")
    assert dead.reason == (
        "trajectory moves from 'a' to 'f' (step 0), but the navigation graph of scan 's' has no edge between them"
    )
    assert "6" not in result.table.column("instr_id").to_pylist() and result.table.num_rows == len(CASES) - 1
    with pytest.raises(KeyError):  # the evaluator stops there
        PlainCVDNEvaluation(conn, instances).score(preds)


def test_every_case_the_evaluator_stops_on_is_a_dead_letter(tmp_path):
    conn = {"s": connectivity(COORDS, EDGES), "t": connectivity({"p": (0, 0), "q": (9, 0)}, [])}
    instances = [
        instance(0, list("abc"), list("ab"), ["g"]),
        instance(0, list("ab"), list("ab"), ["g"]),  # a second instance 0
        instance(1, list("abc"), list("ab"), ["zz"]),  # an end pano outside the scan
        instance(2, list("pq"), list("p"), ["q"], scan="t"),  # a goal out of reach
        instance(3, list("abc"), list("ab"), ["g"], scan="nowhere"),  # a scan without a graph
        instance(4, list("abc"), list("ab"), ["g"]),
        instance(5, list("abc"), list("ab"), ["g"]),
        instance(6, list("abc"), list("ab"), ["g"]),  # no prediction
    ]
    preds = [
        submission(0, "ab"),
        submission(0, "abc"),  # a second prediction for 0
        submission(1, "ab"),
        submission(2, "p"),
        submission(3, "ab"),
        submission(4, ["b", "c"]),  # starts elsewhere
        submission(5, ["a", "zz"]),  # a viewpoint outside the scan
        submission(99, "ab"),  # no such instance
    ]
    result = ours(conn, instances, preds, "planner", tmp_path)
    got = sorted((d.stage, d.record, d.reason.replace(f"{tmp_path}/", "")) for d in result.dead)
    assert got == [
        ("dedupe", "#1", "duplicate instruction_id 0 (kept val.json #0)"),  # the join's wording of a bare id
        ("graph", "#4 (instr_id=3)", "nowhere_connectivity.json: " + got[1][2].split(": ", 1)[1]),
        ("match", "#1 (instr_id=0)", "duplicate prediction for instr_id '0' (kept p.json #0)"),
        ("match", "#7 (instr_id=99)", "unknown instr_id '99': not in the dataset"),
        ("rule", "#2 (instr_id=1)", "end pano 'zz' is not an included viewpoint of scan 's'"),
        ("rule", "#3 (instr_id=2)", "goal 'q' is unreachable from the start 'p' on scan 't'"),
        (
            "start",
            "#5 (instr_id=4)",
            "trajectory starts at 'b' but the reference path starts at 'a' (predictions made on another revision "
            "of the dataset?)",
        ),
        ("viewpoint", "#6 (instr_id=5)", "viewpoint 'zz' is not an included viewpoint of scan 's'"),
    ]
    assert "cannot read connectivity file for scan 'nowhere'" in got[1][2]
    assert result.missing == ["6"]
    assert result.table.column("instr_id").to_pylist() == ["0"]
    assert result.table.column("path").to_pylist() == [["a", "b"]]


def test_an_unknown_target_path_is_refused(tmp_path):
    with pytest.raises(ValueError, match="target path must be one of"):
        ours({"s": connectivity(COORDS, EDGES)}, *crafted(), "trusted_path", tmp_path)


# ----------------------------------------------------------------------------- random graphs
@st.composite
def worlds(draw):
    """A random connected scan, random instances (walks for the planner and player paths) and random agents."""
    n = draw(st.integers(3, 9))
    xy = draw(st.lists(st.tuples(st.integers(-6, 6), st.integers(-6, 6)), min_size=n, max_size=n, unique=True))
    names = [f"v{i}" for i in range(n)]
    edges = [(names[i], names[draw(st.integers(0, i - 1))]) for i in range(1, n)]  # a random spanning tree
    edges += draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=n))
    edges = [(u, v) for u, v in edges if u != v]
    adjacency = {v: sorted({b for a, b in edges if a == v} | {a for a, b in edges if b == v}) for v in names}

    def walk(start, steps):
        out = [start]
        for _ in range(steps):
            out.append(draw(st.sampled_from(adjacency[out[-1]] + [out[-1]])))  # a repeat now and then
        return out

    instances, preds = [], []
    for i in range(draw(st.integers(1, 6))):
        start = draw(st.sampled_from(names))
        planner = walk(start, draw(st.integers(0, 4)))
        player = walk(start, draw(st.integers(0, 6)))
        ends = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
        instances.append(instance(i, planner, player, ends))
        preds.append(submission(i, walk(start, draw(st.integers(0, 8)))))
    coords = {v: (x * 0.7, y * 1.3) for v, (x, y) in zip(names, xy)}
    return {"s": connectivity(coords, edges)}, instances, preds


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(), target=st.sampled_from(TARGET_PATHS))
def test_random_worlds_score_as_the_plain_evaluator_does(world, target):
    conn, instances, preds = world
    with tempfile.TemporaryDirectory() as folder:
        result = ours(conn, instances, preds, target, Path(folder))
    assert result.dead == [] and result.missing == []
    _, episodes = PlainCVDNEvaluation(conn, instances, target).score(preds)
    assert_agrees(result, episodes, rel=1e-12)


# ----------------------------------------------------------------------------- the shared agent
AGENT = "val-seq2seq-all-trusted_path-40-sample-imagenet"


@pytest.fixture(scope="module")
def cvdn(shared_data):
    return shared_data / "cvdn"


@pytest.fixture(scope="module")
def real(connectivity_dir):
    return Vocabulary.load(connectivity_dir), GraphStore(connectivity_dir)


def split_scores(cvdn, real, split: str, target: str) -> Scored:
    path = cvdn / "agent_outputs" / f"{AGENT}_{split}_iter_100.json"
    return score_files(str(cvdn / f"{split}.json"), str(path), *real, target)


@pytest.mark.parametrize("split, episodes", [("val_seen", 382), ("val_unseen", 907)])
def test_the_shared_agent_scores_what_its_training_log_reports(cvdn, real, split, episodes):
    with open(cvdn / "agent_outputs" / f"{AGENT}-log.csv", newline="") as f:
        (logged,) = [row for row in csv.DictReader(f) if row["iteration"] == "100"]
    assert task_for([file_format(str(cvdn / f"{split}.json"))]) is CVDN
    result = split_scores(cvdn, real, split, "trusted")
    assert result.dead == [] and result.missing == [] and result.table.num_rows == episodes
    summary = evaluator_summary({m: result.column(m) for m in EVALUATOR_KEYS})
    for key, value in summary.items():  # the seven columns of the official evaluator, and the copy's sc_dr
        assert value == pytest.approx(float(logged[f"{split} {key}"]), abs=1e-9), key


def test_the_shared_agent_per_episode_against_the_plain_evaluator(cvdn, real, connectivity_dir):
    instances = json.loads((cvdn / "val_seen.json").read_bytes())
    preds = json.loads((cvdn / "agent_outputs" / f"{AGENT}_val_seen_iter_100.json").read_bytes())
    scans = {r["scan"] for r in instances}
    conn = {s: json.loads(open(f"{connectivity_dir}/{s}_connectivity.json").read()) for s in scans}
    for target in ("planner", "player"):
        result = split_scores(cvdn, real, "val_seen", target)
        assert result.dead == []
        _, episodes = PlainCVDNEvaluation(conn, instances, target).score(preds)
        assert_agrees(result, episodes, rel=1e-12)
