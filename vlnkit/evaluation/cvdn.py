"""The metrics of CVDN's navigation-from-dialog-history task (NDH), as its official evaluator defines them.

The evaluator is `tasks/NDH/eval.py` of mmurray/cvdn (commit 0f0ca33, Python 2; cited as "eval.py:N"
below); the copy that wrote the shared agent's training log is weituo12321/PREVALENT_R2R
`tasks/NDH/eval.py` (commit 8f5bbba, Python 3), which differs only in printing and one added summary
value (`sgp` below). Per episode, with `start` and `goal` the first and last viewpoints of the target
path (`vlnkit.datasets.cvdn.target_path`), `planner_goal` the last of `planner_path`, q_1..q_n the
trajectory and d the shortest-path distance on the scan's graph:

| name | evaluator's summary key | per episode | eval.py |
| --- | --- | --- | --- |
| `pl` | `length` | sum of d(q_k, q_k+1), left to right (a repeat adds 0) | 81-94 |
| `ne` | `nav_error` | d(q_n, goal) | 65, 77 |
| `one` | (not summarized) | min over k of d(q_k, goal) | 47-55, 66, 78 |
| `sr` | `success_rate` | 1 if ne < 3 m (strictly) else 0 | 21, 110 |
| `osr` | `oracle success_rate` | 1 if one < 3 m else 0 | 111 |
| `spl` | `spl` | 0 without success; else sp / max(pl, sp) with sp = d(start, goal), and when sp = 0, 1 if pl = 0 else 0 | 95, 114-122 |
| `ops` | `oracle path_success_rate` | 1 if min over k of d(q_k, planner_goal) < 3 m else 0 | 64, 67, 79, 112 |
| `gp` | `dist_to_end_reduction` | min over end_panos e of d(start, e) minus min over e of d(q_n, e) (metres; goal progress) | 68-76, 80 |
| `sgp` | `sc_dr` (PREVALENT copy only) | gp when sr = 1, else 0 | PREVALENT eval.py 111, 133 |

The summary values are means over the episodes (eval.py:124-132). `pl`, `ne`, `one`, `sr`, `osr` and
`spl` are the toolkit's standard metrics with NE < 3 m as success (`success_rule="lt"`) and SPL's
reference the shortest distance from the trajectory's start (`spl_reference="shortest"`): the kernels'
SPL rule, sp / max(pl, sp) and 1 when both are 0, is the evaluator's, including its rule for sp = 0
(sp / pl = 0 when pl > 0). The trajectory must start at `start` (eval.py:62) and its moves must be graph
edges (eval.py:83-91, a repeat is no move): callers check both first and refuse the episode otherwise
(`first_non_edges`), as the evaluator stops with an error.

>>> import numpy as np
>>> d = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])  # three nodes on a line
>>> s = score_cvdn(d, [[0, 1, 2]], np.array([2]), [[1, 2]], [[0, 1]])
>>> {m: float(s[m][0]) for m in ("pl", "ne", "sr", "spl", "gp")}
{'pl': 1.0, 'ne': 1.0, 'sr': 1.0, 'spl': 1.0, 'gp': 1.0}
"""

from __future__ import annotations

import numpy as np

from vlnkit.evaluation.batch import means, score_batch, totals
from vlnkit.evaluation.common import check_distances

CVDN_THRESHOLD = 3.0  # eval.py:21, `self.error_margin`
CVDN_SUCCESS_RULE = "lt"  # eval.py:110-112: `i < self.error_margin`
STANDARD = ("pl", "ne", "one", "sr", "osr", "spl")  # the toolkit's metrics, under the evaluator's conventions
CVDN_EVAL_METRICS = (*STANDARD, "ops", "gp", "sgp")
# The evaluator's summary keys (eval.py:124-132; `sc_dr` only in the PREVALENT_R2R copy).
EVALUATOR_KEYS = {
    "pl": "length",
    "ne": "nav_error",
    "osr": "oracle success_rate",
    "sr": "success_rate",
    "spl": "spl",
    "ops": "oracle path_success_rate",
    "gp": "dist_to_end_reduction",
    "sgp": "sc_dr",
}


