"""Path metrics as rewards inside RL training loops: incremental, batched, compiled.

An episode is a walk s_1..s_T over a scan's graph that starts at the reference's first node (s_1 =
r_1) and ends with a stop action; R is the reference path, g = r_|R| its goal, d_th the success
threshold (3.0 m), d(u, v) the shortest-path distance. Three reward variants (`kind`):

- ``"goal"`` (R4R paper, eq. 11): a move s_t -> s_t+1 earns d(s_t, g) - d(s_t+1, g); the stop earns
  1[d(s_T, g) <= d_th], or with ``goal_end="signed"`` +1 if successful and -1 otherwise (nDTW paper).
- ``"ndtw"`` (nDTW paper, fidelity-oriented): a move earns nDTW(s_1..t+1, R) - nDTW(s_1..t, R); the stop
  earns 1 - d(s_T, g) / d_th if successful, else 0. `reset` returns nDTW(s_1, R), and it plus the moves'
  gains is the final nDTW(s_1..T, R) (the gains telescope; up to float rounding, about 1e-16 per step).
- ``"cls"`` (R4R paper, eq. 12): a move earns 0, or with ``cls_shaping=True`` the CLS gain
  CLS(s_1..t+1, R) - CLS(s_1..t, R); the stop earns 1[success] + CLS(s_1..T, R).

Every value is the metric of `vlnkit.evaluation.metrics` recomputed from scratch, bit for bit, but
a step costs O(|R|): each environment keeps the last DTW column over its reference (one new query
node against every reference node), every reference node's distance to the walk so far, and PL.

Conventions: a "move" to the current node (turning in place) changes nothing and earns 0, unless
``keep_repeats=True`` (then it is a new query node, as the metrics' option). Success is d(s_T, g) <= d_th,
or d(s_T, g) < d_th with ``success_rule="lt"`` (the metrics' option). Environments that stopped earn 0
and ignore their entries until the next `reset`. An unknown node raises ValueError
naming the environment; no state changes on an error. Unreachable nodes (another connected
component, reachable only by a jump): nDTW and CLS follow the metrics (distances are +inf, so the
scores fall to 0 and rewards stay finite); the goal-oriented reward would be inf - inf, so `reset`
(start cannot reach the goal) and `step` (a move to a node that cannot reach it) raise ValueError.

>>> import numpy as np
>>> d = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])  # 0 - 1 - 2 on a line
>>> env = RewardBatch(d, kind="goal")
>>> env.reset([[0, 1, 2], [0, 1, 2]]).tolist()
[0.0, 0.0]
>>> env.step([1, 0]).tolist(), env.step([2, 0], stop=[False, True]).tolist()
([1.0, 0.0], [1.0, 1.0])
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from vlnkit.evaluation import reward_kernels as K
from vlnkit.evaluation.common import DEFAULT_SUCCESS_RULE, DEFAULT_THRESHOLD, SUCCESS_RULES, check_distances

KINDS = {"goal": K.GOAL, "ndtw": K.FIDELITY_NDTW, "cls": K.FIDELITY_CLS}
GOAL_ENDS = ("indicator", "signed")


class RewardBatch:
    """B environments stepped together: arrays in, a (B,) array of rewards out, one kernel call per step.

    `graphs` is a NavGraph (every environment in that scan; paths as viewpoint ids or node indices),
    a GraphStore (environments in any scans, named at `reset`), or an (n, n) distance matrix (node
    indices only). Options are the module docstring's reward variants.
    """

    def __init__(
        self,
        graphs,
        kind: str = "ndtw",
        *,
        threshold: float = DEFAULT_THRESHOLD,
        goal_end: str = "indicator",
        cls_shaping: bool = False,
        keep_repeats: bool = False,
        success_rule: str = DEFAULT_SUCCESS_RULE,
    ):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {tuple(KINDS)}, got {kind!r}")
        if goal_end not in GOAL_ENDS:
            raise ValueError(f"goal_end must be one of {GOAL_ENDS}, got {goal_end!r}")
        if not (threshold > 0 and np.isfinite(threshold)):
            raise ValueError(f"threshold must be a finite number > 0, got {threshold}")
        if success_rule not in SUCCESS_RULES:
            raise ValueError(f"success_rule must be one of {SUCCESS_RULES}, got {success_rule!r}")
        self.graphs = graphs
        self.kind = kind
        self.threshold = float(threshold)
        self.goal_end = goal_end
        self.cls_shaping = bool(cls_shaping)
        self.keep_repeats = bool(keep_repeats)
        self.strict = success_rule == "lt"
        self._store = hasattr(graphs, "get") and not hasattr(graphs, "distances")
        self._refs = None
        self._layout: dict[int, tuple] = {}  # id(graph) -> (graph, offset in _flat, n); holding it keeps ids unique
        self._flat = np.zeros(0)

    def _place(self, graphs) -> None:
        """Make every graph's distance matrix part of the flat store; scans already there are not copied again.

        One graph: the flat store is a view of its matrix. Several: their matrices are concatenated
        once each, as they first appear (so resets cost nothing for scans already seen).
        """
        new = [g for g in {id(g): g for g in graphs}.values() if id(g) not in self._layout]
        if not new:
            return
        mats = [np.ascontiguousarray(getattr(g, "distances", g), dtype=np.float64) for g in new]
        for m in mats:
            check_distances(m)
        start = len(self._flat)
        if not self._layout and len(mats) == 1:
            self._flat = mats[0].ravel()
        else:
            self._flat = np.concatenate([self._flat, *(m.ravel() for m in mats)])
        for g, m in zip(new, mats):
            self._layout[id(g)] = (g, start, len(m))
            start += m.size

    # ------------------------------------------------------------------ reset
    def _graphs_for(self, count: int, scans) -> list:
        if self._store:
            if scans is None or len(scans) != count:
                raise ValueError("with a GraphStore, reset needs one scan id per environment (scans=...)")
            return [self.graphs.get(s) for s in scans]  # GraphError names a missing scan
        return [self.graphs] * count

    def reset(self, references, scans=None) -> np.ndarray:
        """Start environment b at references[b][0]; returns each one's starting value, (B,) floats.

        The starting value is nDTW (kind "ndtw") or CLS (kind "cls") of the one-node path [r_1], and
        0 for kind "goal": add it to the per-move gains and they sum to the walk's final score.
        """
        count = len(references)
        graphs = self._graphs_for(count, scans)
        self._place(graphs)
        self._off = np.array([self._layout[id(g)][1] for g in graphs], dtype=np.int64)
        self._n = np.array([self._layout[id(g)][2] for g in graphs], dtype=np.int64)
        self._env_graphs = graphs
        self._indexes = [getattr(g, "index", None) for g in graphs]
        self._shared_index = self._indexes[0] if count and all(g is graphs[0] for g in graphs) else None
        width = max([len(r) for r in references], default=1) or 1
        refs = np.zeros((count, width), dtype=np.int64)
        ref_len = np.zeros(count, dtype=np.int64)
        for b, path in enumerate(references):
            ref_len[b] = len(path)
            refs[b, : len(path)] = self._path_indices(b, path)
        self._refs, self._ref_len = refs, ref_len
        self._rows = np.empty((count, width + 1))
        self._cover = np.empty((count, width))
        self._pl_q, self._pl_r = np.zeros(count), np.zeros(count)
        self._pos = np.zeros(count, dtype=np.int64)
        self._value = np.zeros(count)
        self._finished = np.zeros(count, dtype=bool)
        self._out = np.zeros(count)
        status, b = K.rewards_reset(
            self._flat, self._off, self._n, refs, ref_len, KINDS[self.kind], self.threshold,
            self._rows, self._cover, self._pl_q, self._pl_r, self._pos, self._value, self._finished,
        )  # fmt: skip
        if status:
            self._refs = None
            raise ValueError(self._message(status, b, refs[b, 0] if ref_len[b] else None))
        return self._value.copy()

    def _path_indices(self, b: int, path) -> np.ndarray:
        if len(path) and isinstance(path[0], str):
            index = self._indexes[b]
            if index is None:
                raise ValueError("viewpoint ids need a NavGraph or GraphStore, not a distance matrix")
            missing = [v for v in path if v not in index]
            if missing:
                raise ValueError(f"environment {b}: viewpoint {missing[0]!r} is not in scan {self._scan(b)!r}")
            return np.fromiter(itemgetter(*path)(index) if len(path) > 1 else [index[path[0]]], dtype=np.int64)
        return np.asarray(path, dtype=np.int64).reshape(-1)

    def _scan(self, b: int) -> str:
        return getattr(self._env_graphs[b], "scan", "distance matrix")

    def _message(self, status: int, b: int, node) -> str:
        where = f"environment {b} (scan {self._scan(b)!r})"
        if status == K.BAD_REFERENCE:
            return f"{where}: the reference path is empty or has a node outside [0, {self._n[b]})"
        if status == K.BAD_NODE:
            return f"{where}: node {node!r} is not a node of the scan"
        return (
            f"{where}: the goal cannot be reached from node {node!r} (another connected component), "
            "so the goal-oriented reward d(s_t, g) - d(s_t+1, g) is undefined"
        )

    # ------------------------------------------------------------------ step
    def step(self, nodes, stop=None) -> np.ndarray:
        """Move every running environment to nodes[b], or stop it where stop[b]: the (B,) rewards.

        `nodes` holds node indices or viewpoint ids; entries of stopping or stopped environments are
        ignored (None is fine there).
        """
        if self._refs is None:
            raise RuntimeError("call reset(references) before step")
        count = len(self._refs)
        if stop is None:
            stop = np.zeros(count, dtype=bool)
        else:
            stop = np.asarray(stop, dtype=bool)
        idx = self._node_indices(nodes)
        if len(idx) != count or len(stop) != count:
            raise ValueError(f"{count} environments but {len(idx)} nodes and {len(stop)} stop flags")
        status, b = K.rewards_step(
            self._flat, self._off, self._n, self._refs, self._ref_len, KINDS[self.kind], self.threshold, self.strict,
            self.goal_end == "signed", self.cls_shaping, self.keep_repeats, self._rows, self._cover,
            self._pl_q, self._pl_r, self._pos, self._value, self._finished, idx, stop, self._out,
        )  # fmt: skip
        if status:
            raise ValueError(self._message(status, b, nodes[b]))
        return self._out.copy()

    def _node_indices(self, nodes) -> np.ndarray:
        if isinstance(nodes, np.ndarray) and nodes.dtype.kind in "iu":
            return nodes.astype(np.int64, copy=False)
        nodes = list(nodes)
        if not any(isinstance(v, str) for v in nodes):
            return np.array([-1 if v is None else v for v in nodes], dtype=np.int64)
        if self._shared_index is not None:
            get = self._shared_index.get
            return np.array([get(v, -1) if isinstance(v, str) else -1 for v in nodes], dtype=np.int64)
        return np.array(
            [ix.get(v, -1) if ix is not None and isinstance(v, str) else -1 for ix, v in zip(self._indexes, nodes)],
            dtype=np.int64,
        )

    # ------------------------------------------------------------------ state
    @property
    def finished(self) -> np.ndarray:
        """(B,) bool: which environments have stopped."""
        return self._finished.copy()

    @property
    def position(self) -> np.ndarray:
        """(B,) node index of every environment's current node."""
        return self._pos.copy()

    @property
    def value(self) -> np.ndarray:
        """(B,) nDTW (kind "ndtw") or CLS (kind "cls") of each walk so far; 0 for kind "goal"."""
        return self._value.copy()

    @property
    def distance_to_goal(self) -> np.ndarray:
        """(B,) d(s_t, g) of every environment's current node."""
        goals = self._refs[np.arange(len(self._refs)), self._ref_len - 1]
        return self._flat[self._off + self._pos * self._n + goals]


