"""join_bucket: every rule of the match, on hand-made buckets, with the one wording of each dead letter."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.datasets.columns import Paths, PredictionBatch, ReferenceBatch
from vlnkit.scoring.join import instr_ids, join_bucket


def refs(vocab, rows, rank=0, first_k=0):
    """ReferenceBatch of (path_id, scan, path, instructions) rows, numbered 0.. in `rank`."""
    n = len(rows)
    return ReferenceBatch(
        np.full(n, rank, np.int64),
        np.arange(n, dtype=np.int64),
        np.array([r[0] for r in rows], np.int64),
        np.array([r[1] for r in rows]),
        np.array([r[3] for r in rows], np.int64),
        Paths.from_lists([r[2] for r in rows], vocab),
        first_k=np.full(n, first_k, np.int64),
    )


def preds(vocab, agent, rows, rank=0):
    """PredictionBatch of (path_id, k, path) rows, numbered 0.. in `rank`."""
    n = len(rows)
    return PredictionBatch(
        agent,
        np.full(n, rank, np.int64),
        np.arange(n, dtype=np.int64),
        np.array([r[0] for r in rows], np.int64),
        np.array([r[1] for r in rows], np.int64),
        Paths.from_lists([r[2] for r in rows], vocab),
    )


def dead(join, agent=None):
    letters = join.dead if agent is None else join.agents[agent].dead
    return sorted((d.stage, d.source, d.record, d.reason) for d in letters)


def test_matching_missing_and_duplicates(world):
    graphs, vocab = world
    data = refs(vocab, [(1, "s", ["s0", "s1", "s2"], 2), (2, "t", ["t0", "t3"], 1)])
    first = preds(vocab, "a", [(1, 0, ["s0", "s1"]), (1, 1, ["s0"]), (9, 0, ["s0"]), (1, 5, ["s0"])])
    second = preds(vocab, "a", [(1, 0, ["s0", "s5"])], rank=1)  # a later file: loses to the first
    join = join_bucket([second, data, first], {"a": ["p0.json", "p1.json"]}, ["d.json"], vocab, graphs)
    match = join.agents["a"]
    assert join.episode_ids(match.episodes).to_pylist() == ["1_0", "1_1"]
    assert match.queries.values.tolist() == [0, 1, 0]  # node indices of scan s
    assert join.episode_ids(match.missing).to_pylist() == ["2_0"] == join.episode_ids(match.unusable).to_pylist()
    assert dead(join, "a") == [
        ("match", "p0.json", "#2 (instr_id=9_0)", "unknown instr_id '9_0': not in the dataset"),
        ("match", "p0.json", "#3 (instr_id=1_5)", "unknown instr_id '1_5': not in the dataset"),
        ("match", "p1.json", "#0 (instr_id=1_0)", "duplicate prediction for instr_id '1_0' (kept p0.json #0)"),
    ]


def test_dataset_duplicates_keep_the_first_file_then_the_first_record(world):
    graphs, vocab = world
    later = refs(vocab, [(1, "s", ["s0", "s1"], 1)], rank=1)
    earlier = refs(vocab, [(3, "s", ["s2"], 1), (1, "s", ["s3", "s4"], 1), (1, "s", ["s5"], 1)], rank=0)
    join = join_bucket([later, earlier], {}, ["a.json", "b.json"], vocab, graphs)
    assert join.references.path_id.tolist() == [1, 3]
    assert join.reference_nodes.values.tolist() == [3, 4, 2]  # the kept path_id 1 is a.json #1
    assert dead(join) == [
        ("dedupe", "a.json", "#2", "duplicate path_id 1 (kept a.json #1)"),
        ("dedupe", "b.json", "#0", "duplicate path_id 1 (kept a.json #1)"),
    ]


def test_graph_reference_viewpoint_and_start_problems_leave_episodes_unusable(world):
    graphs, vocab = world
    data = refs(
        vocab,
        [
            (1, "s", ["s0", "s1"], 1),
            (2, "gone", ["g0"], 1),  # a scan whose graph does not load
            (3, "t", ["t0", "s1"], 1),  # a reference path that leaves its scan
            (4, "s", ["s2", "s3"], 1),
            (5, "s", ["s0"], 1),
        ],
    )
    p = preds(
        vocab,
        "a",
        [(1, 0, ["s0", "nowhere"]), (2, 0, ["g0"]), (3, 0, ["t0"]), (4, 0, ["s0", "s3"]), (5, 0, ["s0", "s0", "s1"])],
    )
    join = join_bucket([data, p], {"a": ["p.json"]}, ["d.json"], vocab, graphs)
    match = join.agents["a"]
    assert join.episode_ids(match.episodes).to_pylist() == ["5_0"]
    assert join.episode_ids(match.unusable).to_pylist() == ["1_0", "2_0", "3_0", "4_0"]
    assert len(match.missing) == 0
    stages = [(d[0], d[2]) for d in dead(join, "a")]
    assert stages == [
        ("graph", "#1 (instr_id=2_0)"),
        ("reference", "#2 (instr_id=3_0)"),
        ("start", "#3 (instr_id=4_0)"),
        ("viewpoint", "#0 (instr_id=1_0)"),
    ]
    reasons = {d[0]: d[3] for d in dead(join, "a")}
    assert reasons["viewpoint"] == "viewpoint 'nowhere' is not an included viewpoint of scan 's'"
    assert (
        reasons["reference"]
        == "reference path of '3_0' is unusable: viewpoint 's1' is not an included viewpoint of scan 't'"
    )
    assert reasons["start"].startswith("trajectory starts at 's0' but the reference path starts at 's2'")
    assert "gone" in reasons["graph"]


def test_rxr_instruction_ids_match_only_rxr_lines(world):
    graphs, vocab = world
    guide = refs(vocab, [(26, "s", ["s0", "s1"], 1)], first_k=-1)  # an RxR guide line: instruction_id 26
    r2r = refs(vocab, [(27, "s", ["s0"], 1)], rank=1)
    p = preds(vocab, "a", [(26, -1, ["s0"]), (26, 0, ["s0"]), (27, -1, ["s0"]), (27, 0, ["s0"])])
    join = join_bucket([guide, r2r, p], {"a": ["p.json"]}, ["g.jsonl", "r.json"], vocab, graphs)
    assert join.episode_ids(join.agents["a"].episodes).to_pylist() == ["26", "27_0"]
    assert [d[3] for d in dead(join, "a")] == [
        "unknown instr_id '26_0': not in the dataset",
        "unknown instr_id '27': not in the dataset",
    ]


def test_agents_are_matched_independently(world):
    graphs, vocab = world
    data = refs(vocab, [(1, "s", ["s0", "s1"], 2)])
    a = preds(vocab, "a", [(1, 0, ["s0"])])
    b = preds(vocab, "b", [(1, 1, ["s0"]), (1, 1, ["s0", "s1"])])
    join = join_bucket([data, b, a], {"a": ["a.json"], "b": ["b.json"]}, ["d.json"], vocab, graphs)
    assert join.episode_ids(join.agents["a"].episodes).to_pylist() == ["1_0"]
    assert join.episode_ids(join.agents["b"].episodes).to_pylist() == ["1_1"]
    assert join.episode_ids(join.agents["a"].missing).to_pylist() == ["1_1"]
    assert [d[0] for d in dead(join, "b")] == ["match"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(-1, 2**63 - 1)), max_size=30))
def test_instr_ids_are_the_text_python_writes(pairs):
    pid = np.array([p for p, _ in pairs], np.int64)
    k = np.array([k for _, k in pairs], np.int64)
    assert instr_ids(pid, k).to_pylist() == [str(p) if k == -1 else f"{p}_{k}" for p, k in pairs]


def test_a_prediction_of_a_refused_dataset_record_is_told_so(world):
    from vlnkit.datasets.columns import RefusedReferences
    from vlnkit.io.dead_letters import RecordError

    graphs, vocab = world
    data = refs(vocab, [(1, "s", ["s0", "s1"], 1)])
    refused = RefusedReferences.of(
        [RecordError("g.jsonl", "#4 (instruction_id=26)", "'language' must be ...", key=(26, -1)),
         RecordError("d.json", "#2 (path_id=7)", "'heading' must be ...", key=(7, 0)),
         RecordError("d.json", "#3", "expected a JSON object, got list")]  # no key: nothing to tell
    )  # fmt: skip
    p = preds(vocab, "a", [(26, -1, ["s0"]), (7, 2, ["s0"]), (26, 0, ["s0"]), (8, 0, ["s0"])])
    join = join_bucket([data, refused, p], {"a": ["p.json"]}, ["d.json"], vocab, graphs)
    reasons = [d[3] for d in dead(join, "a")]
    assert reasons == [
        "instr_id '26' has no episode: its dataset record was refused (g.jsonl #4 (instruction_id=26); see that dead letter)",
        "instr_id '7_2' has no episode: its dataset record was refused (d.json #2 (path_id=7); see that dead letter)",
        "unknown instr_id '26_0': not in the dataset",  # an R2R id never matches an RxR line
        "unknown instr_id '8_0': not in the dataset",
    ]
