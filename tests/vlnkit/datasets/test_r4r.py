import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vlnkit.navigation.test_graph import entry
from vlnkit.datasets.r4r import (
    PAIR_ID_BASE,
    JoinConfig,
    JoinError,
    build_joined,
    group_totals,
    heading_difference,
    join_paths,
    pair_path_id,
    path_problem,
    summarize,
)
from vlnkit.datasets.schemas import R4R_PATHS
from vlnkit.fixtures.grid import grid_connectivity, grid_paths
from vlnkit.navigation.graph import NavGraph


def line_graph():
    """a - b - c - d - e along +y, 2 m apart."""
    names = "abcde"
    entries = []
    for k, n in enumerate(names):
        row = [abs(k - j) == 1 for j in range(len(names))]
        entries.append(entry(n, (0, 2 * k, 0), row))
    return NavGraph.from_connectivity("line", entries)


def rec(pid, path, heading=0.0, instructions=("x",)):
    return {
        "path_id": pid,
        "path": list(path),
        "heading": heading,
        "distance": 2.0 * (len(path) - 1),
        "instructions": list(instructions),
        "scan": "line",
    }


P1 = rec(1, "ab", instructions=("A1 ", "A2 "))
P2 = rec(2, "cd", heading=2 * math.pi - 0.2, instructions=("B1",))
P3 = rec(3, "ed", heading=math.pi, instructions=("C1",))


def test_hand_worked_join():
    g = line_graph()
    joined, counts = join_paths(g, [P1, P2, P3])
    by_pair = {(j["first_path_id"], j["second_path_id"]): j for j in joined}
    assert set(by_pair) == {(1, 1), (1, 2), (2, 2), (2, 3), (3, 2), (3, 3)}
    assert counts == {"pairs_considered": 9, "filtered_distance": 3, "filtered_heading": 0, "joined": 6}
    j = by_pair[(1, 2)]
    assert j["path"] == ["a", "b", "c", "d"]
    assert j["distance"] == pytest.approx(6.0)
    assert j["instructions"] == ["A1 B1", "A2 B1"]  # N_A * N_B plain concatenations
    assert j["heading"] == P1["heading"]
    assert j["shortest_path"] == ["a", "b", "c", "d"] and j["shortest_path_distance"] == pytest.approx(6.0)
    assert j["path_id"] == 1 * PAIR_ID_BASE + 2
    assert by_pair[(3, 2)]["path"] == ["e", "d", "c", "d"]
    assert by_pair[(3, 2)]["shortest_path"] == ["e", "d"]
    assert by_pair[(1, 1)]["path"] == ["a", "b", "a", "b"]  # (A, A) is allowed by the rule


def test_connector_is_a_single_node_when_a_ends_where_b_starts():
    g = line_graph()
    j = build_joined(g, rec(1, "abc"), rec(2, "cde"))
    assert j["path"] == ["a", "b", "c", "d", "e"]
    assert j["join_distance"] == 0.0
    assert j["distance"] == pytest.approx(8.0)


def test_heading_rule_uses_simulator_convention_and_wraps():
    g = line_graph()
    # P1 ends travelling +y (heading 0); P2 starts at heading 2*pi - 0.2: 0.2 rad apart after wrapping.
    assert heading_difference(g, P1, P2) == pytest.approx(0.2)
    # The R4R generator measures atan2(dy, dx) (pi/2 here) and does not wrap.
    assert heading_difference(g, P1, P2, "r4r_generator") == pytest.approx(2 * math.pi - 0.2 - math.pi / 2)
    joined, counts = join_paths(g, [P1, P2], JoinConfig(heading_threshold=0.5))
    assert (1, 2) in {(j["first_path_id"], j["second_path_id"]) for j in joined}
    joined, counts = join_paths(g, [P1, P2], JoinConfig(heading_threshold=0.5, heading_convention="r4r_generator"))
    assert (1, 2) not in {(j["first_path_id"], j["second_path_id"]) for j in joined}
    assert counts["filtered_heading"] >= 1


def test_single_viewpoint_first_path_uses_its_own_heading():
    g = line_graph()
    assert heading_difference(g, rec(1, "b", heading=1.0), rec(2, "c", heading=1.5)) == pytest.approx(0.5)


def test_distance_threshold_is_inclusive_and_validated():
    g = line_graph()
    joined, _ = join_paths(g, [P1, P2], JoinConfig(distance_threshold=2.0))
    assert (1, 2) in {(j["first_path_id"], j["second_path_id"]) for j in joined}  # d(b, c) == 2.0
    joined, _ = join_paths(g, [P1, P2], JoinConfig(distance_threshold=1.99))
    assert (1, 2) not in {(j["first_path_id"], j["second_path_id"]) for j in joined}
    with pytest.raises(ValueError):
        JoinConfig(distance_threshold=-1)
    with pytest.raises(ValueError):
        JoinConfig(heading_convention="compass")


