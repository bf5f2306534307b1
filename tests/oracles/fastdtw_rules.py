"""A slow, plain reading of the fastdtw algorithm under either implementation's rules: the oracle the
compiled kernel (`vlnkit.continuous.kernels.fastdtw_cost`) is checked against where the `fastdtw`
package's compiled extension is not built (a modern pip installs only its pure-Python fallback).

Written for this toolkit from the algorithm's description (Salvador & Chan's FastDTW: coarsen by
averaging pairs, solve the coarsest level exactly, project the path one level finer, widen it by the
radius, solve inside that window) and the three rules in which the package's two implementations
differ (see the docstring of `vlnkit.continuous.kernels`). Structure deliberately unlike the kernel:
cells in dicts keyed by (i, j), windows as sets, the coarse series as Python lists of numpy rows.
The tests check this oracle against both of the package's implementations wherever they import.
"""

from __future__ import annotations

import math

import numpy as np

INF = math.inf


def distance(a, b) -> float:
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    return math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])


def coarser(series: list) -> list:
    return [(series[k] + series[k + 1]) / 2 for k in range(0, len(series) - 1, 2)]


def window_dtw(x: list, y: list, cells: set, rules: str) -> tuple[float, list]:
    """DTW restricted to `cells`; returns (cost, path from (0, 0) to the end)."""
    rows: dict[int, list[int]] = {}
    for i, j in cells:
        rows.setdefault(i, []).append(j)
    bounds = {i: (min(js), max(js)) for i, js in rows.items()}
    cost: dict = {}
    back: dict = {}
    for i in sorted(rows):
        for j in sorted(rows[i]):
            d = distance(x[i], y[j])
            up = cost.get((i - 1, j), INF)
            left = cost.get((i, j - 1), INF)
            corner = 0.0 if (i, j) == (0, 0) else cost.get((i - 1, j - 1), INF)
            if rules == "compiled":
                if i > 0 and (i - 1) in bounds and j > bounds[i - 1][1]:
                    corner = INF  # no corner step into a column past the previous row's window
                if up < left and up < corner:
                    choice = ("up", up)
                elif left < corner:
                    choice = ("left", left)
                else:
                    choice = ("corner", corner)
                cost[i, j] = choice[1] + d
                back[i, j] = choice[0]
            else:
                options = [("up", up + d), ("left", left + d), ("corner", corner + d)]
                best = options[0]
                for option in options[1:]:
                    if option[1] < best[1]:
                        best = option
                cost[i, j] = best[1]
                back[i, j] = best[0]
    end = (len(x) - 1, len(y) - 1)
    path = [end]
    i, j = end
    while (i, j) != (0, 0):
        move = back[i, j]
        i, j = (i - 1, j) if move == "up" else (i, j - 1) if move == "left" else (i - 1, j - 1)
        path.append((i, j))
    return cost[end], path[::-1]


def widen(path: list, len_x: int, len_y: int, radius: int, rules: str) -> set:
    """The finer level's window: the coarse path's cells widened by the radius, each split in four."""
    last_x = path[-1][0]
    coarse = set()
    for i, j in path:
        for a in range(-radius, radius + 1):
            for b in range(-radius, radius + 1):
                coarse.add((i + a, j + b))
    if rules == "compiled":  # rows past the path's last row repeat the last row's columns
        last_row = sorted(j for i, j in coarse if i == last_x)
        coarse = {(i, j) for i, j in coarse if i <= last_x}
        for extra in range(1, radius + 1):
            coarse |= {(last_x + extra, j) for j in last_row}
    cells = set()
    for i, j in coarse:
        for a in (2 * i, 2 * i + 1):
            for b in (2 * j, 2 * j + 1):
                if 0 <= a < len_x and 0 <= b < len_y:
                    cells.add((a, b))
    return cells


def fastdtw(x, y, radius: int = 1, rules: str = "compiled") -> float:
    x = [np.asarray(p, dtype=float) for p in x]
    y = [np.asarray(p, dtype=float) for p in y]
    return _solve(x, y, radius, rules)[0]


def _solve(x: list, y: list, radius: int, rules: str) -> tuple[float, list]:
    if len(x) < radius + 2 or len(y) < radius + 2:
        return window_dtw(x, y, {(i, j) for i in range(len(x)) for j in range(len(y))}, rules)
    _, path = _solve(coarser(x), coarser(y), radius, rules)
    return window_dtw(x, y, widen(path, len(x), len(y), radius, rules), rules)


def plain_dtw(x, y) -> float:
    """Exact DTW by the textbook O(nm) recurrence, steps (1, 0), (0, 1), (1, 1)."""
    n, m = len(x), len(y)
    table = [[INF] * (m + 1) for _ in range(n + 1)]
    table[0][0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            table[i][j] = distance(x[i - 1], y[j - 1]) + min(table[i - 1][j], table[i][j - 1], table[i - 1][j - 1])
    return table[n][m]
