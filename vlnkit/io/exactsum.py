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
    """The exact sum of finite float64 values, as an integer count of 2**-SUM_SCALE."""
    mantissa, exponent = np.frexp(np.asarray(values, dtype=np.float64).ravel())  # v = m * 2**e, 0.5 <= |m| < 1
    if not len(mantissa):
        return 0
    ints = (mantissa * 2.0**53).astype(np.int64)  # exact: |ints| < 2**53
    shifts = exponent.astype(np.int64) + (SUM_SCALE - 53)
    order = np.argsort(shifts, kind="stable")  # one group of equal shifts after another
    shifts, ints = shifts[order], ints[order]
    starts = np.flatnonzero(np.concatenate(([True], shifts[1:] != shifts[:-1])))
    high = ints >> 26  # split so that int64 sums cannot overflow
    low = ints - (high << 26)
    highs = np.add.reduceat(high, starts).tolist()
    lows = np.add.reduceat(low, starts).tolist()
    return sum(((h << 26) + lo) << s for h, lo, s in zip(highs, lows, shifts[starts].tolist()))


def exact_mean(total: int, count: int) -> float | None:
    """The mean from an `exact_sum` total and a count (None when the count is 0)."""
    return total / (count << SUM_SCALE) if count else None
