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
    return _totals_of(bins, low), counts.tolist()


def exact_sums_by_cell(cell, cell_groups, values, n_groups: int) -> tuple[list[list[int]], list[list[int]]]:
    """`exact_sums_by` of every row of `values` (M, n) at once, for rows that fall into cells: row i is in
    cell `cell[i]` and counts in every group of `cell_groups[cell[i]]` (-1: none). Returns, per metric m,
    (its exact sum per group, its count of finite values per group).

    Why cells: the bootstrap's rows each count in an agent and in one group of every breakdown, but they
    fall into far fewer cells (combinations of those groups) than rows; each value is binned once, in its
    cell, and the cells' bins are added into their groups (integer sums: exact in any order). One
    compiled pass serves every metric, where a pass per metric and per group of a row cost a tenth of a
    bucket's bootstrap.

    >>> totals, counts = exact_sums_by_cell(np.array([0, 1, 1]), np.array([[0, 2], [1, 2]]),
    ...                                     np.array([[1.0, 0.5, np.nan]]), 3)
    >>> [t / 2**SUM_SCALE for t in totals[0]], counts[0]
    ([1.0, 0.5, 1.5], [1, 1, 2])
    """
    values = np.atleast_2d(np.ascontiguousarray(values, dtype=np.float64))
    cell = np.ascontiguousarray(cell, dtype=np.int64)
    cell_groups = np.ascontiguousarray(cell_groups, dtype=np.int64)
    cell_groups = cell_groups if cell_groups.ndim == 2 else cell_groups.reshape(-1, 1)
    if len(cell) != values.shape[1]:
        raise ValueError(f"{len(cell)} cells for {values.shape[1]} values")
    if len(cell) and (cell.min() < 0 or cell.max() >= len(cell_groups)):
        raise ValueError(f"cells must be in [0, {len(cell_groups)})")
    if cell_groups.size and (cell_groups.min() < -1 or cell_groups.max() >= n_groups):
        raise ValueError(f"groups must be in [0, {n_groups}) (or -1 for none)")
    bits = values.view(np.int64)
    lows, highs = _exponent_ranges(bits)
    span = max(1, int((highs - lows).max(initial=0)) + 1)
    cell_bins = np.zeros((len(values), len(cell_groups), span, 2), np.int64)
    cell_counts = np.zeros((len(values), len(cell_groups)), np.int64)
    _bin_cell_limbs(cell, bits, lows, cell_bins, cell_counts)
    bins = np.zeros((len(values), n_groups, span, 2), np.int64)
    counts = np.zeros((len(values), n_groups), np.int64)
    _add_cells_to_groups(cell_groups, cell_bins, cell_counts, bins, counts)
    totals = [_totals_of(bins[m], int(lows[m])) for m in range(len(values))]
    return totals, counts.tolist()


def _totals_of(bins: np.ndarray, low: int) -> list[int]:
    """Per group, the exact total of its (exponent, limb) bins `bins` (groups, E, 2) as an integer count of
    2**-SUM_SCALE: only the occupied bins are shifted and added as Python integers."""
    totals = [0] * len(bins)
    occupied = np.nonzero(bins.any(axis=2))
    limbs = bins[occupied]
    for g, e, low_limb, high_limb in zip(
        occupied[0].tolist(), occupied[1].tolist(), limbs[:, 0].tolist(), limbs[:, 1].tolist()
    ):
        whole = (high_limb << 32) + low_limb
        shift = e + low + SUM_SCALE - 53
        totals[g] += whole << shift if shift >= 0 else whole >> -shift  # exact: SUM_SCALE covers 2**-1074
    return totals


# A float64's bits: sign (1), biased exponent E (11), fraction (52). A finite value is M * 2**(e - 53) with
# M = fraction + 2**52 and e = E - 1022 (normal), or M = fraction and e = -1021 (subnormal, E = 0).
_FRACTION = (1 << 52) - 1


@njit(cache=True, nogil=True, inline="always")
def _signed_mantissa(b):
    """(M, e) of the bits `b` of a finite float64, whose value is M * 2**(e - 53): M the signed integer
    mantissa (53 bits at most), e the exponent (see `_FRACTION`)."""
    biased = (b >> 52) & 0x7FF
    mantissa = b & _FRACTION
    if biased:
        mantissa |= 1 << 52
    if b < 0:  # the sign bit
        mantissa = -mantissa
    return mantissa, max(biased, 1) - 1022


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
def _exponent_ranges(bits):
    """`_exponent_range` of every row of bits (M, n), as two (M,) arrays; (0, -1) for a row of no finite
    value other than zero."""
    lows, highs = np.zeros(len(bits), np.int64), np.full(len(bits), -1, np.int64)
    for m in range(len(bits)):
        low, high = _exponent_range(bits[m])
        if low <= high:
            lows[m], highs[m] = low, high
    return lows, highs


@njit(cache=True, nogil=True)
def _bin_cell_limbs(cell, bits, lows, bins, counts):
    """Add each finite value of row m of bits (M, n) into counts[m, cell] and its signed mantissa limbs into
    bins[m, cell, e - lows[m]] (see `_FRACTION`)."""
    for m in range(bits.shape[0]):
        row, low = bits[m], lows[m]
        for i in range(len(row)):
            b = row[i]
            biased = (b >> 52) & 0x7FF
            if biased == 0x7FF:  # inf or nan
                continue
            c = cell[i]
            counts[m, c] += 1
            mantissa, e = _signed_mantissa(b)
            if mantissa != 0:  # a zero is counted and adds nothing
                bins[m, c, e - low, 0] += mantissa & 0xFFFFFFFF
                bins[m, c, e - low, 1] += mantissa >> 32


@njit(cache=True, nogil=True)
def _add_cells_to_groups(cell_groups, cell_bins, cell_counts, bins, counts):
    """bins[m, g] += cell_bins[m, c] and counts[m, g] += cell_counts[m, c] for every group g of each cell c."""
    for c in range(cell_groups.shape[0]):
        for d in range(cell_groups.shape[1]):
            g = cell_groups[c, d]
            if g < 0:
                continue
            for m in range(cell_bins.shape[0]):
                counts[m, g] += cell_counts[m, c]
                for e in range(cell_bins.shape[2]):
                    bins[m, g, e, 0] += cell_bins[m, c, e, 0]
                    bins[m, g, e, 1] += cell_bins[m, c, e, 1]


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
        m, e = _signed_mantissa(b)
        e -= low
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