class RewardEpisode:
    """One environment: `reset()`, then `step(node)` per move and `stop()` at the end, each a float.

    A thin wrapper around a one-environment RewardBatch (same kernels, same conventions).

    >>> d = [[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]]
    >>> ep = RewardEpisode(d, [0, 1, 2], kind="ndtw")
    >>> start = ep.reset()  # nDTW of [0]: exp(-(0 + 1 + 2) / 9)
    >>> [round(r, 4) for r in (start, ep.step(1), ep.step(2), ep.stop())]
    [0.7165, 0.1783, 0.1052, 1.0]
    >>> round(start + 0.1783 + 0.1052, 4)  # the start value plus the gains is the final nDTW, 1.0
    1.0
    """

    def __init__(self, graphs, reference, kind: str = "ndtw", *, scan: str | None = None, **options):
        self._batch = RewardBatch(graphs, kind, **options)
        self.reference = reference
        self.scan = scan

    def reset(self) -> float:
        return float(self._batch.reset([self.reference], None if self.scan is None else [self.scan])[0])

    def step(self, node) -> float:
        return float(self._batch.step([node])[0])

    def stop(self) -> float:
        return float(self._batch.step([None], stop=[True])[0])

    @property
    def finished(self) -> bool:
        return bool(self._batch.finished[0])

    @property
    def value(self) -> float:
        return float(self._batch.value[0])