def test_empty_input_and_summary():
    joined, counts = join_paths(line_graph(), [])
    assert joined == [] and counts["pairs_considered"] == 0
    assert summarize({})["mean_distance"] is None
    totals = group_totals(pa.Table.from_pylist([build_joined(line_graph(), P1, P2)], schema=R4R_PATHS))
    assert summarize(totals) == {
        "paths": 1,
        "instructions": 2,
        "mean_distance": 6.0,
        "mean_shortest_path_distance": 6.0,
        "mean_steps": 4.0,
        "mean_shortest_path_steps": 4.0,
    }


def test_pair_ids_are_stable_and_bounded():
    assert pair_path_id(6488, 12) == 6488_000_012
    with pytest.raises(JoinError):
        pair_path_id(PAIR_ID_BASE, 0)
    with pytest.raises(JoinError):
        pair_path_id(-1, 0)


def brute_force_pairs(g, records, d_th):
    return {
        (a["path_id"], b["path_id"])
        for a in records
        for b in records
        if g.distance(a["path"][-1], b["path"][0]) <= d_th
    }


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), count=st.integers(0, 30), d_th=st.floats(0.0, 4.0))
def test_keyed_join_finds_exactly_the_pairs_of_the_all_pairs_rule(seed, count, d_th):
    entries = grid_connectivity(seed, size=6)
    g = NavGraph.from_connectivity("grid", entries)
    records = grid_paths(entries, "grid", count, seed)
    joined, counts = join_paths(g, records, JoinConfig(distance_threshold=d_th))
    assert {(j["first_path_id"], j["second_path_id"]) for j in joined} == brute_force_pairs(g, records, d_th)
    assert counts["pairs_considered"] - counts["filtered_distance"] == len(joined)
    for j in joined:
        assert all(g.is_edge(u, v) for u, v in zip(j["path"][:-1], j["path"][1:]) if u != v)
        assert j["distance"] == pytest.approx(g.path_length(j["path"]), abs=1e-9)
        assert j["distance"] >= j["shortest_path_distance"] - 1e-9


# ----------------------------------------------------------------------------- unusable reference paths
@pytest.mark.parametrize(
    "path, step",
    [
        (["a", "c"], 0),  # skips b
        (["a", "b", "d", "e"], 1),
        (["a", "b", "b", "c"], 1),  # a repeat is not an edge either
        (["e", "d", "c", "a"], 2),
        (["a", "e"], 0),
    ],
)
def test_a_step_that_is_not_an_edge_is_a_path_problem(path, step):
    g = line_graph()
    problem = path_problem(g, rec(1, path))
    assert problem is not None and problem.startswith(f"path step {step} -> {step + 1} ")
    assert "not an edge" in problem
    with pytest.raises(JoinError, match="not an edge"):
        join_paths(g, [rec(0, "ab"), rec(1, path)])


def test_adjacent_paths_and_single_viewpoints_have_no_problem():
    g = line_graph()
    for path in (["a"], ["a", "b"], ["e", "d", "c", "b", "a"], ["c", "d", "c"]):
        assert path_problem(g, rec(1, path)) is None
    assert "not an included viewpoint" in path_problem(g, rec(1, ["a", "zz"]))


@given(st.lists(st.integers(0, 4), min_size=1, max_size=8))
def test_path_problem_agrees_with_a_step_by_step_check(nodes):
    g = line_graph()
    path = ["abcde"[k] for k in nodes]
    steps = [k for k in range(len(nodes) - 1) if abs(nodes[k] - nodes[k + 1]) != 1]
    problem = path_problem(g, rec(1, path))
    assert (problem is None) == (not steps)
    if steps:
        assert problem.startswith(f"path step {steps[0]} -> ")


def test_real_r2r_train_and_val_paths_are_all_adjacent(r2r_dir, connectivity_dir):
    # The adjacency rule must not change R4R's join: no real R2R path has a jump.
    import json

    from vlnkit.navigation.graph import GraphStore

    store = GraphStore(connectivity_dir)
    for split in ("train", "val_seen", "val_unseen"):
        with open(r2r_dir / f"R2R_{split}.json") as f:
            records = json.load(f)
        problems = [(r["path_id"], path_problem(store.get(r["scan"]), r)) for r in records]
        assert [p for p in problems if p[1] is not None] == [], split
