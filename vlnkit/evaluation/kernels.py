"""Compiled (numba) kernels behind the single-pair metrics and `score_batch` (rewards: `reward_kernels`).

Why compiled: every metric that loops (DTW, the edit distance behind SED, coverage for CLS, the
distance reductions of AD/MD/ONE) is a small dynamic programme or reduction over |R| x |Q| cells.
In numpy those cost a Python-level call per row or diagonal; here one pass over the cells computes
DTW, every reference node's distance to the query (PC) and every query node's distance to the
reference (AD, MD) together, for one pair or for a whole batch in one call.

The arithmetic is that of a plain numpy formulation (the test oracle `tests.oracles.numpy_metrics`), operation
for operation: the same distance-matrix orientation d[r, q], DTW cells as cost + min(...) (min is
exact, so the traversal order does not matter), sums added left to right. Results are therefore
bit-identical to it except where numpy's own summation order differs (see the tests for the bound).

Compiled functions are cached on disk (`cache=True`): a process pays the compilation once, and
later processes load the machine code (the cold-start cost is reported in benchmarks/RESULTS.md).

Output rows follow `common.ALL`: pl ne one sr osr spl sed cls dtw ndtw sdtw ad md pc ls.
The distance matrix must be square (n, n): callers check its shape (`common.check_distances`) before
a kernel indexes it, since node indices are checked against n = dist.shape[0] only.
Status codes (returned instead of raising, so the caller can word the error):
0 ok, 1 empty reference, 2 empty query, 3 reference node out of range, 4 query node out of range.
"""

from __future__ import annotations

import math

import numpy as np

from vlnkit.compiled import njit

PL, NE, ONE, SR, OSR, SPL, SED, CLS, DTW, NDTW, SDTW, AD, MD, PC, LS = range(15)
N_OUT = 15
INF = np.inf


@njit(cache=True)
def collapse_into(path, length, keep_repeats, out):
    """Copy path[:length] to out, dropping consecutive repeats unless keep_repeats; returns the new length."""
    if keep_repeats:
        for j in range(length):
            out[j] = path[j]
        return length
    m = 0
    for j in range(length):
        if m == 0 or path[j] != out[m - 1]:
            out[m] = path[j]
            m += 1
    return m


@njit(cache=True)
def check_path(path, length, n):
    """0 if path[:length] is non-empty with every node in [0, n); 1 if empty; 2 if a node is out of range."""
    if length < 1:
        return 1
    for j in range(length):
        if path[j] < 0 or path[j] >= n:
            return 2
    return 0


@njit(cache=True)
def path_length(dist, path, length):
    """Sum of d(p_k, p_k+1), added left to right."""
    total = 0.0
    for k in range(length - 1):
        total += dist[path[k], path[k + 1]]
    return total


@njit(cache=True)
def edge_edit_distance(r, lr, q, lq, n, work):
    """Levenshtein distance between the edge sequences of r[:lr] and q[:lq]; work: int64, >= 2 * lq + lr.

    An edge (u, v) is the one integer u * n + v (n nodes), so a cell compares one pair of integers.
    """
    la, lb = lr - 1, lq - 1
    if la <= 0 or lb <= 0:
        return max(la, lb, 0)
    prev = work[: lb + 1]
    eq = work[lb + 1 : 2 * lb + 1]
    er = work[2 * lb + 1 : 2 * lb + 1 + la]
    for j in range(lb):
        eq[j] = q[j] * n + q[j + 1]
    for i in range(la):
        er[i] = r[i] * n + r[i + 1]
    for j in range(lb + 1):
        prev[j] = j
    for i in range(1, la + 1):
        diag = prev[0]
        prev[0] = i
        e = er[i - 1]
        for j in range(1, lb + 1):
            sub = diag + (eq[j - 1] != e)
            gap = min(prev[j], prev[j - 1]) + 1
            diag = prev[j]
            prev[j] = min(sub, gap)
    return prev[lb]


@njit(cache=True, inline="always")
def _add_cover(cover, rmin, th):
    """cover + exp(-rmin / d_th), skipping the call where it is exactly 1 (rmin = 0) or 0 (rmin = inf)."""
    if rmin == 0.0:
        return cover + 1.0
    if rmin == INF:
        return cover
    return cover + math.exp(rmin / -th)


