"""Path metrics of VLN (DESIGN.md, "Path metrics"): one pair at a time, or a whole batch at once.

Paths are sequences of node indices into a scan's all-pairs distance matrix (`NavGraph.distances`);
the single-pair functions also accept viewpoint ids when given the `NavGraph` itself. Both APIs run
the same vectorized code: the batch API pads a batch of (reference, query) pairs into arrays and
computes every metric with numpy over the whole batch (the DTW and edit-distance dynamic programmes
sweep anti-diagonals, so Python loops run |R| + |Q| times per batch, not per pair).

    from vlnkit.evaluation.metrics import ndtw, score_batch
    reward = ndtw(reference, query, graph)                       # viewpoint ids and a NavGraph
    scores = score_batch(graph.distances, references, queries)   # {"pl": array, ..., "md": array}

Conventions
-----------
- The query's consecutive repeated viewpoints (turning in place) are collapsed first unless
  `keep_repeats=True`; the reference is used as given.
- `spl_reference="shortest"` (default) uses d(q_1, r_last) as SPL's reference length;
  `"path"` uses PL(R), the reference path's own length (as the HAMT/DUET scorers do).

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
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from operator import itemgetter

import numpy as np

from vlnkit.io.exactsum import SUM_SCALE, exact_sum  # noqa: F401  (re-exported)

METRICS = ("pl", "ne", "one", "sr", "osr", "spl", "sed", "cls", "dtw", "ndtw", "sdtw", "ad", "md")
EXTRA = ("pc", "ls")  # CLS's two factors, available by name too
SPL_REFERENCES = ("shortest", "path")
DEFAULT_THRESHOLD = 3.0
DEFAULT_CHUNK = 8192


# ----------------------------------------------------------------------------- packing
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


def _check(distances: np.ndarray, paths: np.ndarray, lengths: np.ndarray, what: str) -> None:
    if len(lengths) and lengths.min() < 1:
        raise ValueError(f"{what} #{int(np.argmin(lengths))} is empty; metrics need at least one node")
    valid = np.arange(paths.shape[1]) < lengths[:, None]
    bad = valid & ((paths < 0) | (paths >= len(distances)))
    if bad.any():
        b = int(np.argwhere(bad)[0][0])
        raise ValueError(f"{what} #{b} has a node index outside [0, {len(distances)})")


# ----------------------------------------------------------------------------- dynamic programmes
# Both programmes sweep anti-diagonals k = i + j (1-based cell (i, j)) over the whole batch, keeping
# only the last two diagonals, indexed by i: cell (i, k - i) of diagonal k lives at [:, i].


def _finishing(target: np.ndarray, last: int) -> list[np.ndarray]:
    """For each diagonal k in 0..last, the batch rows whose final cell lies on it."""
    order = np.argsort(target, kind="stable")
    bounds = np.searchsorted(target[order], np.arange(last + 2))
    return [order[bounds[k] : bounds[k + 1]] for k in range(last + 1)]


def dtw_padded(cost: np.ndarray, lr: np.ndarray, lq: np.ndarray) -> np.ndarray:
    """DTW of each batch element from the (Lr, Lq, B) cell costs d(r_i, q_j) (batch last; padded).

    C[i, j] = cost[i, j] + min(C[i-1, j], C[i-1, j-1], C[i, j-1]), C[0, 0] = 0, both ends aligned:
    the same additions in the same order as the textbook programme, so results are bit-identical
    to it. The batch is the last (contiguous) axis, so every numpy call runs over long rows.
    """
    LR, LQ, B = cost.shape
    out = np.full(B, np.inf)
    finish = _finishing(lr + lq, LR + LQ)
    diagonals = [np.full((LR + 1, B), np.inf) for _ in range(3)]  # reused: k - 2, k - 1, k
    diagonals[0][0] = 0.0  # diagonal 0: only C[0, 0] = 0; diagonal 1 is all border (inf)
    best = np.empty((LR + 1, B))
    for k in range(2, LR + LQ + 1):
        prev2, prev1, cur = diagonals[(k - 2) % 3], diagonals[(k - 1) % 3], diagonals[k % 3]
        lo, hi = max(1, k - LQ), min(LR, k - 1)
        ii = np.arange(lo, hi + 1)
        cur[:lo] = np.inf
        cur[hi + 1 :] = np.inf
        b = best[: hi + 1 - lo]
        np.minimum(prev1[lo - 1 : hi], prev2[lo - 1 : hi], out=b)
        np.minimum(b, prev1[lo : hi + 1], out=b)
        np.add(cost[ii - 1, k - ii - 1], b, out=cur[lo : hi + 1])
        done = finish[k]
        if len(done):
            out[done] = cur[lr[done], done]
    return out


def edit_distance_padded(a: np.ndarray, la: np.ndarray, b: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """Levenshtein distance between padded integer sequences a (B, La) and b (B, Lb), batch-last like DTW."""
    B, LA, LB = len(a), a.shape[1], b.shape[1]
    out = np.maximum(la, lb).astype(np.float64)  # right whenever one sequence is empty
    finish = _finishing(np.where((la > 0) & (lb > 0), la + lb, 0), LA + LB)
    aT, bT = np.ascontiguousarray(a.T), np.ascontiguousarray(b.T)
    big = np.int32(LA + LB + 2)  # larger than any edit distance here: plays infinity
    diagonals = [np.full((LA + 1, B), big, dtype=np.int32) for _ in range(3)]
    diagonals[0][0] = 0
    diagonals[1][0] = 1  # cell (0, 1)
    if LA >= 1:
        diagonals[1][1] = 1  # cell (1, 0)
    t1 = np.empty((LA + 1, B), dtype=np.int32)
    t2 = np.empty((LA + 1, B), dtype=np.int32)
    for k in range(2, LA + LB + 1):
        prev2, prev1, cur = diagonals[(k - 2) % 3], diagonals[(k - 1) % 3], diagonals[k % 3]
        cur.fill(big)
        if k <= LB:
            cur[0] = k  # (0, k): k insertions
        if k <= LA:
            cur[k] = k  # (k, 0): k deletions
        lo, hi = max(1, k - LB), min(LA, k - 1)
        if lo <= hi:
            ii = np.arange(lo, hi + 1)
            m = hi + 1 - lo
            x, y = t1[:m], t2[:m]
            np.not_equal(aT[ii - 1], bT[k - ii - 1], out=x, casting="unsafe")
            np.add(x, prev2[lo - 1 : hi], out=x)  # substitute (or match)
            np.minimum(prev1[lo - 1 : hi], prev1[lo : hi + 1], out=y)
            np.add(y, 1, out=y)  # delete or insert
            np.minimum(x, y, out=cur[lo : hi + 1])
        done = finish[k]
        if len(done):
            out[done] = cur[la[done], done]
    return out


def gated_edit_score(n: int, refs, ref_len, queries, q_len, success) -> np.ndarray:
    """SED = SR * (1 - ED(A_R, A_Q) / max(|A_R|, |A_Q|)): the programme runs on successes only."""
    out = np.zeros(len(refs))
    ok = np.flatnonzero(success)
    if len(ok) == 0:
        return out
    lr, lq = ref_len[ok] - 1, q_len[ok] - 1  # edge counts
    r = refs[ok, : int(lr.max()) + 1]
    q = queries[ok, : int(lq.max()) + 1]
    er = r[:, :-1] * n + r[:, 1:]  # edge (u, v) as one integer
    eq = q[:, :-1] * n + q[:, 1:]
    ed = edit_distance_padded(er, lr, eq, lq)
    longest = np.maximum(lr, lq)
    out[ok] = np.where(longest > 0, 1.0 - ed / np.maximum(longest, 1), 1.0)
    return out


# ----------------------------------------------------------------------------- the batch
@dataclass(eq=False)
class Batch:
    """A batch of (reference, query) pairs of one scan; each metric is computed on first access.

    `references`/`queries` are padded (B, L) index arrays with lengths `ref_len`/`query_len`
    (see `pack`). Properties are (B,) float64 arrays named as in `METRICS` (plus `pc`, `ls`).
    """

    distances: np.ndarray
    references: np.ndarray
    ref_len: np.ndarray
    queries: np.ndarray
    query_len: np.ndarray
    threshold: float = DEFAULT_THRESHOLD
    spl_reference: str = "shortest"
    validate: bool = True  # score_batch validates the whole input once, then skips it per chunk

    def __post_init__(self) -> None:
        if not (self.threshold > 0 and np.isfinite(self.threshold)):
            raise ValueError(f"threshold must be a finite number > 0, got {self.threshold}")
        if self.spl_reference not in SPL_REFERENCES:
            raise ValueError(f"spl_reference must be one of {SPL_REFERENCES}, got {self.spl_reference!r}")
        self.references = np.asarray(self.references, dtype=np.int64)
        self.queries = np.asarray(self.queries, dtype=np.int64)
        self.ref_len = np.asarray(self.ref_len, dtype=np.int64)
        self.query_len = np.asarray(self.query_len, dtype=np.int64)
        if len(self.references) != len(self.queries):
            raise ValueError(f"{len(self.references)} references but {len(self.queries)} queries")
        if self.validate:
            _check(self.distances, self.references, self.ref_len, "reference")
            _check(self.distances, self.queries, self.query_len, "query")
        # Trim padding beyond the longest path (callers may pass generously padded arrays).
        self.references = self.references[:, : max(int(self.ref_len.max(initial=1)), 1)]
        self.queries = self.queries[:, : max(int(self.query_len.max(initial=1)), 1)]
        self._rows = np.arange(len(self.references))

    def __len__(self) -> int:
        return len(self.references)

    # ------------------------------------------------------------------ shared pieces
    @cached_property
    def _r_mask(self) -> np.ndarray:
        return np.arange(self.references.shape[1]) < self.ref_len[:, None]

    @cached_property
    def _q_mask(self) -> np.ndarray:
        return np.arange(self.queries.shape[1]) < self.query_len[:, None]

    @cached_property
    def _r_last(self) -> np.ndarray:
        return self.references[self._rows, self.ref_len - 1]

    @cached_property
    def _cross(self) -> np.ndarray:
        """(Lr, Lq, B) d(r_i, q_j), batch last; +inf in padding (a sentinel node infinitely far from all)."""
        n = len(self.distances)
        ext = np.full((n + 1, n + 1), np.inf)
        ext[:n, :n] = self.distances
        r = np.where(self._r_mask, self.references, n).T
        q = np.where(self._q_mask, self.queries, n).T
        return ext[r[:, None, :], q[None, :, :]]

    def _length(self, paths: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if paths.shape[1] < 2:
            return np.zeros(len(paths))
        # Steps laid out (L - 1, B) and summed along axis 0: plain left-to-right sums, so padding
        # never changes the rounding (numpy's pairwise sum along a row would).
        step = self.distances[paths[:, :-1].T, paths[:, 1:].T]
        return np.where(mask[:, 1:].T, step, 0.0).sum(axis=0)

    @cached_property
    def pl_reference(self) -> np.ndarray:
        """PL(R), the reference path's own length."""
        return self._length(self.references, self._r_mask)

    # ------------------------------------------------------------------ metrics
    @cached_property
    def pl(self) -> np.ndarray:
        return self._length(self.queries, self._q_mask)

    @cached_property
    def ne(self) -> np.ndarray:
        return self.distances[self.queries[self._rows, self.query_len - 1], self._r_last]

    @cached_property
    def one(self) -> np.ndarray:
        to_goal = self.distances[self.queries, self._r_last[:, None]]
        return np.where(self._q_mask, to_goal, np.inf).min(axis=1)

    @cached_property
    def sr(self) -> np.ndarray:
        return (self.ne <= self.threshold).astype(np.float64)

    @cached_property
    def osr(self) -> np.ndarray:
        return (self.one <= self.threshold).astype(np.float64)

    @cached_property
    def spl(self) -> np.ndarray:
        if self.spl_reference == "path":
            ref = self.pl_reference
        else:
            ref = self.distances[self.queries[:, 0], self._r_last]
        longest = np.maximum(self.pl, ref)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(longest > 0, ref / np.where(longest > 0, longest, 1.0), 1.0)
        ratio = np.where(np.isfinite(ref), ratio, 0.0)
        return np.where(self.sr > 0, ratio, 0.0)

    @cached_property
    def sed(self) -> np.ndarray:
        return gated_edit_score(
            len(self.distances), self.references, self.ref_len, self.queries, self.query_len, self.sr > 0
        )

    @cached_property
    def pc(self) -> np.ndarray:
        cover = np.exp(self._cross.min(axis=1) / -self.threshold)  # padded rows: exp(-inf) = 0
        return cover.sum(axis=0) / self.ref_len

    @cached_property
    def ls(self) -> np.ndarray:
        pl = self.pl
        with np.errstate(invalid="ignore"):
            epl = np.where(self.pc > 0, self.pc * self.pl_reference, 0.0)  # PC = 0 makes EPL 0, even if PL(R) = inf
            denom = epl + np.abs(epl - pl)
        finite = np.isfinite(denom) & np.isfinite(epl)
        safe = np.where(finite & (denom > 0), denom, 1.0)
        return np.where(denom == 0, 1.0, np.where(finite, epl / safe, 0.0))

    @cached_property
    def cls(self) -> np.ndarray:
        return self.pc * self.ls

    @cached_property
    def dtw(self) -> np.ndarray:
        return dtw_padded(self._cross, self.ref_len, self.query_len)

    @cached_property
    def ndtw(self) -> np.ndarray:
        return np.exp(-self.dtw / (self.ref_len * self.threshold))

    @cached_property
    def sdtw(self) -> np.ndarray:
        return np.where(self.sr > 0, self.ndtw, 0.0)

    @cached_property
    def _d_q_r(self) -> np.ndarray:
        return self._cross.min(axis=0)  # (Lq, B)

    @cached_property
    def ad(self) -> np.ndarray:
        return np.where(self._q_mask.T, self._d_q_r, 0.0).sum(axis=0) / self.query_len

    @cached_property
    def md(self) -> np.ndarray:
        return np.where(self._q_mask.T, self._d_q_r, -np.inf).max(axis=0)

    def scores(self, metrics=METRICS) -> dict[str, np.ndarray]:
        return {m: getattr(self, m) for m in metrics}


