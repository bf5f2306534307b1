"""Names, options and path packing shared by the metric, batch and reward modules.

Paths are sequences of node indices into a scan's all-pairs distance matrix (`NavGraph.distances`).
Many paths are handled as one padded (B, L) int64 array plus a (B,) array of lengths, so that whole
batches move between numpy and the compiled kernels without a Python loop per path.

>>> padded, lengths = pack([[3, 3, 4], [5]])
>>> padded.tolist(), lengths.tolist()
([[3, 3, 4], [5, 0, 0]], [3, 1])
>>> collapse_repeats_padded(padded, lengths)[1].tolist()
[2, 1]
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter

import numpy as np

METRICS = ("pl", "ne", "one", "sr", "osr", "spl", "sed", "cls", "dtw", "ndtw", "sdtw", "ad", "md")
# How a metric is shown (the leaderboard's and the console's cells, the report's pages): a rate in [0, 1] as a
# percentage, a distance in metres, a count as given. The shared metrics' units are these; a task declares its
# own metrics' label and unit (`vlnkit.scoring.task.OwnMetric`), which the summary carries.
RATE, METRES, COUNT = "%", "m", ""
UNITS = {
    "pl": METRES,
    "ne": METRES,
    "one": METRES,
    "sr": RATE,
    "osr": RATE,
    "spl": RATE,
    "sed": RATE,
    "cls": RATE,
    "dtw": METRES,
    "ndtw": RATE,
    "sdtw": RATE,
    "ad": METRES,
    "md": METRES,
}
EXTRA = ("pc", "ls")  # CLS's two factors, available by name too
# What each metric of an episode is (vlnkit.evaluation.metrics gives the formulas); d_th is the success
# distance (--success_distance, 3 m), distances are metres along the navigation graph.
METRIC_MEANINGS = {
    "pl": "path length: metres the agent walked",
    "ne": "navigation error: metres from where the agent stopped to the goal",
    "one": "oracle navigation error: the closest (metres) the agent came to the goal",
    "sr": "success: 1 if the agent stopped within d_th of the goal, else 0",
    "osr": "oracle success: 1 if the agent came within d_th of the goal at some node, else 0",
    "spl": "success weighted by path length: success times shortest length over the longer of it and PL",
    "sed": "success weighted by edit distance between the reference's and the agent's edge sequences",
    "cls": "coverage weighted by length score: fidelity to the reference path, blind to node order",
    "dtw": "dynamic time warping distance (metres) between the reference path and the agent's",
    "ndtw": "normalized DTW, exp(-DTW / (|R| d_th)) in [0, 1]: 1 iff the agent followed the reference",
    "sdtw": "success weighted by nDTW: nDTW for a successful episode, else 0",
    "ad": "average deviation: mean metres of the agent's nodes from the reference path",
    "md": "maximum deviation: the largest metres of an agent's node from the reference path",
}
ALL = METRICS + EXTRA  # the kernels' output rows, in this order
SPL_REFERENCES = ("shortest", "path")
DEFAULT_THRESHOLD = 3.0
# Success at exactly d_th: "le" counts it (NE <= d_th, the R4R and nDTW papers' code, this toolkit's
# default); "lt" does not (NE < d_th, R2R's eval.py and HAMT, DUET, BabyWalk, VLN-CE). Only exact ties
# differ. The same rule decides OSR (ONE vs d_th) and the success factor of SPL, SED and SDTW.
SUCCESS_RULES = ("le", "lt")
DEFAULT_SUCCESS_RULE = "le"


def check_options(
    threshold: float, spl_reference: str = "shortest", metrics=(), success_rule: str = "le", name: str = "threshold"
) -> None:
    """Raise ValueError for a threshold that is not a finite number > 0 (`name` says what it is called
    where it was given), an unknown SPL mode, success rule or metric: the one check of the scoring
    conventions, for the metric functions and `ScoringConfig` alike."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number)):
        raise ValueError(f"{name} must be a finite number > 0, got {threshold!r}")
    if not (threshold > 0 and np.isfinite(threshold)):
        raise ValueError(f"{name} must be a finite number > 0, got {threshold}")
    if spl_reference not in SPL_REFERENCES:
        raise ValueError(f"spl_reference must be one of {SPL_REFERENCES}, got {spl_reference!r}")
    if success_rule not in SUCCESS_RULES:
        raise ValueError(f"success_rule must be one of {SUCCESS_RULES}, got {success_rule!r}")
    for name in metrics:
        if name not in ALL:
            raise ValueError(f"unknown metric {name!r}; known: {ALL}")