@njit(cache=True)
def pair_scores(
    dist, r, lr, q, lq, th, spl_path, strict, need_grid, need_ed, row, colmin, ed_work, out, given_sr, given_osr
):
    """Every metric of one (reference, query) pair into out[0:15]; q already collapsed if wanted.

    Work arrays: row (>= lq + 1 floats), colmin (>= lq floats), ed_work (>= 2 lq + lr ints).
    need_grid: DTW, PC and the query-to-reference distances (one |R| x |Q| pass); need_ed: SED.
    strict: success is NE < d_th (R2R eval.py) instead of NE <= d_th (the R4R/nDTW papers' code).
    given_sr, given_osr: a task's own success and oracle success (0 or 1; negative: the distance
    rule), which then gate SPL, SED and SDTW (`vlnkit.scoring.task`: REVERIE's object visibility).
    """
    g = r[lr - 1]
    pl = path_length(dist, q, lq)
    pl_ref = path_length(dist, r, lr)
    ne = dist[q[lq - 1], g]
    one = INF
    for j in range(lq):
        one = min(one, dist[q[j], g])
    sr = 1.0 if (ne < th if strict else ne <= th) else 0.0
    if given_sr >= 0:
        sr = given_sr
    ref = pl_ref if spl_path else dist[q[0], g]
    longest = max(pl, ref)
    ratio = ref / longest if longest > 0 else 1.0
    if not math.isfinite(ref):
        ratio = 0.0
    out[PL] = pl
    out[NE] = ne
    out[ONE] = one
    out[SR] = sr
    out[OSR] = 1.0 if (one < th if strict else one <= th) else 0.0
    if given_osr >= 0:
        out[OSR] = given_osr
    out[SPL] = ratio if sr > 0 else 0.0
    sed = 0.0
    if need_ed and sr > 0:
        longest_edges = max(lr - 1, lq - 1)
        if longest_edges > 0:
            ed = edge_edit_distance(r, lr, q, lq, dist.shape[0], ed_work)
            sed = 1.0 - float(ed) / float(longest_edges)
        else:
            sed = 1.0
    out[SED] = sed
    if not need_grid:
        return
    # One pass over the cells: DTW by rows of R, the row minima (PC) and column minima (AD, MD).
    # Rows go two at a time: row b's cell (b, j) needs row a's (a, j) and (a, j - 1), so the two
    # dependency chains (left to right along each row) interleave and the CPU overlaps them.
    row[0] = 0.0
    for j in range(1, lq + 1):
        row[j] = INF
        colmin[j - 1] = INF
    cover = 0.0
    i = 0
    while i + 1 < lr:
        ra, rb = r[i], r[i + 1]
        diag_a = row[0]
        row[0] = INF
        left_a = INF  # C[a, j - 1]
        left_b = INF  # C[b, j - 1]
        rmin_a = INF
        rmin_b = INF
        for j in range(1, lq + 1):
            qj = q[j - 1]
            ca = dist[ra, qj]
            cb = dist[rb, qj]
            up = row[j]
            cur_a = ca + min(min(up, diag_a), left_a)
            cur_b = cb + min(min(cur_a, left_a), left_b)  # up = C[a, j], diagonal = C[a, j - 1]
            diag_a = up
            left_a = cur_a
            left_b = cur_b
            row[j] = cur_b
            rmin_a = min(rmin_a, ca)
            rmin_b = min(rmin_b, cb)
            colmin[j - 1] = min(colmin[j - 1], min(ca, cb))
        cover = _add_cover(cover, rmin_a, th)
        cover = _add_cover(cover, rmin_b, th)
        i += 2
    if i < lr:  # an odd row left over
        ri = r[i]
        diag = row[0]
        row[0] = INF
        left = INF
        rmin = INF
        for j in range(1, lq + 1):
            c = dist[ri, q[j - 1]]
            up = row[j]
            left = c + min(min(up, diag), left)
            diag = up
            row[j] = left
            rmin = min(rmin, c)
            colmin[j - 1] = min(colmin[j - 1], c)
        cover = _add_cover(cover, rmin, th)
    dtw = row[lq]
    ndtw = math.exp(-dtw / (lr * th))
    pc = cover / lr
    epl = pc * pl_ref if pc > 0 else 0.0
    denom = epl + abs(epl - pl)
    if denom == 0:
        ls = 1.0
    elif math.isfinite(denom) and math.isfinite(epl):
        ls = epl / (denom if denom > 0 else 1.0)
    else:
        ls = 0.0
    total = 0.0
    worst = -INF
    for j in range(lq):
        total += colmin[j]
        worst = max(worst, colmin[j])
    out[DTW] = dtw
    out[NDTW] = ndtw
    out[SDTW] = ndtw if sr > 0 else 0.0
    out[PC] = pc
    out[LS] = ls
    out[CLS] = pc * ls
    out[AD] = total / lq
    out[MD] = worst


