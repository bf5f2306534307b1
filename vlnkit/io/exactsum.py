"""Exact, order-independent sums of floats for run summaries.

A runner combines partial sums in whatever order its bundles finish, and float addition is not
associative, so plain float sums make summaries differ in the last bits between runners. These
sums are integers in units of 2**-SUM_SCALE: exact, so every runner gives the same bits, and a
mean is one correctly rounded division.
"""

from __future__ import annotations

import numpy as np

SUM_SCALE = 1130  # 2**-1074 is the smallest float64 and frexp mantissas carry 53 bits: all fit


def exact_sum(values) -> int:
    """The exact sum of finite float64 values, as an integer count of 2**-SUM_SCALE.

    >>> exact_sum([0.1, 0.2]) / 2**SUM_SCALE == 0.30000000000000004  # one rounding, at the end
    True
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    return exact_sums_by(np.zeros(len(values), np.int64), values, 1)[0][0]


def exact_sums_by(groups, values, n_groups: int) -> tuple[list[int], list[int]]:
    """Per group g in range(n_groups): (the exact sum of the finite values of rows in g, how many there
    are), in one vectorized pass: rows are sorted by (group, exponent) and each run of one exponent is
    summed in int64 (mantissas split in two halves so 2**26 rows cannot overflow), then shifted.

    >>> exact_sums_by(np.array([1, 0, 1]), np.array([1.0, np.nan, 0.5]), 3)[1]
    [0, 2, 0]
    """
    values = np.asarray(values, dtype=np.float64).ravel()
    groups = np.asarray(groups, dtype=np.int64).ravel()
    finite = np.isfinite(values)
    counts = np.bincount(groups[finite], minlength=n_groups).tolist()
    totals = [0] * n_groups
    mantissa, exponent = np.frexp(values[finite])  # v = m * 2**e, 0.5 <= |m| < 1
    if not len(mantissa):
        return totals, counts
    ints = (mantissa * 2.0**53).astype(np.int64)  # exact: |ints| < 2**53
    shifts = exponent.astype(np.int64) + (SUM_SCALE - 53)
    groups = groups[finite]
    order = np.lexsort((shifts, groups))  # runs of one (group, shift)
    shifts, ints, groups = shifts[order], ints[order], groups[order]
    starts = np.flatnonzero(np.concatenate(([True], (shifts[1:] != shifts[:-1]) | (groups[1:] != groups[:-1]))))
    high = ints >> 26  # split so that int64 sums cannot overflow
    low = ints - (high << 26)
    highs = np.add.reduceat(high, starts).tolist()
    lows = np.add.reduceat(low, starts).tolist()
    for g, h, lo, s in zip(groups[starts].tolist(), highs, lows, shifts[starts].tolist()):
        totals[g] += ((h << 26) + lo) << s
    return totals, counts


def exact_mean(total: int, count: int) -> float | None:
    """The mean from an `exact_sum` total and a count (None when the count is 0)."""
    return total / (count << SUM_SCALE) if count else None