def first_non_edges(adjacent, offsets: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per path, the index k of its first move q_k -> q_k+1 that is neither a repeat nor a graph edge, or -1.

    Paths are flat: path r is values[offsets[r]:offsets[r + 1]]. `adjacent` is one scan's (n, n) boolean
    adjacency (`NavGraph.adjacent`), or `adjacent(episode, a, b)` giving whether a[i] and b[i] are joined in
    the scan of episode[i]. The evaluator raises at such a move (eval.py:83-91): the episode has no score.

        >>> adj = np.array([[False, True, False], [True, False, True], [False, True, False]])
        >>> first_non_edges(adj, np.array([0, 4, 7, 8]), np.array([0, 1, 1, 2, 0, 0, 2, 1])).tolist()
        [-1, 1, -1]
    """
    offsets, values = np.asarray(offsets, np.int64), np.asarray(values, np.int64)
    out = np.full(len(offsets) - 1, -1, np.int64)
    if len(values) < 2:
        return out
    episode = np.repeat(np.arange(len(out)), np.diff(offsets))[:-1]
    u, v = values[:-1], values[1:]
    within = np.ones(len(u), bool)
    within[offsets[1:-1] - 1] = False  # the last node of a path and the first of the next are no move
    if callable(adjacent):
        joined = adjacent(episode, u, v)
    else:
        joined = np.asarray(adjacent, bool)[u, v]
    bad = np.flatnonzero(within & (u != v) & ~joined)
    first_bad, at = np.unique(episode[bad], return_index=True)
    out[first_bad] = bad[at] - offsets[first_bad]
    return out


def matrix_distance(distances: np.ndarray):
    """The `Distance` of one scan's (n, n) matrix: d(a, b) = distances[a, b], whatever the episode."""
    distances = check_distances(np.ascontiguousarray(distances, dtype=np.float64))
    return lambda episode, a, b: distances[a, b]


def nearest(distance, offsets: np.ndarray, values: np.ndarray, fixed: np.ndarray, *, towards: bool = True):
    """Per episode r, the least distance between its nodes values[offsets[r]:offsets[r + 1]] (at least one)
    and its node fixed[r]: d(v, fixed[r]) when `towards` (a trajectory's nodes to a goal, eval.py:47-55),
    else d(fixed[r], v) (a start or stop to the end panos, eval.py:70-76). The orientation is the
    evaluator's, as each row of a distance matrix is its own Dijkstra run.

    `distance(episode, a, b)` gives d(a[i], b[i]) in the scan of episode[i], for arrays of nodes
    (`matrix_distance` for one scan; the score job gathers from its flat scan tables).

        >>> d = matrix_distance(np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]]))
        >>> nearest(d, np.array([0, 2, 3]), np.array([0, 1, 2]), np.array([2, 0])).tolist()
        [1.0, 2.0]
    """
    offsets = np.asarray(offsets, np.int64)
    lengths = np.diff(offsets)
    if not len(lengths):
        return np.zeros(0)
    if lengths.min() < 1:
        raise ValueError(f"episode #{int(np.argmin(lengths))} has no nodes to take the nearest of")
    episode = np.repeat(np.arange(len(lengths)), lengths)
    values, other = np.asarray(values, np.int64), np.asarray(fixed, np.int64)[episode]
    d = distance(episode, values, other) if towards else distance(episode, other, values)
    return np.minimum.reduceat(d, offsets[:-1])


def cvdn_success(distance_to_goal: np.ndarray) -> np.ndarray:
    """1.0 where a distance to the goal is below 3 m, strictly (eval.py:21, 110-112), else 0.0."""
    return (np.asarray(distance_to_goal) < CVDN_THRESHOLD).astype(np.float64)


def cvdn_extras(distance, starts, finals, planner_goals, success, queries, end_panos) -> dict[str, np.ndarray]:
    """The CVDN metrics the toolkit's kernel does not compute: `ops`, `gp` and `sgp` (see the module docstring).

    `starts`, `finals`, `planner_goals`: a node per episode; `success`: each episode's `sr`; `queries` and
    `end_panos`: (offsets, values) of the trajectories' and goal regions' nodes; `distance` as in `nearest`.
    """
    ops = cvdn_success(nearest(distance, *queries, planner_goals))
    near_start = nearest(distance, *end_panos, starts, towards=False)
    near_final = nearest(distance, *end_panos, finals, towards=False)
    with np.errstate(invalid="ignore"):  # inf - inf where no end pano is in reach: NaN, undefined
        gp = near_start - near_final
    return {"ops": ops, "gp": gp, "sgp": np.where(np.asarray(success) > 0, gp, 0.0)}


def flat_indices(paths) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values) of a list of node-index paths: path r is values[offsets[r]:offsets[r + 1]]."""
    lengths = np.fromiter(map(len, paths), np.int64, count=len(paths))
    offsets = np.zeros(len(paths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = np.concatenate([np.asarray(p, np.int64).reshape(-1) for p in paths]) if len(paths) else np.zeros(0)
    return offsets, values.astype(np.int64)


def score_cvdn(distances: np.ndarray, targets, planner_goals, end_panos, queries) -> dict[str, np.ndarray]:
    """Every CVDN metric (`CVDN_EVAL_METRICS`) of B episodes of one scan: {name: (B,) float64 array}.

    `targets`: the target paths (node indices; their first node is the start, their last the goal);
    `planner_goals`: (B,) the last node of each planner path; `end_panos`: per episode a non-empty list of
    nodes (the goal region); `queries`: the trajectories, each starting at its target's start and moving
    along edges (check with `first_non_edges`). Paths are lists of node indices.
    Unreachable goals give inf distances (and 0 rates), as the toolkit's metrics do, and goal progress is
    NaN when no end pano is in reach of the start; the evaluator raises on both (its distance tables hold
    reachable pairs only), and the score job refuses such pairs (`vlnkit.scoring.cvdn`).
    """
    planner_goals = np.asarray(planner_goals, np.int64).reshape(-1)
    b = len(targets)
    if len(queries) != b or len(planner_goals) != b or len(end_panos) != b:
        raise ValueError(
            f"{b} targets, {len(queries)} queries, {len(planner_goals)} planner goals and "
            f"{len(end_panos)} end-pano lists: one of each per episode"
        )
    if b and min(map(len, end_panos)) < 1:
        raise ValueError("an episode has no end panos; goal progress needs at least one")
    rule = {"threshold": CVDN_THRESHOLD, "success_rule": CVDN_SUCCESS_RULE, "spl_reference": "shortest"}
    scores = score_batch(distances, targets, queries, metrics=STANDARD, keep_repeats=True, **rule)
    q_offsets, q_values = flat_indices(queries)
    starts = np.asarray([t[0] for t in targets], np.int64)
    finals = q_values[q_offsets[1:] - 1] if b else np.zeros(0, np.int64)
    extras = cvdn_extras(
        matrix_distance(distances),
        starts,
        finals,
        planner_goals,
        scores["sr"],
        (q_offsets, q_values),
        flat_indices(end_panos),
    )
    return {**scores, **extras}


def evaluator_summary(scores: dict[str, np.ndarray]) -> dict[str, float]:
    """The summary the evaluator prints (eval.py:124-132, its keys), from per-episode `score_cvdn` values:
    each a mean over the episodes, as an exact sum divided once (`vlnkit.evaluation.batch.means`).

        >>> evaluator_summary({m: np.array([1.0, 0.0]) for m in EVALUATOR_KEYS})["success_rate"]
        0.5
    """
    mean, _ = means(totals({m: scores[m] for m in EVALUATOR_KEYS}), metrics=tuple(EVALUATOR_KEYS))
    return {EVALUATOR_KEYS[m]: mean[m] for m in EVALUATOR_KEYS}
