"""Compiled (numba) kernels for paths of 3-D positions: exact DTW with coverage, fastdtw, repeats, lengths.

Why compiled and why written here: a continuous episode compares a few hundred agent positions with a
few dozen ground-truth locations, and a split has thousands of episodes. Every kernel takes *many*
paths in one call (flat (n, 3) float64 points plus int64 offsets), so a whole split is one call with
no Python loop per episode; `nogil=True` lets threads of one worker score batches side by side, and
`cache=True` keeps the machine code on disk.

The point distance is the 3-D euclidean distance, computed as sqrt((d0*d0 + d1*d1) + d2*d2) with
d = b - a (the order of `numpy.linalg.norm(b - a)` in VLN-CE's `euclidean_distance`).

fastdtw
-------
VLN-CE (jacobkrantz/VLN-CE `habitat_extensions/measures.py`, class NDTW) calls
`fastdtw(agent_locations, gt_locations, dist=euclidean_distance)[0]`, radius 1 (the default). The
`fastdtw` package (0.3.4) holds two implementations and `from fastdtw import fastdtw` takes the
compiled one (`fastdtw/_fastdtw.pyx`) when it was built and the pure-Python one (`fastdtw/fastdtw.py`)
otherwise (a modern pip builds the package without numpy and falls back to pure Python; the pip of
VLN-CE's time built the extension). The two give different numbers on some inputs (about 7% of random
3-D walks), because they differ in three rules, all reproduced here (`rules`):

1. Ties. The compiled one compares the three predecessors' costs and keeps the corner on a tie, then
   left, then up (`d_up < d_left and d_up < d_corner` -> up; `d_left < d_corner` -> left; else
   corner). The pure-Python one compares predecessor cost + cell distance and keeps the first
   smallest of (up, left, corner). Ties decide the coarse path and so the next level's window.
2. The corner step into a cell one column beyond the previous row's window: the compiled one does
   not offer it (its corner test is `y <= high[x - 1]`, not `y - 1 <= high[x - 1]`).
3. The window rows beyond the coarse path's last row: the compiled one copies the bounds of the last
   row; the pure-Python one expands the path's cells by the radius like every other row.

Both halve the series by averaging pairs ((a + b) / 2, an odd last point dropped) until one is
shorter than radius + 2, run full DTW there, and at each finer level run DTW in the window made of the
coarse path widened by the radius and doubled. Costs are accumulated as predecessor + distance in
row-major order, as both do, so on the same distances the results are bit-identical.

Here x is always the agent's path and y the reference (fastdtw is not symmetric).
"""

from __future__ import annotations

import math

import numpy as np

from vlnkit.compiled import njit

INF = np.inf
RULES_COMPILED, RULES_PYTHON = 0, 1
UP, LEFT, CORNER = 0, 1, 2


@njit(cache=True, nogil=True, inline="always")
def point_distance(a, i, b, j):
    """Euclidean distance between a[i] and b[j] (rows of (n, 3) arrays), as sqrt of b - a squared."""
    d0 = b[j, 0] - a[i, 0]
    d1 = b[j, 1] - a[i, 1]
    d2 = b[j, 2] - a[i, 2]
    return math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)


@njit(cache=True, nogil=True)
def collapse_repeats(points, offsets, keep, new_offsets):
    """Mark in `keep` the points that are not equal to the point before them in their own path.

    A point repeats the previous one when all three coordinates are equal numbers (==, so 0.0 and
    -0.0 are equal), which is VLN-CE's `current_position == self.locations[-1]` on position lists.
    The first point of every path is kept. new_offsets (n + 1) receives the offsets of the kept points.
    """
    n = offsets.shape[0] - 1
    new_offsets[0] = 0
    kept = 0
    for p in range(n):
        start, end = offsets[p], offsets[p + 1]
        for k in range(start, end):
            if (
                k == start
                or points[k, 0] != points[k - 1, 0]
                or points[k, 1] != points[k - 1, 1]
                or points[k, 2] != points[k - 1, 2]
            ):
                keep[k] = True
                kept += 1
            else:
                keep[k] = False
        new_offsets[p + 1] = kept


@njit(cache=True, nogil=True)
def path_lengths(points, offsets, out):
    """Sum of the distances between consecutive points of every path, added left to right."""
    for p in range(offsets.shape[0] - 1):
        total = 0.0
        for k in range(offsets[p], offsets[p + 1] - 1):
            total += point_distance(points, k, points, k + 1)
        out[p] = total


