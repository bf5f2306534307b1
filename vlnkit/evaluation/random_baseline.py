"""The R2R paper's random baseline (random walks scored like agents), generated in vectorized batches.

For each evaluation episode: start at the reference start, draw the number of steps from the
edge counts of the training split's reference paths (one count per path), and at each step move
to a uniformly chosen neighbour. Walks of many episodes of one scan advance together, one numpy
step for all of them, so a million walks take seconds.

Determinism: an episode's walks depend only on (--seed, its instr_id, its number of walks), never
on which worker or bundle generates them. A start viewpoint without neighbours stays put (its walk
is the single start node after repeats are collapsed).
"""

from __future__ import annotations

import numpy as np

from vlnkit.hashing import stable_rng
from vlnkit.navigation.graph import NavGraph


def step_pool(records) -> np.ndarray:
    """Edge counts (len(path) - 1) of the reference paths, one per distinct path_id, sorted by path_id."""
    counts = {r["path_id"]: len(r["path"]) - 1 for r in records}
    return np.asarray([counts[k] for k in sorted(counts)], dtype=np.int64)


def allocate(num_trajectories: int, episodes: int) -> np.ndarray:
    """How many walks each of `episodes` episodes gets: equal shares, the first ones one more."""
    if episodes <= 0:
        return np.zeros(0, dtype=np.int64)
    base, extra = divmod(int(num_trajectories), episodes)
    return base + (np.arange(episodes) < extra).astype(np.int64)


def neighbour_table(graph: NavGraph) -> tuple[np.ndarray, np.ndarray]:
    """(n, max_degree) padded neighbour indices and (n,) degrees, for vectorized walking."""
    nbrs = graph.neighbours
    degree = np.fromiter((len(x) for x in nbrs), dtype=np.int64, count=len(nbrs))
    table = np.zeros((len(nbrs), max(int(degree.max(initial=0)), 1)), dtype=np.int64)
    for k, row in enumerate(nbrs):
        table[k, : len(row)] = row
    return table, degree


def draw(seed: int, instr_id: str, count: int, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An episode's (steps (count,), uniforms (count, max(pool))): all its random numbers, in one place."""
    rng = stable_rng(instr_id, seed=seed)  # the episode's own stream: same on every runner and worker
    steps = pool[rng.integers(0, len(pool), size=count)]
    uniforms = rng.random((count, int(pool.max(initial=0))))
    return steps, uniforms


def walk(table: np.ndarray, degree: np.ndarray, starts, steps, uniforms) -> tuple[np.ndarray, np.ndarray]:
    """Random walks, all advanced together: (padded (B, max_steps + 1) node indices, lengths (B,)).

    At step t a walk with t < steps[b] moves to neighbour floor(uniforms[b, t] * degree) of its node.
    """
    starts = np.asarray(starts, dtype=np.int64)
    steps = np.asarray(steps, dtype=np.int64)
    width = uniforms.shape[1]
    out = np.empty((len(starts), width + 1), dtype=np.int64)
    out[:, 0] = cur = starts
    for t in range(width):
        deg = degree[cur]
        pick = np.minimum((uniforms[:, t] * deg).astype(np.int64), np.maximum(deg - 1, 0))
        cur = np.where((t < steps) & (deg > 0), table[cur, pick], cur)
        out[:, t + 1] = cur
    return out, steps + 1
