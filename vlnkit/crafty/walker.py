"""Crafty's Walker: the entry and exit heading at each panorama of a path, and the motions between them.

A path of n viewpoints gives 2n - 1 motions (appendix B.2; google-research/crafty `walk.py`,
`get_motions`): at each viewpoint a turn in place from the entry heading to the exit heading, then the
step to the next viewpoint along the exit heading, and at the last viewpoint a motion in place along its
entry heading. The first entry heading is the record's `heading`; an exit heading is the heading of the
edge to the next viewpoint (the graph's positions); the last viewpoint exits as it entered.

Motions are arrays, not objects: `source[m]`, `goal[m]` (positions in the path) and `heading[m]`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.crafty.wheel import heading_to
from vlnkit.navigation.graph import NavGraph


class WalkError(ValueError):
    """The path cannot be walked on the scan's graph (unknown viewpoint, missing edge, empty path)."""


@dataclass(frozen=True, eq=False)
class Walk:
    scan: str
    path: tuple[str, ...]
    nodes: np.ndarray  # (n,) graph indices
    positions: np.ndarray  # (n, 3)
    enter: np.ndarray  # (n,) entry heading per viewpoint
    exit: np.ndarray  # (n,) exit heading per viewpoint
    source: np.ndarray  # (2n-1,) path position a motion starts at
    goal: np.ndarray  # (2n-1,) path position it ends at
    heading: np.ndarray  # (2n-1,) its heading

    @property
    def steps(self) -> int:
        return len(self.source)


def walk(graph: NavGraph, path, heading: float) -> Walk:
    """Walk `path` (viewpoint ids) from the initial `heading`; WalkError if the graph does not connect it."""
    path = tuple(path)
    if not path:
        raise WalkError(f"scan {graph.scan!r}: empty path")
    problem = graph.walk_problem(list(path))
    if problem is not None:
        raise WalkError(problem)
    nodes = graph.indices(path)
    pos = graph.positions[nodes]
    n = len(path)
    out_headings = heading_to(pos[:-1], pos[1:]) if n > 1 else np.zeros(0)
    enter = np.concatenate([[float(heading)], out_headings])
    exit_ = np.concatenate([out_headings, enter[-1:]])
    # motion 2i: turn in place at i (enter_i); motion 2i+1: step i -> i+1 (exit_i); last: in place at n-1.
    m = 2 * n - 1
    k = np.arange(m)
    source = k // 2
    goal = np.minimum((k + 1) // 2, n - 1)
    head = np.where(k % 2 == 0, enter[source], exit_[source])
    return Walk(graph.scan, path, nodes, pos, enter, exit_, source, goal, head)