@njit(cache=True, nogil=True)
def dtw_and_coverage(ref, ref_off, qry, qry_off, pairs, need_dtw, th, dtw_out, pc_out):
    """Exact DTW and path coverage of pairs (reference row, query row) of two path sets, in one pass.

    DTW: the smallest sum of point distances over monotone alignments of reference and query (steps
    (1, 0), (0, 1), (1, 1), both ends aligned), computed by rows of the reference with one row of
    cells kept. PC: the mean over reference points r of exp(-d(r, Q) / th), d(r, Q) the distance to
    the nearest query point. need_dtw = False computes PC only (the fastdtw mode).
    """
    width = 1
    for b in range(pairs.shape[0]):
        q = pairs[b, 1]
        width = max(width, qry_off[q + 1] - qry_off[q])
    row = np.empty(width + 1)
    for b in range(pairs.shape[0]):
        r, q = pairs[b, 0], pairs[b, 1]
        r0, r1 = ref_off[r], ref_off[r + 1]
        q0, q1 = qry_off[q], qry_off[q + 1]
        lq = q1 - q0
        row[0] = 0.0
        for j in range(1, lq + 1):
            row[j] = INF
        cover = 0.0
        for i in range(r0, r1):
            diag = row[0]
            row[0] = INF
            left = INF
            rmin = INF
            for j in range(1, lq + 1):
                c = point_distance(ref, i, qry, q0 + j - 1)
                rmin = min(rmin, c)
                if need_dtw:
                    up = row[j]
                    left = c + min(min(up, diag), left)
                    diag = up
                    row[j] = left
            cover += math.exp(rmin / -th)
        dtw_out[b] = row[lq] if need_dtw else np.nan
        pc_out[b] = cover / (r1 - r0)


