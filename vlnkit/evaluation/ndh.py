"""The metrics of CVDN's navigation-from-dialog-history task (NDH), as its official evaluator defines them.

The evaluator is `tasks/NDH/eval.py` of mmurray/cvdn (commit 0f0ca33, Python 2; cited as "eval.py:N"
below); the copy that wrote the shared agent's training log is weituo12321/PREVALENT_R2R
`tasks/NDH/eval.py` (commit 8f5bbba, Python 3), which differs only in printing and one added summary
value (`sgp` below). Per episode, with `start` and `goal` the first and last viewpoints of the target
path (`vlnkit.datasets.ndh.target_path`), `planner_goal` the last of `planner_path`, q_1..q_n the
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
>>> s = score_ndh(d, [[0, 1, 2]], np.array([2]), [[1, 2]], [[0, 1]])
>>> {m: float(s[m][0]) for m in ("pl", "ne", "sr", "spl", "gp")}
{'pl': 1.0, 'ne': 1.0, 'sr': 1.0, 'spl': 1.0, 'gp': 1.0}
"""

from __future__ import annotations

import numpy as np

from vlnkit.evaluation.batch import means, score_batch, totals
from vlnkit.evaluation.common import check_distances, pack

NDH_THRESHOLD = 3.0  # eval.py:21, `self.error_margin`
NDH_SUCCESS_RULE = "lt"  # eval.py:110-112: `i < self.error_margin`
STANDARD = ("pl", "ne", "one", "sr", "osr", "spl")  # the toolkit's metrics, under the evaluator's conventions
NDH_METRICS = (*STANDARD, "ops", "gp", "sgp")
NDH_RATES = ("sr", "osr", "spl", "ops")  # fractions; the others are metres
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


def _padded(paths) -> tuple[np.ndarray, np.ndarray]:
    """(padded int64 array, lengths) of a list of index paths, or the pair itself."""
    padded, lengths = paths if isinstance(paths, tuple) else pack(paths)
    return np.asarray(padded, np.int64), np.asarray(lengths, np.int64)


def first_non_edges(adjacent: np.ndarray, paths) -> np.ndarray:
    """Per path, the index k of its first move q_k -> q_k+1 that is neither a repeat nor a graph edge, or -1.

    `adjacent` is the scan's (n, n) boolean adjacency (`NavGraph.adjacent`); `paths` node-index paths or a
    (padded, lengths) pair. The evaluator raises at such a move (eval.py:83-91), so the episode has no score.

        >>> adj = np.array([[False, True, False], [True, False, True], [False, True, False]])
        >>> first_non_edges(adj, [[0, 1, 1, 2], [0, 0, 2], [1]]).tolist()
        [-1, 1, -1]
    """
    padded, lengths = _padded(paths)
    out = np.full(len(padded), -1, np.int64)
    if padded.shape[1] < 2 or not len(padded):
        return out
    u, v = padded[:, :-1], padded[:, 1:]
    valid = np.arange(1, padded.shape[1]) < lengths[:, None]
    bad = (u != v) & ~np.asarray(adjacent, bool)[u, v] & valid
    rows = bad.any(axis=1)
    out[rows] = bad[rows].argmax(axis=1)
    return out


def score_ndh(distances: np.ndarray, targets, planner_goals, end_panos, queries) -> dict[str, np.ndarray]:
    """Every NDH metric (`NDH_METRICS`) of B episodes of one scan: {name: (B,) float64 array}.

    `targets`: the target paths (node indices; their first node is the start, their last the goal);
    `planner_goals`: (B,) the last node of each planner path; `end_panos`: per episode a non-empty list of
    nodes (the goal region); `queries`: the trajectories, each starting at its target's start and moving
    along edges (check with `first_non_edges`). Paths are lists of node indices or (padded, lengths) pairs.
    Unreachable goals give inf distances (and 0 rates), as the toolkit's metrics do, and goal progress is
    NaN when no end pano is in reach of the start; the evaluator raises on both (its distance tables hold
    reachable pairs only), and `vlnkit.scoring.ndh` refuses such instances before scoring.
    """
    distances = check_distances(np.ascontiguousarray(distances, dtype=np.float64))
    targets, queries = _padded(targets), _padded(queries)
    planner_goals = np.asarray(planner_goals, np.int64).reshape(-1)
    b = len(targets[0])
    if len(queries[0]) != b or len(planner_goals) != b or len(end_panos) != b:
        raise ValueError(
            f"{b} targets, {len(queries[0])} queries, {len(planner_goals)} planner goals and "
            f"{len(end_panos)} end-pano lists: one of each per episode"
        )
    rule = {"threshold": NDH_THRESHOLD, "success_rule": NDH_SUCCESS_RULE, "spl_reference": "shortest"}
    scores = score_batch(distances, targets, queries, metrics=STANDARD, keep_repeats=True, **rule)
    # Oracle path success is OSR against the planner's goal: a one-node reference at that goal.
    scores["ops"] = score_batch(
        distances, (planner_goals[:, None], np.ones(b, np.int64)), queries, metrics=("osr",), **rule
    )["osr"]
    scores["gp"] = _goal_progress(distances, targets, end_panos, queries)
    scores["sgp"] = np.where(scores["sr"] > 0, scores["gp"], 0.0)
    return scores


def _goal_progress(distances, targets, end_panos, queries) -> np.ndarray:
    """min over e of d(start, e) - min over e of d(final, e), per episode (eval.py:68-76, 80)."""
    (t, _), (q, q_len) = targets, queries
    b = len(t)
    if not b:
        return np.zeros(0)
    e_len = np.fromiter(map(len, end_panos), np.int64, count=b)
    if e_len.min() < 1:
        raise ValueError(f"episode #{int(np.argmin(e_len))} has no end panos; goal progress needs at least one")
    ends = np.concatenate([np.asarray(e, np.int64).reshape(-1) for e in end_panos])
    first = np.zeros(b, np.int64)
    np.cumsum(e_len[:-1], out=first[1:])
    row = np.repeat(np.arange(b), e_len)
    start, final = t[:, 0], q[np.arange(b), q_len - 1]
    near_start = np.minimum.reduceat(distances[start[row], ends], first)
    near_final = np.minimum.reduceat(distances[final[row], ends], first)
    with np.errstate(invalid="ignore"):  # inf - inf where no end pano is in reach: NaN, undefined
        return near_start - near_final


def evaluator_summary(scores: dict[str, np.ndarray]) -> dict[str, float]:
    """The summary the evaluator prints (eval.py:124-132, its keys), from per-episode `score_ndh` values:
    each a mean over the episodes, as an exact sum divided once (`vlnkit.evaluation.batch.means`).

        >>> evaluator_summary({m: np.array([1.0, 0.0]) for m in EVALUATOR_KEYS})["success_rate"]
        0.5
    """
    mean, _ = means(totals({m: scores[m] for m in EVALUATOR_KEYS}), metrics=tuple(EVALUATOR_KEYS))
    return {EVALUATOR_KEYS[m]: mean[m] for m in EVALUATOR_KEYS}