def _chunks(ref_len: np.ndarray, q_len: np.ndarray, chunk_size: int, min_size: int = 512):
    """Index arrays of chunks of pairs with similar lengths, so padded work stays near the real work.

    Pairs are sorted by (|R|, |Q|); chunks end where |R| changes once they hold `min_size` pairs,
    and never exceed `chunk_size` pairs.
    """
    order = np.lexsort((q_len, ref_len))
    cuts = np.flatnonzero(np.diff(ref_len[order])) + 1  # where |R| changes
    start = 0
    for cut in [*cuts.tolist(), len(order)]:
        while cut - start > chunk_size:
            yield order[start : start + chunk_size]
            start += chunk_size
        if cut - start >= min_size or cut == len(order):
            if cut > start:
                yield order[start:cut]
            start = cut


def score_batch(
    distances: np.ndarray,
    references,
    queries,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    keep_repeats: bool = False,
    spl_reference: str = "shortest",
    metrics=METRICS,
    chunk_size: int = DEFAULT_CHUNK,
) -> dict[str, np.ndarray]:
    """Score many (reference, query) pairs of one scan: {metric: (B,) float64 array}.

    `references`/`queries` are lists of index sequences, or (padded array, lengths) tuples from
    `pack`. Pairs are sorted by length and scored in chunks so padding stays small.
    """
    refs, ref_len = references if isinstance(references, tuple) else pack(references)
    qs, q_len = queries if isinstance(queries, tuple) else pack(queries)
    refs, qs = np.asarray(refs, dtype=np.int64), np.asarray(qs, dtype=np.int64)
    ref_len, q_len = np.asarray(ref_len, dtype=np.int64), np.asarray(q_len, dtype=np.int64)
    if len(refs) != len(qs):
        raise ValueError(f"{len(refs)} references but {len(qs)} queries")
    for name in metrics:
        if name not in METRICS and name not in EXTRA:
            raise ValueError(f"unknown metric {name!r}; known: {METRICS + EXTRA}")
    if not (threshold > 0 and np.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number > 0, got {threshold}")
    if spl_reference not in SPL_REFERENCES:
        raise ValueError(f"spl_reference must be one of {SPL_REFERENCES}, got {spl_reference!r}")
    _check(distances, refs, ref_len, "reference")
    _check(distances, qs, q_len, "query")
    if not keep_repeats and len(qs):
        qs, q_len = collapse_repeats_padded(qs, q_len)
    # SED's programme runs once over all successes (few), not once per chunk.
    per_chunk = [m for m in metrics if m != "sed"] + (["sr"] if "sed" in metrics and "sr" not in metrics else [])
    out = {m: np.empty(len(refs)) for m in per_chunk}
    for sel in _chunks(ref_len, q_len, chunk_size):
        batch = Batch(distances, refs[sel], ref_len[sel], qs[sel], q_len[sel], threshold, spl_reference, False)
        for m in per_chunk:
            out[m][sel] = getattr(batch, m)
    if "sed" in metrics:
        out["sed"] = gated_edit_score(len(distances), refs, ref_len, qs, q_len, out["sr"] > 0)
    return {m: out[m] for m in metrics}


# ----------------------------------------------------------------------------- one pair
def _pair(reference, query, distances):
    """(distances matrix, [reference indices], [query indices]); a NavGraph maps viewpoint ids."""
    if hasattr(distances, "indices") and hasattr(distances, "distances"):  # a NavGraph
        return distances.distances, [distances.indices(reference)], [distances.indices(query)]
    return np.asarray(distances), [np.asarray(reference, dtype=np.int64)], [np.asarray(query, dtype=np.int64)]


def score(
    reference,
    query,
    distances,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    keep_repeats: bool = False,
    spl_reference: str = "shortest",
    metrics=METRICS,
) -> dict[str, float]:
    """All (or the named) metrics of one pair, as floats. `distances`: (n, n) matrix or a NavGraph."""
    dist, refs, qs = _pair(reference, query, distances)
    out = score_batch(
        dist, refs, qs, threshold, keep_repeats=keep_repeats, spl_reference=spl_reference, metrics=metrics
    )
    return {m: float(v[0]) for m, v in out.items()}


def _single(name: str):
    def metric(reference, query, distances, threshold: float = DEFAULT_THRESHOLD, **kwargs) -> float:
        return score(reference, query, distances, threshold, metrics=(name,), **kwargs)[name]

    metric.__name__ = name
    metric.__qualname__ = name
    metric.__doc__ = f"{name.upper()} of one (reference, query) pair (see the module docstring for conventions)."
    return metric


pl = _single("pl")
ne = _single("ne")
one = _single("one")
sr = _single("sr")
osr = _single("osr")
spl = _single("spl")
sed = _single("sed")
pc = _single("pc")
ls = _single("ls")
cls = _single("cls")
dtw = _single("dtw")
ndtw = _single("ndtw")
sdtw = _single("sdtw")
ad = _single("ad")
md = _single("md")


# ----------------------------------------------------------------------------- aggregation
# Sums for summaries are exact (see `vlnkit.io.exactsum`), so a mean does not depend on the order in
# which a runner combines partial sums.


def totals(scores: dict[str, np.ndarray]) -> dict[str, int]:
    """Summable totals: `count`, and per metric the exact sum (`exact_sum`) and count of its finite values."""
    out: dict[str, int] = {}
    for name, values in scores.items():
        finite = np.isfinite(values)
        out[f"sum_{name}"] = exact_sum(values[finite])
        out[f"finite_{name}"] = int(finite.sum())
        out["count"] = len(values)
    return out


def means(summed: dict, metrics=METRICS) -> tuple[dict[str, float | None], dict[str, int]]:
    """(mean of each metric's finite values or None, count of non-finite values) from summed `totals`."""
    count = int(summed.get("count", 0))
    mean, nulls = {}, {}
    for m in metrics:
        n = int(summed.get(f"finite_{m}", 0))
        mean[m] = summed.get(f"sum_{m}", 0) / (n << SUM_SCALE) if n else None  # one correctly rounded division
        nulls[m] = count - n
    return mean, nulls