# ----------------------------------------------------------------------------- fastdtw
@njit(cache=True, nogil=True)
def _halve(src, n, dst):
    """dst[k] = (src[2k] + src[2k + 1]) / 2 for k < n // 2 (an odd last point is dropped)."""
    for k in range(n // 2):
        for c in range(3):
            dst[k, c] = (src[2 * k, c] + src[2 * k + 1, c]) / 2


@njit(cache=True, nogil=True)
def _window_dtw(x, nx, y, ny, low, high, rules, want_path, path_x, path_y):
    """DTW of x[:nx] and y[:ny] inside the window rows [low[i], high[i]]; returns (cost, path length).

    With want_path the path (cells from (0, 0) to (nx - 1, ny - 1)) is written to path_x, path_y.
    """
    start = np.empty(nx + 1, dtype=np.int64)
    start[0] = 0
    for i in range(nx):
        start[i + 1] = start[i] + (high[i] - low[i] + 1)
    size = start[nx]
    cost = np.empty(size)
    pred = np.empty(size, dtype=np.int8)
    for i in range(nx):
        lo, hi = low[i], high[i]
        for j in range(lo, hi + 1):
            w = start[i] + (j - lo)
            dt = point_distance(x, i, y, j)
            if i == 0 and j == 0:
                d_up = INF
                d_left = INF
                d_corner = 0.0
            else:
                d_left = cost[w - 1] if j > lo else INF
                d_up = INF
                d_corner = INF
                if i > 0:
                    plo, phi = low[i - 1], high[i - 1]
                    if plo <= j <= phi:
                        d_up = cost[start[i - 1] + (j - plo)]
                    corner_ok = (plo <= j - 1 <= phi) if rules == RULES_PYTHON else (plo + 1 <= j <= phi)
                    if corner_ok:
                        d_corner = cost[start[i - 1] + (j - 1 - plo)]
            if rules == RULES_COMPILED:
                if d_up < d_left and d_up < d_corner:
                    cost[w] = d_up + dt
                    pred[w] = UP
                elif d_left < d_corner:
                    cost[w] = d_left + dt
                    pred[w] = LEFT
                else:
                    cost[w] = d_corner + dt
                    pred[w] = CORNER
            else:
                s_up = d_up + dt
                s_left = d_left + dt
                s_corner = d_corner + dt
                best, move = s_up, UP
                if s_left < best:
                    best, move = s_left, LEFT
                if s_corner < best:
                    best, move = s_corner, CORNER
                cost[w] = best
                pred[w] = move
    total = cost[size - 1]
    count = 0
    if want_path:
        i, j = nx - 1, ny - 1
        while True:
            path_x[count] = i
            path_y[count] = j
            count += 1
            if i == 0 and j == 0:
                break
            move = pred[start[i] + (j - low[i])]
            if move == UP:
                i -= 1
            elif move == LEFT:
                j -= 1
            else:
                i -= 1
                j -= 1
        for k in range(count // 2):  # reverse into (0, 0) .. (nx - 1, ny - 1)
            path_x[k], path_x[count - 1 - k] = path_x[count - 1 - k], path_x[k]
            path_y[k], path_y[count - 1 - k] = path_y[count - 1 - k], path_y[k]
    return total, count


@njit(cache=True, nogil=True)
def _expand_window(path_x, path_y, count, radius, nx, ny, rules, low, high):
    """The fine level's window rows (low, high) for series of lengths nx, ny, from the coarse path."""
    max_x = path_x[count - 1]
    max_y = path_y[count - 1]
    low1 = np.empty(max_x + 1, dtype=np.int64)
    high1 = np.empty(max_x + 1, dtype=np.int64)
    current = -1
    for k in range(count):
        if path_x[k] != current:
            current = path_x[k]
            low1[current] = path_y[k]
        high1[current] = path_y[k]
    prev_lo, prev_hi = 0, 0
    for cx in range(max_x + radius + 1):
        if cx <= max_x or rules == RULES_PYTHON:
            lo = max(0, low1[max(0, cx - radius)] - radius)
            hi = min(max_y + radius, high1[min(max_x, cx + radius)] + radius)
        else:  # the compiled rule: rows past the path copy the last row
            lo, hi = prev_lo, prev_hi
        prev_lo, prev_hi = lo, hi
        for fx in (2 * cx, 2 * cx + 1):
            if fx < nx:
                low[fx] = 2 * lo
                high[fx] = min(ny - 1, 2 * hi + 1)


@njit(cache=True, nogil=True)
def fastdtw_cost(x, y, radius, rules):
    """The `fastdtw` package's distance between x (n, 3) and y (m, 3), both non-empty (see the module doc)."""
    n, m = x.shape[0], y.shape[0]
    # The levels: level 0 is (x, y); each next one halves both, while both have radius + 2 points.
    levels = 1
    a, b = n, m
    while a >= radius + 2 and b >= radius + 2:
        a //= 2
        b //= 2
        levels += 1
    lens_x = np.empty(levels, dtype=np.int64)
    lens_y = np.empty(levels, dtype=np.int64)
    lens_x[0], lens_y[0] = n, m
    for k in range(1, levels):
        lens_x[k] = lens_x[k - 1] // 2
        lens_y[k] = lens_y[k - 1] // 2
    xs = np.empty((levels, n, 3))
    ys = np.empty((levels, m, 3))
    xs[0] = x
    ys[0] = y
    for k in range(1, levels):
        _halve(xs[k - 1], lens_x[k - 1], xs[k])
        _halve(ys[k - 1], lens_y[k - 1], ys[k])
    path_x = np.empty(n + m, dtype=np.int64)
    path_y = np.empty(n + m, dtype=np.int64)
    low = np.empty(n, dtype=np.int64)
    high = np.empty(n, dtype=np.int64)
    top = levels - 1
    nx, ny = lens_x[top], lens_y[top]
    for i in range(nx):  # the coarsest level: the full grid
        low[i] = 0
        high[i] = ny - 1
    total, count = _window_dtw(xs[top], nx, ys[top], ny, low, high, rules, top > 0, path_x, path_y)
    for k in range(top - 1, -1, -1):
        nx, ny = lens_x[k], lens_y[k]
        _expand_window(path_x, path_y, count, radius, nx, ny, rules, low, high)
        total, count = _window_dtw(xs[k], nx, ys[k], ny, low, high, rules, k > 0, path_x, path_y)
    return total


@njit(cache=True, nogil=True)
def fastdtw_many(ref, ref_off, qry, qry_off, pairs, radius, rules, out):
    """fastdtw(query, reference) of every pair (reference row, query row), into out."""
    for b in range(pairs.shape[0]):
        r, q = pairs[b, 0], pairs[b, 1]
        out[b] = fastdtw_cost(qry[qry_off[q] : qry_off[q + 1]], ref[ref_off[r] : ref_off[r + 1]], radius, rules)
