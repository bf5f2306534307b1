"""Path metrics of VLN, one (reference, query) pair at a time (many pairs at once: `batch.score_batch`).

Every metric is a plain function `metric(reference, query, graph, threshold=3.0, ...)`. `graph` is
a `NavGraph` (paths are viewpoint ids, or node indices) or an (n, n) distance matrix such as
`NavGraph.distances` (paths are node indices). Each call runs one compiled kernel
(`vlnkit.evaluation.kernels`), so a single pair costs microseconds and the functions can serve as
rewards; `score_batch` scores many pairs of one scan in one kernel call.

    from vlnkit.evaluation.batch import score_batch
    from vlnkit.evaluation.metrics import ndtw, score
    reward = ndtw(reference, query, graph)                       # viewpoint ids and a NavGraph
    scores = score_batch(graph.distances, references, queries)   # {"pl": array, ..., "md": array}

Notation: R = r_1..r_|R| the reference, Q = q_1..q_|Q| the query (agent path), d_th the success
threshold (3.0 m), d(u, v) the shortest-path distance, d(n, P) = min over p in P of d(n, p).

Conventions
-----------
- The query's consecutive repeated viewpoints (turning in place) are collapsed first unless
  `keep_repeats=True`; the reference is used as given.
- `spl_reference="shortest"` (default) uses d(q_1, r_last) as SPL's reference length;
  `"path"` uses PL(R), the reference path's own length (as the HAMT/DUET scorers do).
- Success at exactly d_th: `success_rule="le"` (default) counts it, NE <= d_th, as the R4R and nDTW
  papers' code does; `"lt"` does not, NE < d_th, as R2R's eval.py and HAMT, DUET, BabyWalk and VLN-CE
  do. Only exact ties differ. The rule applies to SR, OSR, and the success factor of SPL, SED, SDTW.
- `graph` must be square: a distance matrix that is not (n, n), or a node index outside [0, n),
  raises ValueError naming the problem.

Degenerate cases (all give finite numbers or +inf, never NaN, never an exception)
-------------------------------------------------------------------------------
- Empty paths are rejected with ValueError: a metric of nothing is meaningless.
- Single-node paths: PL = 0; edge sequences are empty. SED with both edge sequences empty is SR
  (the empty sequences are identical); with one empty it is 0.
- Zero lengths: SPL is SR when both its reference length and PL(Q) are 0 (already at the goal).
  LS is 1 when both EPL and PL(Q) are 0 (e.g. single-node reference and query), so CLS = PC.
- Unreachable nodes (another connected component, or a multi-step jump across one): distances are
  +inf and so are the distance metrics built from them (PL, NE, ONE, DTW, AD, MD); the scores
  stay in [0, 1]: SR/OSR = 0 when the distance is inf, exp(-inf) = 0 for PC and nDTW, LS = 0 when
  PL(Q) or EPL is inf, SPL = 0 when its reference length is inf. Jobs write +inf as null.

In the examples, `d` is three nodes on a line, 1 m apart: 0 - 1 - 2.
"""

from __future__ import annotations

import math
from operator import itemgetter

import numpy as np

from vlnkit.compiled import compiled_entry
from vlnkit.evaluation import kernels as K
from vlnkit.evaluation.batch import GRID, raise_status
from vlnkit.evaluation.common import (
    ALL,
    DEFAULT_SUCCESS_RULE,
    DEFAULT_THRESHOLD,
    METRICS,
    SPL_REFERENCES,
    SUCCESS_RULES,
    check_distances,
    check_options,
)


def as_indices(path, graph) -> np.ndarray:
    """A path as an int64 index array: viewpoint ids are looked up in `graph` (a NavGraph)."""
    if isinstance(path, np.ndarray) and path.dtype.kind in "iu":
        return np.ascontiguousarray(path, dtype=np.int64)
    if len(path) and isinstance(path[0], str):
        index = getattr(graph, "index", None)
        if index is None:
            raise ValueError("viewpoint ids need a NavGraph, not a distance matrix, to look up their indices")
        try:
            return np.array([index[v] for v in path], dtype=np.int64)
        except KeyError:
            return graph.indices(path)  # raises GraphError (a ValueError) naming the viewpoint and scan
    return np.asarray(path, dtype=np.int64).reshape(-1)


