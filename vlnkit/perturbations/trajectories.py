"""Trajectory perturbations on a navigation graph (docs/design.md): random walk, path reversal, viewpoint swap.

Every output is a walk on the graph (each step an edge) that differs from the source path; a method
that cannot produce one (too short a path, a dead end, no common neighbour) returns `NotApplicable`
with the reason. Paths are lists of viewpoint ids; work happens on the graph's index arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.navigation.graph import NavGraph
from vlnkit.perturbations.compat import NotApplicable

# Bound on the backtracking search of one random walk (node expansions); dense graphs never get close.
MAX_EXPANSIONS = 5000


@dataclass(frozen=True)
class TrajectoryPerturbation:
    method: str
    operation: str
    path: tuple[str, ...]
    changed_positions: tuple[int, ...]  # indices into `path` whose viewpoint differs from the source there


def is_walk(graph: NavGraph, path) -> bool:
    """Every consecutive pair of viewpoints is a graph edge (a single viewpoint is a walk)."""
    idx = graph.indices(path)
    return all(graph.is_edge(graph.viewpoints[a], graph.viewpoints[b]) for a, b in zip(idx[:-1], idx[1:]))


def _changed(new: list[int], old: list[int]) -> tuple[int, ...]:
    return tuple(i for i, v in enumerate(new) if i >= len(old) or old[i] != v)


def _result(graph: NavGraph, method: str, operation: str, new: list[int], old: list[int]):
    if list(new) == list(old):
        return NotApplicable(method, "unchanged")
    return TrajectoryPerturbation(method, operation, tuple(graph.viewpoints[k] for k in new), _changed(new, old))


def _source(graph: NavGraph, path, method: str, min_len: int):
    """Index list of the source path, or NotApplicable when it is too short or not a walk."""
    idx = [int(k) for k in graph.indices(path)]  # GraphError for an unknown viewpoint
    if len(idx) < min_len:
        return NotApplicable(method, "path_too_short")
    if not is_walk(graph, path):
        return NotApplicable(method, "source_not_a_walk")
    return idx


def _extend(neighbours, walk: list[int], target: int, avoid: list[int], rng: np.random.Generator) -> list[int] | None:
    """Extend `walk` to `target` viewpoints by random edge traversals without revisits (backtracking
    depth-first search in random neighbour order); never returns `avoid`. None when impossible."""
    if len(walk) >= target:
        return list(walk) if len(walk) == target and walk != avoid else None
    visited = set(walk)
    stack = [iter(rng.permutation(neighbours[walk[-1]]))]
    expansions = 0
    while stack and expansions < MAX_EXPANSIONS:
        if len(walk) == target:
            if walk != avoid:
                return list(walk)
            stack.pop()
            visited.discard(walk.pop())
            continue
        nxt = next((int(v) for v in stack[-1] if int(v) not in visited), None)
        if nxt is None:
            stack.pop()
            if len(stack) == 0 or len(walk) <= 2:  # the two kept viewpoints are never backtracked over
                return None
            visited.discard(walk.pop())
            continue
        expansions += 1
        walk.append(nxt)
        visited.add(nxt)
        stack.append(iter(rng.permutation(neighbours[nxt])))
    return list(walk) if len(walk) == target and walk != avoid else None


def random_walk(graph: NavGraph, path, rng: np.random.Generator):
    """Keep the first two or the last two viewpoints and resample the rest by random edge traversals:
    length within +-1 step of the source, no revisited viewpoint (so at least the two kept are shared).
    The side and the length are drawn at random; when a draw is impossible the other options are tried."""
    method = "random_walk"
    idx = _source(graph, path, method, 2)
    if isinstance(idx, NotApplicable):
        return idx
    if len(set(idx[:2])) < 2:
        return NotApplicable(method, "source_not_a_walk")
    n = len(idx)
    sides = ["first", "last"] if rng.random() < 0.5 else ["last", "first"]
    lengths = [int(x) for x in rng.permutation([n - 1, n, n + 1]) if x >= 2]
    for side in sides:
        oriented = idx if side == "first" else idx[::-1]
        for target in lengths:
            walk = _extend(graph.neighbours, oriented[:2], target, oriented, rng)
            if walk is not None:
                new = walk if side == "first" else walk[::-1]
                return _result(graph, method, f"keep_{side}_two", new, idx)
    return NotApplicable(method, "dead_end")


def path_reversal(graph: NavGraph, path, rng: np.random.Generator | None = None):
    """The same viewpoints in reverse order."""
    method = "path_reversal"
    idx = _source(graph, path, method, 2)
    if isinstance(idx, NotApplicable):
        return idx
    return _result(graph, method, "reverse", idx[::-1], idx)


def swap_candidates(graph: NavGraph, idx: list[int], position: int) -> np.ndarray:
    """Viewpoints that can replace idx[position]: adjacent to every neighbour of it on the path, not on the path."""
    nb = graph.neighbours
    sides = [idx[j] for j in (position - 1, position + 1) if 0 <= j < len(idx)]
    if not sides:
        return np.empty(0, dtype=np.int64)
    common = nb[sides[0]]
    for s in sides[1:]:
        common = np.intersect1d(common, nb[s], assume_unique=True)
    return np.setdiff1d(common, np.asarray(idx), assume_unique=False)


def viewpoint_swap(graph: NavGraph, path, rng: np.random.Generator):
    """Replace one viewpoint by another adjacent to its neighbours on the path, so every step stays an edge.
    The position is drawn among those that have a replacement, then the replacement uniformly."""
    method = "viewpoint_swap"
    idx = _source(graph, path, method, 2)
    if isinstance(idx, NotApplicable):
        return idx
    options = [(i, c) for i in range(len(idx)) if len(c := swap_candidates(graph, idx, i))]
    if not options:
        return NotApplicable(method, "no_replacement")
    position, candidates = options[int(rng.integers(len(options)))]
    new = list(idx)
    new[position] = int(candidates[int(rng.integers(len(candidates)))])
    return _result(graph, method, "swap", new, idx)


PERTURB = {"random_walk": random_walk, "path_reversal": path_reversal, "viewpoint_swap": viewpoint_swap}
