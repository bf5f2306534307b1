"""Many (reference, query) pairs of one scan at once, and exact sums for run summaries.

`score_batch` hands the packed pairs to one compiled kernel call (`kernels.score_many`): no Python
loop per pair, no padded intermediate arrays, so its cost is the real |R| x |Q| work of each pair.

>>> import numpy as np
>>> d = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])  # three nodes on a line
>>> s = score_batch(d, [[0, 1, 2], [0, 1, 2]], [[0, 1, 2], [0, 1]], metrics=("ne", "ndtw"))
>>> s["ne"].tolist(), s["ndtw"].round(4).tolist()
([0.0, 1.0], [1.0, 0.8948])
"""

from __future__ import annotations

import numpy as np

from vlnkit.evaluation import kernels
from vlnkit.evaluation.common import (
    ALL,
    DEFAULT_SUCCESS_RULE,
    DEFAULT_THRESHOLD,
    METRICS,
    check_distances,
    check_options,
    check_paths,
    pack,
)
from vlnkit.io.exactsum import SUM_SCALE, exact_sum, exact_sums_by

GRID = frozenset(("dtw", "ndtw", "sdtw", "pc", "ls", "cls", "ad", "md"))  # need the |R| x |Q| pass
STATUS = {
    1: "reference #{b} is empty; metrics need at least one node",
    2: "query #{b} is empty; metrics need at least one node",
    3: "reference #{b} has a node index outside [0, {n})",
    4: "query #{b} has a node index outside [0, {n})",
}


def raise_status(status: int, b: int, n: int) -> None:
    """Turn a kernel status code into a ValueError naming the pair and what it breaks (`STATUS`)."""
    if status:
        raise ValueError(STATUS[status].format(b=b, n=n))


def score_batch(
    distances: np.ndarray,
    references,
    queries,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    keep_repeats: bool = False,
    spl_reference: str = "shortest",
    metrics=METRICS,
    success_rule: str = DEFAULT_SUCCESS_RULE,
) -> dict[str, np.ndarray]:
    """Score many (reference, query) pairs of one scan: {metric: (B,) float64 array}.

    `distances` is the scan's square (n, n) matrix; `references`/`queries` are lists of index
    sequences, or (padded array, lengths) tuples from `pack` / `pack_viewpoints`. Conventions
    (repeats, SPL's reference length, the success rule, degenerate cases) are those of
    `vlnkit.evaluation.metrics`. Each pair is scored on its own: its scores do not depend on the
    other pairs of the batch, bit for bit.
    """
    refs, ref_len = references if isinstance(references, tuple) else pack(references)
    qs, q_len = queries if isinstance(queries, tuple) else pack(queries)
    refs = np.ascontiguousarray(refs, dtype=np.int64)
    qs = np.ascontiguousarray(qs, dtype=np.int64)
    ref_len = np.ascontiguousarray(ref_len, dtype=np.int64)
    q_len = np.ascontiguousarray(q_len, dtype=np.int64)
    if len(refs) != len(qs):
        raise ValueError(f"{len(refs)} references but {len(qs)} queries")
    check_options(threshold, spl_reference, metrics, success_rule)
    distances = check_distances(np.ascontiguousarray(distances, dtype=np.float64))
    if refs.ndim != 2 or qs.ndim != 2 or len(ref_len) != len(refs) or len(q_len) != len(qs):
        raise ValueError("references and queries must be lists of paths or (padded (B, L) array, lengths) tuples")
    if (ref_len > refs.shape[1]).any() or (q_len > qs.shape[1]).any():
        raise ValueError("a path length exceeds its padded array's width")
    if not len(refs):
        return {m: np.empty(0) for m in metrics}
    out = np.empty((len(ALL), len(refs)))
    status, b = kernels.score_many(
        distances,
        refs,
        ref_len,
        qs,
        q_len,
        float(threshold),
        bool(keep_repeats),
        spl_reference == "path",
        success_rule == "lt",
        any(m in GRID for m in metrics),
        "sed" in metrics,
        out,
    )
    if status:  # reproduce the numpy checks' messages (they name the first bad path of each kind)
        check_paths(len(distances), refs, ref_len, "reference")
        check_paths(len(distances), qs, q_len, "query")
        raise_status(status, b, len(distances))
    return {m: out[ALL.index(m)] for m in metrics}


# ----------------------------------------------------------------------------- aggregation
# Sums for summaries are exact (see `vlnkit.io.exactsum`), so a mean does not depend on the order in
# which a runner combines partial sums.


def totals(scores: dict[str, np.ndarray]) -> dict[str, int]:
    """Summable totals: `count`, and per metric the exact sum (`exact_sum`) and count of its finite values.

    >>> totals({"pl": np.array([1.0, np.inf, 3.0])})["finite_pl"]
    2
    """
    out: dict[str, int] = {}
    for name, values in scores.items():
        finite = np.isfinite(values)
        out[f"sum_{name}"] = exact_sum(values[finite])
        out[f"finite_{name}"] = int(finite.sum())
        out["count"] = len(values)
    return out


def add_group_sums(totals: dict, values: dict[str, np.ndarray], groups: np.ndarray, keys: list[str]) -> None:
    """Add exact per-group `totals` of every metric into `totals` under `keys[g]` (`keys[g] + "sum_<m>"`,
    `"finite_<m>"`, `"count"`), as the score jobs do per agent and per agent and language; a group
    without rows adds nothing (so no empty group appears in a summary).

    >>> out = {}
    >>> add_group_sums(out, {"sr": np.array([1.0, 0.0, np.nan])}, np.array([0, 0, 1]), ["a:", "b:"])
    >>> out["a:count"], out["a:finite_sr"], out["b:finite_sr"], means({"count": 2, "sum_sr": out["a:sum_sr"], "finite_sr": 2}, ("sr",))[0]
    (2, 2, 0, {'sr': 0.5})
    """
    sizes = np.bincount(groups, minlength=len(keys))
    for m, v in values.items():
        sums, finite = exact_sums_by(groups, v, len(keys))
        for g, key in enumerate(keys):
            if sizes[g]:
                totals[key + f"sum_{m}"] = totals.get(key + f"sum_{m}", 0) + sums[g]
                totals[key + f"finite_{m}"] = totals.get(key + f"finite_{m}", 0) + finite[g]
    for g, key in enumerate(keys):
        if sizes[g]:
            totals[key + "count"] = totals.get(key + "count", 0) + int(sizes[g])


def means(summed: dict, metrics=METRICS) -> tuple[dict[str, float | None], dict[str, int]]:
    """(mean of each metric's finite values or None, count of non-finite values) from summed `totals`.

    >>> means(totals({"pl": np.array([1.0, np.inf, 3.0])}), metrics=("pl",))
    ({'pl': 2.0}, {'pl': 1})
    """
    count = int(summed.get("count", 0))
    mean, nulls = {}, {}
    for m in metrics:
        n = int(summed.get(f"finite_{m}", 0))
        mean[m] = summed.get(f"sum_{m}", 0) / (n << SUM_SCALE) if n else None  # one correctly rounded division
        nulls[m] = count - n
    return mean, nulls