KEEP_REPEATS, SPL_PATH, NEED_GRID, NEED_ED, SUCCESS_LT = 1, 2, 4, 8, 16  # bits of `flags` (cheaper calls)


@njit(cache=True)
def score_into(dist, nodes, split, th, flags, out, ints, floats):
    """All metrics of one pair into out (15,), with its work arrays given; returns a status code (0 ok).

    nodes = reference then query node indices, split = |R|; ints: int64, >= 3 |Q| + |R|; floats: >= 2 |Q| + 1.
    Why given: a single pair's kernel is about a microsecond, of which each allocation took a noticeable
    part; the callers allocate one int and one float array for everything.
    """
    n = dist.shape[0]
    r = nodes[:split]
    q = nodes[split:]
    status = check_path(r, len(r), n)
    if status:
        return 1 if status == 1 else 3
    status = check_path(q, len(q), n)
    if status:
        return 2 if status == 1 else 4
    qq = ints[: len(q)]
    lq = collapse_into(q, len(q), flags & KEEP_REPEATS, qq)
    ed_work = ints[len(q) :]
    row = floats[: lq + 1]
    colmin = floats[lq + 1 : 2 * lq + 1]
    grid, ed, spl_path, strict = flags & NEED_GRID, flags & NEED_ED, flags & SPL_PATH, flags & SUCCESS_LT
    pair_scores(dist, r, len(r), qq, lq, th, spl_path, strict, grid, ed, row, colmin, ed_work, out, -1.0, -1.0)
    return 0


@njit(cache=True)
def score_one(dist, nodes, split, th, flags, out):
    """All metrics of one pair into out (15,); returns a status code (0 ok, see the module docstring).

    nodes = reference then query node indices, split = |R| (one array: one conversion, one argument).
    """
    lq = max(len(nodes) - split, 0)
    return score_into(dist, nodes, split, th, flags, out, np.empty(3 * lq + split, np.int64), np.empty(2 * lq + 1))


@njit(cache=True)
def metric_one(dist, nodes, split, th, flags, which):
    """One metric (output row `which`) of one pair; a negative value -s is status code s (metrics are >= 0)."""
    lq = max(len(nodes) - split, 0)
    floats = np.empty(N_OUT + 2 * lq + 1)
    status = score_into(
        dist, nodes, split, th, flags, floats[:N_OUT], np.empty(3 * lq + split, np.int64), floats[N_OUT:]
    )
    return -float(status) if status else floats[which]


@njit(cache=True)
def metric_codes(dist, codes, split, th, flags, which):
    """`metric_one` for nodes given as bytes, 4 little-endian bytes per node index (`NavGraph.index_codes`).

    Why bytes: a path of viewpoint ids becomes them by one join of the ids' codes (one C call), where
    an int64 array built from a tuple of Python ints converts the ints one by one: the id lookup was
    the largest part of a single pair's cost. The nodes then go through `score_into`, so the same bits.
    """
    m = len(codes) // 4
    lq = max(m - split, 0)
    ints = np.empty(m + 3 * lq + split, dtype=np.int64)  # the nodes, then score_into's work
    for k in range(m):
        j = 4 * k
        ints[k] = (
            np.int64(codes[j])
            | (np.int64(codes[j + 1]) << 8)
            | (np.int64(codes[j + 2]) << 16)
            | (np.int64(codes[j + 3]) << 24)
        )
    floats = np.empty(N_OUT + 2 * lq + 1)
    status = score_into(dist, ints[:m], split, th, flags, floats[:N_OUT], ints[m:], floats[N_OUT:])
    return -float(status) if status else floats[which]