def distance_matrix(graph) -> np.ndarray:
    """The float64 distance matrix of a NavGraph, or the given matrix itself (converted if need be)."""
    dist = getattr(graph, "distances", graph)
    if type(dist) is np.ndarray and dist.dtype is _F64:  # any memory layout: the kernels index it directly
        return check_distances(dist)
    return check_distances(np.ascontiguousarray(dist, dtype=np.float64))


def pair_nodes(reference, query, graph) -> tuple[np.ndarray, int]:
    """(reference then query as one int64 index array, |R|): ids of both paths are looked up in one call."""
    index = getattr(graph, "index", None)
    if index is not None and len(reference) and len(query) and isinstance(reference[0], str):
        try:
            return np.array(itemgetter(*reference, *query)(index), dtype=np.int64), len(reference)
        except (KeyError, TypeError):
            pass  # as_indices below names the unknown viewpoint (or handles a query of indices)
    r, q = as_indices(reference, graph), as_indices(query, graph)
    return np.concatenate((r, q)), len(r)


_F64 = np.dtype(np.float64)
# `kernels.metric_codes`' compiled entry per kind of distance matrix (numpy's flag bits: layout, writeable,
# aligned; dtype and dimensions are checked before), so a single pair skips numba's typing of its arguments.
_CODES_ENTRY: dict[int, object] = {}
_NEEDS = {k: K.NEED_ED if m == "sed" else K.NEED_GRID if m in GRID else 0 for k, m in enumerate(ALL)}


def _options(keep_repeats, spl_reference, success_rule) -> int:
    """The kernels' flag bits for these options (checked by `check_options` first)."""
    return (
        (K.KEEP_REPEATS if keep_repeats else 0)
        | (K.SPL_PATH if spl_reference == "path" else 0)
        | (K.SUCCESS_LT if success_rule == "lt" else 0)
    )


def _metric(
    which: int, reference, query, graph, threshold, keep_repeats, spl_reference="shortest", success_rule="le"
) -> float:
    """One metric of one pair: one id lookup, one kernel call computing only what that metric needs.

    Written for the per-call cost (a reward is computed every step): checks inline, no extra calls.
    """
    if not (0 < threshold < math.inf):
        raise ValueError(f"threshold must be a finite number > 0, got {threshold}")
    flags = _NEEDS[which] | (K.KEEP_REPEATS if keep_repeats else 0)
    if spl_reference != "shortest":
        if spl_reference != "path":
            raise ValueError(f"spl_reference must be one of {SPL_REFERENCES}, got {spl_reference!r}")
        flags |= K.SPL_PATH
    if success_rule != "le":
        if success_rule != "lt":
            raise ValueError(f"success_rule must be one of {SUCCESS_RULES}, got {success_rule!r}")
        flags |= K.SUCCESS_LT
    dist = getattr(graph, "distances", graph)
    if type(dist) is not np.ndarray or dist.dtype is not _F64:
        dist = np.ascontiguousarray(dist, dtype=np.float64)
    shape = dist.shape
    if len(shape) != 2 or shape[0] != shape[1]:
        check_distances(dist)  # raises, naming the shape
    joined = None
    codes = getattr(graph, "index_codes", None) if type(reference) is list and type(query) is list else None
    if codes is not None:
        try:  # the common case, viewpoint ids of a NavGraph: both paths as one bytes object, one kernel entry
            joined = b"".join(itemgetter(*reference, *query)(codes))
        except (KeyError, TypeError):  # not ids, an unknown id (named below), fewer than two nodes
            joined = None
    if joined is not None:
        entry = _CODES_ENTRY.get(dist.flags.num)
        if entry is None:
            entry = _CODES_ENTRY[dist.flags.num] = compiled_entry(K.metric_codes, dist, joined, 1, 1.0, 1, 1)
        value = entry(dist, joined, len(reference), float(threshold), flags, which)
    else:
        nodes, split = pair_nodes(reference, query, graph)
        value = K.metric_one(dist, nodes, split, float(threshold), flags, which)
    if value < 0:  # a status code: empty path or node out of range
        raise_status(int(-value), 0, len(dist))
    return value


