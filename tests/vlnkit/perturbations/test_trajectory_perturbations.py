"""Trajectory perturbations: hand-checked graphs, and property tests that every output is a walk
satisfying its method's constraints, checked with networkx and brute force (not the module's code)."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.fixtures.grid import grid_connectivity
from vlnkit.navigation.graph import NavGraph
from vlnkit.perturbations.compat import NotApplicable
from vlnkit.perturbations.trajectories import (
    TrajectoryPerturbation,
    path_reversal,
    random_walk,
    viewpoint_swap,
)


def graph_from_edges(names: str, edges: list[str]) -> NavGraph:
    vps = tuple(names)
    idx = {v: i for i, v in enumerate(vps)}
    pairs = np.array(sorted(tuple(sorted((idx[a], idx[b]))) for a, b in edges), dtype=np.int64).reshape(-1, 2)
    positions = np.array([[i, 0.0, 0.0] for i in range(len(vps))])
    return NavGraph("hand", vps, positions, pairs)


SQUARE = graph_from_edges("abcd", ["ab", "bc", "cd", "da"])
LINE = graph_from_edges("ab", ["ab"])


def rng(seed=0):
    return np.random.default_rng(seed)


def test_square_examples():
    assert viewpoint_swap(SQUARE, list("abc"), rng()).path == tuple("adc")
    assert viewpoint_swap(SQUARE, list("abc"), rng()).changed_positions == (1,)
    assert path_reversal(SQUARE, list("abc"), rng()).path == tuple("cba")
    outs = {random_walk(SQUARE, list("abc"), rng(s)).path for s in range(40)}
    # keep a,b: lengths 2..4 without revisits -> ab, abcd; keep b,c: bc, dabc is wrong (keeps c last), cba... enumerate
    assert outs == {("a", "b"), ("a", "b", "c", "d"), ("b", "c"), ("d", "a", "b", "c")}


def test_not_applicable_cases():
    assert random_walk(LINE, ["a", "b"], rng()) == NotApplicable("random_walk", "dead_end")
    assert random_walk(LINE, ["a"], rng()) == NotApplicable("random_walk", "path_too_short")
    assert path_reversal(SQUARE, ["a", "b", "a"], rng()) == NotApplicable("path_reversal", "unchanged")
    assert viewpoint_swap(LINE, ["a", "b"], rng()) == NotApplicable("viewpoint_swap", "no_replacement")
    assert viewpoint_swap(SQUARE, list("ac"), rng()) == NotApplicable("viewpoint_swap", "source_not_a_walk")


# ---------------------------------------------------------------------------- properties
GRIDS = {s: NavGraph.from_connectivity(f"g{s}", grid_connectivity(s, 6)) for s in range(4)}
NX = {s: nx.Graph([(g.viewpoints[a], g.viewpoints[b]) for a, b in g.edges]) for s, g in GRIDS.items()}


def simple_path(data, s):
    """A random simple walk on grid s (drawn by hypothesis, independently of the module)."""
    g = NX[s]
    nodes = sorted(g.nodes)
    path = [data.draw(st.sampled_from(nodes))]
    for _ in range(data.draw(st.integers(0, 8))):
        options = sorted(set(g[path[-1]]) - set(path))
        if not options:
            break
        path.append(data.draw(st.sampled_from(options)))
    return path


def assert_walk(s, path):
    assert all(NX[s].has_edge(a, b) for a, b in zip(path[:-1], path[1:])), path


@settings(max_examples=200, deadline=None)
@given(st.data(), st.sampled_from(sorted(GRIDS)), st.integers(0, 2**31))
def test_random_walk_properties(data, s, seed):
    path = simple_path(data, s)
    out = random_walk(GRIDS[s], path, rng(seed))
    if isinstance(out, NotApplicable):
        assert len(path) < 2 or out.reason == "dead_end"
        return
    new = list(out.path)
    assert_walk(s, new)
    assert len(set(new)) == len(new)  # no revisits
    assert abs(len(new) - len(path)) <= 1 and new != path
    kept = new[:2] == path[:2] if out.operation == "keep_first_two" else new[-2:] == path[-2:]
    assert kept and len(set(new) & set(path)) >= 2
    assert out.changed_positions == tuple(i for i, v in enumerate(new) if i >= len(path) or path[i] != v)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.sampled_from(sorted(GRIDS)), st.integers(0, 2**31))
def test_viewpoint_swap_is_one_of_all_valid_swaps(data, s, seed):
    path = simple_path(data, s)
    g = NX[s]
    # Brute force: every single-position replacement by a viewpoint off the path that keeps all steps edges.
    valid = set()
    for i in range(len(path)):
        for v in g.nodes:
            if v in path:
                continue
            new = path[:i] + [v] + path[i + 1 :]
            if len(path) > 1 and all(g.has_edge(a, b) for a, b in zip(new[:-1], new[1:])):
                valid.add(tuple(new))
    out = viewpoint_swap(GRIDS[s], path, rng(seed))
    if isinstance(out, NotApplicable):
        assert not valid
        return
    assert out.path in valid
    assert_walk(s, list(out.path))
    (i,) = out.changed_positions
    assert out.path[i] != path[i]


@settings(max_examples=100, deadline=None)
@given(st.data(), st.sampled_from(sorted(GRIDS)))
def test_path_reversal_properties(data, s):
    path = simple_path(data, s)
    out = path_reversal(GRIDS[s], path, rng())
    if len(path) < 2:
        assert isinstance(out, NotApplicable)
        return
    assert list(out.path) == path[::-1]
    assert_walk(s, list(out.path))


@pytest.mark.real_data
def test_real_val_seen_paths(r2r_dir, connectivity_dir):
    import json

    from vlnkit.navigation.graph import GraphStore

    store = GraphStore(connectivity_dir)
    records = json.loads((r2r_dir / "R2R_val_seen.json").read_text())
    counts = {"random_walk": 0, "path_reversal": 0, "viewpoint_swap": 0}
    for r in records:
        graph = store.get(r["scan"])
        g = nx.Graph([(graph.viewpoints[a], graph.viewpoints[b]) for a, b in graph.edges])
        for func in (random_walk, path_reversal, viewpoint_swap):
            out = func(graph, r["path"], rng(r["path_id"]))
            if isinstance(out, TrajectoryPerturbation):
                counts[out.method] += 1
                assert all(g.has_edge(a, b) for a, b in zip(out.path[:-1], out.path[1:]))
                assert list(out.path) != r["path"]
    assert counts["random_walk"] == counts["path_reversal"] == len(records) == 340
    assert counts["viewpoint_swap"] >= 0.95 * len(records)
