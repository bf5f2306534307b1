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
    are), in one vectorized pass without sorting: each value is an integer mantissa (53 bits, cut into
    three 18-bit parts) times a power of two, and the parts are summed per (group, exponent) bin with
    `bincount` (float64 sums of integers below 2**18 stay exact up to 2**35 rows per bin); only the
    occupied bins are shifted and added as Python integers.

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
    shifts = exponent.astype(np.int64)
    low_shift = int(shifts.min())
    span = int(shifts.max()) - low_shift + 1
    bins = groups[finite] * span + (shifts - low_shift)
    size = n_groups * span
    parts = [np.bincount(bins, ((ints >> (18 * k)) & 0x3FFFF).astype(np.float64), size) for k in (0, 1)]
    parts.append(np.bincount(bins, (ints >> 36).astype(np.float64), size))  # signed top part
    for b in np.flatnonzero(np.bincount(bins, minlength=size)).tolist():
        whole = int(parts[0][b]) + (int(parts[1][b]) << 18) + (int(parts[2][b]) << 36)
        totals[b // span] += whole << (b % span + low_shift + SUM_SCALE - 53)
    return totals, counts


def exact_mean(total: int, count: int) -> float | None:
    """The mean from an `exact_sum` total and a count (None when the count is 0)."""
    return total / (count << SUM_SCALE) if count else None