def score(
    reference,
    query,
    graph,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    keep_repeats: bool = False,
    spl_reference: str = "shortest",
    metrics=METRICS,
    success_rule: str = DEFAULT_SUCCESS_RULE,
) -> dict[str, float]:
    """All (or the named) metrics of one pair, as floats: one kernel call for all of them.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> s = score([0, 1, 2], [0, 1], d)
    >>> s["ne"], s["sr"], s["dtw"]
    (1.0, 1.0, 1.0)
    """
    check_options(threshold, spl_reference, metrics, success_rule)
    flags = _options(keep_repeats, spl_reference, success_rule)
    flags |= (K.NEED_GRID if any(m in GRID for m in metrics) else 0) | (K.NEED_ED if "sed" in metrics else 0)
    dist = distance_matrix(graph)
    nodes, split = pair_nodes(reference, query, graph)
    out = np.empty(K.N_OUT)
    raise_status(K.score_one(dist, nodes, split, float(threshold), flags, out), 0, len(dist))
    return {m: float(out[ALL.index(m)]) for m in metrics}


def pl(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Path length PL(Q) = sum of d(q_i, q_i+1): how far the agent walked (the reference is not used).

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> pl([0, 2], [0, 1, 0, 1, 2], d)
    4.0
    """
    return _metric(K.PL, reference, query, graph, threshold, keep_repeats)


def ne(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Navigation error NE = d(q_last, r_last): how far from the goal the agent stopped.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> ne([0, 1, 2], [0, 1], d)
    1.0
    """
    return _metric(K.NE, reference, query, graph, threshold, keep_repeats)


def one(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Oracle navigation error ONE = min over q in Q of d(q, r_last): the closest the agent came to the goal.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> one([0, 1, 2], [0, 1, 2, 1, 0], d)
    0.0
    """
    return _metric(K.ONE, reference, query, graph, threshold, keep_repeats)


def sr(
    reference,
    query,
    graph,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    keep_repeats: bool = False,
    success_rule: str = DEFAULT_SUCCESS_RULE,
) -> float:
    """Success rate SR = 1[NE <= d_th]: 1.0 if the agent stopped within d_th of the goal, else 0.0.
    With `success_rule="lt"` SR = 1[NE < d_th] (R2R's eval.py): a stop exactly d_th away fails.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> sr([0, 1, 2], [0], d), sr([0, 1, 2], [0], d, threshold=1.5)
    (1.0, 0.0)
    >>> sr([0, 1, 2], [0], d, threshold=2.0), sr([0, 1, 2], [0], d, threshold=2.0, success_rule="lt")
    (1.0, 0.0)
    """
    return _metric(K.SR, reference, query, graph, threshold, keep_repeats, "shortest", success_rule)


def osr(
    reference,
    query,
    graph,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    keep_repeats: bool = False,
    success_rule: str = DEFAULT_SUCCESS_RULE,
) -> float:
    """Oracle success rate OSR = 1[ONE <= d_th]: success had the agent stopped at its best node.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> osr([0, 1, 2], [0, 1, 2, 1, 0], d, threshold=0.5)
    1.0
    """
    return _metric(K.OSR, reference, query, graph, threshold, keep_repeats, "shortest", success_rule)


def spl(
    reference,
    query,
    graph,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    keep_repeats: bool = False,
    spl_reference: str = "shortest",
    success_rule: str = DEFAULT_SUCCESS_RULE,
) -> float:
    """Success weighted by path length SPL = SR * L / max(PL(Q), L), L = d(q_1, r_last) (or PL(R) with
    `spl_reference="path"`): success, discounted by detours.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> spl([0, 1, 2], [0, 1, 0, 1, 2], d)
    0.5
    """
    return _metric(K.SPL, reference, query, graph, threshold, keep_repeats, spl_reference, success_rule)


def sed(
    reference,
    query,
    graph,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    keep_repeats: bool = False,
    success_rule: str = DEFAULT_SUCCESS_RULE,
) -> float:
    """Success weighted by edit distance SED = SR * (1 - ED(A_R, A_Q) / max(|A_R|, |A_Q|)), with ED the
    Levenshtein distance between the edge sequences A_P = ((p_1, p_2), (p_2, p_3), ...).

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> sed([0, 1, 2], [0, 1, 0, 1, 2], d)  # edges 01 12 vs 01 10 01 12: two insertions over four
    0.5
    """
    return _metric(K.SED, reference, query, graph, threshold, keep_repeats, "shortest", success_rule)


def pc(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Path coverage PC = mean over r in R of exp(-d(r, Q) / d_th): how well the query covers the reference.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> round(pc([0, 1, 2], [0, 1], d), 4)  # (1 + 1 + exp(-1/3)) / 3
    0.9055
    """
    return _metric(K.PC, reference, query, graph, threshold, keep_repeats)


def ls(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Length score LS = EPL / (EPL + |EPL - PL(Q)|), EPL = PC * PL(R): is the query as long as expected.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> ls([0, 1, 2], [0, 1, 2], d)
    1.0
    """
    return _metric(K.LS, reference, query, graph, threshold, keep_repeats)


def cls(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Coverage weighted by length score CLS = PC * LS: fidelity to the reference, blind to node order.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> cls([0, 1, 2], [0, 1, 2], d), round(cls([0, 1, 2], [0, 1], d), 4)
    (1.0, 0.6254)
    """
    return _metric(K.CLS, reference, query, graph, threshold, keep_repeats)


def dtw(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Dynamic time warping DTW = min over monotone warpings of the summed d(r_i, q_j) (steps (1,0), (0,1),
    (1,1), both ends aligned), in metres: C[i, j] = d(r_i, q_j) + min(C[i-1, j], C[i, j-1], C[i-1, j-1]).

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> dtw([0, 1, 2], [0, 2], d)  # r_2 = 1 is matched with 0 or 2 at cost 1
    1.0
    """
    return _metric(K.DTW, reference, query, graph, threshold, keep_repeats)


def ndtw(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Normalized DTW nDTW = exp(-DTW(R, Q) / (|R| * d_th)), in [0, 1]: 1 iff the query follows the
    reference node for node (up to repeats), falling as it strays, order-aware.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> ndtw([0, 1, 2], [0, 1, 2], d), round(ndtw([0, 1, 2], [0, 2], d), 4)  # exp(-1 / 9)
    (1.0, 0.8948)
    """
    return _metric(K.NDTW, reference, query, graph, threshold, keep_repeats)


def sdtw(
    reference,
    query,
    graph,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    keep_repeats: bool = False,
    success_rule: str = DEFAULT_SUCCESS_RULE,
) -> float:
    """Success weighted by nDTW SDTW = SR * nDTW: fidelity counted only for successful episodes.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> round(sdtw([0, 1, 2], [0, 2], d), 4), sdtw([0, 1, 2], [0, 2, 0], d, threshold=1.0)
    (0.8948, 0.0)
    """
    return _metric(K.SDTW, reference, query, graph, threshold, keep_repeats, "shortest", success_rule)


def ad(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Average deviation AD = mean over q in Q of d(q, R): how far the agent strays from the reference, on average.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> ad([0, 1], [0, 1, 2], d)  # d(q, R) = 0, 0, 1
    0.3333333333333333
    """
    return _metric(K.AD, reference, query, graph, threshold, keep_repeats)


def md(reference, query, graph, threshold: float = DEFAULT_THRESHOLD, *, keep_repeats: bool = False) -> float:
    """Maximum deviation MD = max over q in Q of d(q, R): the agent's worst departure from the reference.

    >>> d = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> md([0], [0, 1, 2], d)
    2.0
    """
    return _metric(K.MD, reference, query, graph, threshold, keep_repeats)
