"""A test oracle: the numpy implementation of the path metrics the compiled kernels are tested against.

It is written differently from the compiled kernels (`vlnkit.evaluation.kernels`): whole-batch array
operations, dynamic programmes swept by anti-diagonals; so it checks them independently, in the tests
and the benchmarks. It does not ship with the package. Use `vlnkit.evaluation.batch.score_batch` / `vlnkit.evaluation.metrics`.

Conventions are those of `vlnkit.evaluation.metrics` with the default success rule (NE <= d_th). The DTW and edit-distance programmes sweep
anti-diagonals k = i + j over the whole batch (Python loops run |R| + |Q| times per batch, not per pair).

>>> import numpy as np
>>> d = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
>>> float(score_batch(d, [[0, 1, 2]], [[0, 1]], metrics=("dtw",))["dtw"][0])
1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vlnkit.evaluation.common import (
    DEFAULT_THRESHOLD,
    EXTRA,
    METRICS,
    SPL_REFERENCES,
    check_paths,
    collapse_repeats_padded,
    pack,
)

DEFAULT_CHUNK = 8192  # pairs per padded chunk (bounds the (chunk, |R|, |Q|) intermediate arrays)


def _check(distances: np.ndarray, paths: np.ndarray, lengths: np.ndarray, what: str) -> None:
    check_paths(len(distances), paths, lengths, what)


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