@njit(cache=True, nogil=True)  # releases the GIL: threads of one worker can score batches in parallel
def score_many(dist, refs, ref_len, qs, q_len, th, keep_repeats, spl_path, strict, need_grid, need_ed, out):
    """All metrics of B padded pairs into out (15, B); returns (status, first bad pair) or (0, -1)."""
    n = dist.shape[0]
    B = refs.shape[0]
    for b in range(B):
        s = check_path(refs[b], ref_len[b], n)
        if s:
            return (1 if s == 1 else 3), b
        s = check_path(qs[b], q_len[b], n)
        if s:
            return (2 if s == 1 else 4), b
    width = qs.shape[1]
    qq = np.empty(width, dtype=np.int64)
    row = np.empty(width + 1)
    colmin = np.empty(width)
    ed_work = np.empty(2 * width + refs.shape[1], dtype=np.int64)
    vals = np.empty(N_OUT)
    for b in range(B):
        lq = collapse_into(qs[b], q_len[b], keep_repeats, qq)
        pair_scores(
            dist, refs[b], ref_len[b], qq, lq, th, spl_path, strict, need_grid, need_ed, row, colmin, ed_work, vals,
            -1.0, -1.0,
        )  # fmt: skip
        for k in range(N_OUT):
            out[k, b] = vals[k]
    return 0, -1


@njit(cache=True, nogil=True)  # releases the GIL: threads score disjoint pair ranges (vlnkit.parallel)
def score_flat_pairs(
    dist_flat, dist_start, sizes, adj_flat, pair_slot, r_off, r_nodes, q_off, q_nodes, th, keep_repeats,
    spl_path, strict, need_grid, need_ed, first, stop, out, jumps, q_len, q_out, ref_length, given_sr, given_osr,
):  # fmt: skip
    """Pairs first..stop-1 of many scans in one call, paths flat with offsets (no padding, no Python per scan).

    Pair b belongs to the scan in slot `pair_slot[b]`, whose (n, n) distance matrix is
    `dist_flat[dist_start[s]:dist_start[s] + n * n]` (n = sizes[s]) and whose adjacency is the same range of
    `adj_flat`. Per pair: the query collapsed unless keep_repeats (into q_out at the query's own offsets,
    its length into q_len), the steps that are neither a repeat nor an edge (jumps), every metric through
    `pair_scores` (into out[:, b]: the same call, so the same bits, as `score_many`) and the reference
    path's length. Nodes must be valid indices of their scan (the caller resolved them). `given_sr` and
    `given_osr` (one per pair, or empty for the distance rule) are a task's own success and oracle
    success (see `pair_scores`).
    """
    width = 1
    ref_width = 1
    for b in range(first, stop):
        width = max(width, q_off[b + 1] - q_off[b])
        ref_width = max(ref_width, r_off[b + 1] - r_off[b])
    row = np.empty(width + 1)
    colmin = np.empty(width)
    ed_work = np.empty(2 * width + ref_width, dtype=np.int64)
    vals = np.empty(N_OUT)
    for b in range(first, stop):
        s = pair_slot[b]
        n = sizes[s]
        dist = dist_flat[dist_start[s] : dist_start[s] + n * n].reshape((n, n))
        adj = adj_flat[dist_start[s] : dist_start[s] + n * n].reshape((n, n))
        r = r_nodes[r_off[b] : r_off[b + 1]]
        q = q_out[q_off[b] : q_off[b + 1]]
        lq = collapse_into(q_nodes[q_off[b] : q_off[b + 1]], q_off[b + 1] - q_off[b], keep_repeats, q)
        q_len[b] = lq
        j = 0
        for t in range(lq - 1):
            if q[t] != q[t + 1] and not adj[q[t], q[t + 1]]:
                j += 1
        jumps[b] = j
        gs = given_sr[b] if len(given_sr) else -1.0
        go = given_osr[b] if len(given_osr) else -1.0
        pair_scores(
            dist, r, len(r), q, lq, th, spl_path, strict, need_grid, need_ed, row, colmin, ed_work, vals, gs, go
        )
        for k in range(N_OUT):
            out[k, b] = vals[k]
        ref_length[b] = path_length(dist, r, len(r))