def check_distances(dist: np.ndarray) -> np.ndarray:
    """`dist` itself if it is a square (n, n) matrix; otherwise ValueError naming its shape.

    The compiled kernels check node indices against n = dist.shape[0] only, so a 3 x 2 matrix would
    let them read past its buffer: every public entry point calls this once per call (a shape test).

    >>> check_distances(np.zeros((3, 2)))
    Traceback (most recent call last):
    ...
    ValueError: distances must be a square (n, n) matrix, got shape (3, 2)
    """
    shape = dist.shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"distances must be a square (n, n) matrix, got shape {shape}")
    return dist


def pack(paths, pad: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Variable-length index sequences -> (padded (B, L) int64 array, lengths (B,))."""
    lengths = np.fromiter((len(p) for p in paths), dtype=np.int64, count=len(paths))
    width = int(lengths.max()) if len(lengths) else 0
    out = np.full((len(paths), max(width, 1)), pad, dtype=np.int64)
    if len(paths):
        mask = np.arange(out.shape[1]) < lengths[:, None]
        if lengths.sum():
            out[mask] = np.concatenate([np.asarray(p, dtype=np.int64).ravel() for p in paths])
    return out, lengths


def pack_viewpoints(index: dict[str, int], paths) -> tuple[np.ndarray, np.ndarray]:
    """Viewpoint-id sequences -> (padded index array, lengths) in one pass (no per-path arrays).

    `index` maps viewpoint id -> node index (`NavGraph.index`); an unknown id raises ValueError.
    """
    lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
    flat_ids = list(chain.from_iterable(paths))
    try:
        if len(flat_ids) > 1:
            flat = np.fromiter(itemgetter(*flat_ids)(index), dtype=np.int64, count=len(flat_ids))
        else:
            flat = np.asarray([index[v] for v in flat_ids], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"viewpoint {exc.args[0]!r} is not in the graph") from None
    out = np.zeros((len(paths), max(int(lengths.max(initial=1)), 1)), dtype=np.int64)
    out[np.arange(out.shape[1]) < lengths[:, None]] = flat
    return out, lengths


def collapse_repeats_padded(paths: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop consecutive repeated nodes of every padded path (vectorized). Returns (paths, lengths)."""
    paths = np.asarray(paths)
    lengths = np.asarray(lengths, dtype=np.int64)
    valid = np.arange(paths.shape[1]) < lengths[:, None]
    keep = valid.copy()
    keep[:, 1:] &= paths[:, 1:] != paths[:, :-1]
    new_len = keep.sum(axis=1)
    out = np.zeros_like(paths)
    rows = np.broadcast_to(np.arange(len(paths))[:, None], paths.shape)
    out[rows[keep], (np.cumsum(keep, axis=1) - 1)[keep]] = paths[keep]
    return out, new_len


def non_adjacent_steps(adjacent: np.ndarray, paths: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per path, how many consecutive pairs are neither equal nor a graph edge (multi-step jumps)."""
    if paths.shape[1] < 2:
        return np.zeros(len(paths), dtype=np.int64)
    u, v = paths[:, :-1], paths[:, 1:]
    valid = np.arange(1, paths.shape[1]) < lengths[:, None]
    return ((u != v) & ~adjacent[u, v] & valid).sum(axis=1)


def check_paths(n: int, paths: np.ndarray, lengths: np.ndarray, what: str) -> None:
    """Raise ValueError naming the first empty path or node index outside [0, n) (padding is ignored)."""
    if len(lengths) and lengths.min() < 1:
        raise ValueError(f"{what} #{int(np.argmin(lengths))} is empty; metrics need at least one node")
    valid = np.arange(paths.shape[1]) < lengths[:, None]
    bad = valid & ((paths < 0) | (paths >= n))
    if bad.any():
        b = int(np.argwhere(bad)[0][0])
        raise ValueError(f"{what} #{b} has a node index outside [0, {n})")
