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
    mantissa, exponent = np.frexp(np.asarray(values, dtype=np.float64))  # v = m * 2**e, 0.5 <= |m| < 1
    ints = (mantissa * 2.0**53).astype(np.int64)  # exact: |ints| < 2**53
    shifts = exponent.astype(np.int64) + (SUM_SCALE - 53)
    total = 0
    for shift in np.unique(shifts).tolist():
        part = ints[shifts == shift]
        high = part >> 26  # split so that int64 sums cannot overflow
        low = part - (high << 26)
        total += ((int(high.sum()) << 26) + int(low.sum())) << shift
    return total


def exact_mean(total: int, count: int) -> float | None:
    """The mean from an `exact_sum` total and a count (None when the count is 0)."""
    return total / (count << SUM_SCALE) if count else None
