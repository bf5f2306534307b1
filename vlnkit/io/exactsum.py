"""Exact, order-independent sums of floats for run summaries.

A runner combines partial sums in whatever order its bundles finish, and float addition is not
associative, so plain float sums make summaries differ in the last bits between runners. These
sums are integers in units of 2**-SUM_SCALE: exact, so every runner gives the same bits, and a
mean is one correctly rounded division.
"""

from __future__ import annotations

import numpy as np

from vlnkit.compiled import njit

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
    are), in one compiled pass without sorting: each value is an integer mantissa (53 bits, read from its
    bits and kept as two int64 limbs of 32 and 21 bits) times a power of two, and the limbs are summed per
    (group, exponent) bin; only the occupied bins are shifted and added as Python integers.

    `groups` is (n,) or (n, D): a row counts in every group of its row of `groups` (-1: none), so one
    pass sums an episode into its agent and each of its breakdown groups.

    Why compiled: the score job sums 13 metrics of every episode per bucket; as numpy passes (frexp,
    casts, three bincounts) that is about a second per million episodes, the single largest cost of
    the job after reading.

    >>> totals, counts = exact_sums_by(np.array([1, 0, 1]), np.array([1.0, np.nan, 0.5]), 3)
    >>> totals[1] == 3 * 2 ** (SUM_SCALE - 1), counts
    (True, [0, 2, 0])
    >>> exact_sums_by(np.array([[0, 2], [1, -1]]), np.array([1.0, 2.0]), 3)[1]
    [1, 1, 1]
    """
    values = np.ascontiguousarray(values, dtype=np.float64).ravel()
    groups = np.ascontiguousarray(groups, dtype=np.int64)
    groups = groups if groups.ndim == 2 else groups.reshape(-1, 1)
    if len(groups) != len(values):
        raise ValueError(f"{len(groups)} groups for {len(values)} values")
    if groups.size and (groups.min() < -1 or groups.max() >= n_groups):
        raise ValueError(f"groups must be in [0, {n_groups}) (or -1 for none)")
    bits = values.view(np.int64)
    low, high = _exponent_range(bits)
    if low > high:  # no finite value other than zero
        return [0] * n_groups, [int(c) for c in _finite_counts(groups, bits, n_groups)]
    bins = np.zeros((n_groups, high - low + 1, 2), np.int64)
    counts = _bin_limbs(groups, bits, low, bins)
    totals = [0] * n_groups
    occupied = np.nonzero(bins.any(axis=2))
    limbs = bins[occupied]
    for g, e, low_limb, high_limb in zip(
        occupied[0].tolist(), occupied[1].tolist(), limbs[:, 0].tolist(), limbs[:, 1].tolist()
    ):
        whole = (high_limb << 32) + low_limb
        shift = e + low + SUM_SCALE - 53
        totals[g] += whole << shift if shift >= 0 else whole >> -shift  # exact: SUM_SCALE covers 2**-1074
    return totals, counts.tolist()


# A float64's bits: sign (1), biased exponent E (11), fraction (52). A finite value is M * 2**(e - 53) with
# M = fraction + 2**52 and e = E - 1022 (normal), or M = fraction and e = -1021 (subnormal, E = 0).
_FRACTION = (1 << 52) - 1


@njit(cache=True, nogil=True)
def _exponent_range(bits):
    low, high = 1 << 30, -(1 << 30)
    for b in bits:
        biased = (b >> 52) & 0x7FF
        if biased != 0x7FF and (b & 0x7FFFFFFFFFFFFFFF) != 0:
            e = max(biased, 1) - 1022
            low = min(low, e)
            high = max(high, e)
    return low, high


@njit(cache=True, nogil=True)
def _finite_counts(groups, bits, n_groups):
    counts = np.zeros(n_groups, np.int64)
    for i in range(len(bits)):
        if ((bits[i] >> 52) & 0x7FF) != 0x7FF:
            for g in groups[i]:
                if g >= 0:
                    counts[g] += 1
    return counts


@njit(cache=True, nogil=True)
def _bin_limbs(groups, bits, low, bins):
    """Add each finite value's signed mantissa limbs into bins[group, e - low] of each of its groups
    (see `_FRACTION`)."""
    counts = np.zeros(bins.shape[0], np.int64)
    for i in range(len(bits)):
        b = bits[i]
        biased = (b >> 52) & 0x7FF
        if biased == 0x7FF:  # inf or nan
            continue
        m = b & _FRACTION
        if biased:
            m |= 1 << 52
        if b < 0:  # the sign bit
            m = -m
        e = max(biased, 1) - 1022 - low
        for d in range(groups.shape[1]):
            g = groups[i, d]
            if g >= 0:
                counts[g] += 1
                if m != 0:
                    bins[g, e, 0] += m & 0xFFFFFFFF
                    bins[g, e, 1] += m >> 32
    return counts


def exact_mean(total: int, count: int) -> float | None:
    """The mean from an `exact_sum` total and a count (None when the count is 0)."""
    return total / (count << SUM_SCALE) if count else None
