"""exact_sum / exact_mean: exact, order-independent float sums (checked against fractions.Fraction)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.io.exactsum import SUM_SCALE, exact_mean, exact_sum

finite = st.floats(allow_nan=False, allow_infinity=False)


def _as_fraction(total: int) -> Fraction:
    return Fraction(total, 2**SUM_SCALE)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, max_size=40))
def test_equals_the_exact_rational_sum(values):
    assert _as_fraction(exact_sum(values)) == sum((Fraction(v) for v in values), Fraction(0))


@settings(max_examples=100, deadline=None)
@given(st.lists(finite, min_size=1, max_size=30), st.randoms(use_true_random=False))
def test_order_and_partition_do_not_matter(values, rnd):
    shuffled = list(values)
    rnd.shuffle(shuffled)
    cut = rnd.randrange(len(values) + 1)
    assert exact_sum(values) == exact_sum(shuffled) == exact_sum(shuffled[:cut]) + exact_sum(shuffled[cut:])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=30))
def test_mean_is_the_correctly_rounded_rational_mean(values):
    expected = float(sum((Fraction(v) for v in values), Fraction(0)) / len(values))
    assert exact_mean(exact_sum(values), len(values)) == expected


def test_a_case_where_float_addition_is_not_associative():
    a, b, c = 0.1, 0.2, 0.3
    assert (a + b) + c != a + (b + c)  # the reason this module exists: bundles merge in any order
    assert exact_sum([a, b, c]) == exact_sum([c, b, a])
    assert exact_mean(exact_sum([a, b, c]), 1) == float(Fraction(a) + Fraction(b) + Fraction(c))
    assert exact_mean(exact_sum([1e16, 1.0, -1e16]), 1) == 1.0  # float addition loses the 1.0 either way


def test_extremes_subnormals_and_signed_zero():
    tiny = 5e-324  # smallest subnormal
    big = np.finfo(np.float64).max
    assert _as_fraction(exact_sum([tiny])) == Fraction(tiny)
    assert _as_fraction(exact_sum([big, big, -big])) == Fraction(big)
    assert exact_sum([0.0, -0.0]) == 0
    assert exact_sum([]) == 0
    assert exact_mean(exact_sum([big, big]), 2) == big  # no overflow in the exact domain


def test_mean_of_nothing_is_none():
    assert exact_mean(0, 0) is None
    assert math.isclose(exact_mean(exact_sum([1.0, 2.0]), 2), 1.5)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(allow_nan=True, allow_infinity=True)), max_size=40))
def test_sums_by_group_equal_the_exact_rational_sums(rows):
    from vlnkit.io.exactsum import exact_sums_by

    groups = np.array([g for g, _ in rows], dtype=np.int64)
    values = np.array([v for _, v in rows], dtype=np.float64)
    totals, counts = exact_sums_by(groups, values, 5)
    for g in range(5):
        kept = [Fraction(v) for h, v in rows if h == g and math.isfinite(v)]
        assert _as_fraction(totals[g]) == sum(kept, Fraction(0)) and counts[g] == len(kept)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 3),
    st.lists(st.tuples(st.integers(0, 3), st.lists(st.floats(), min_size=3, max_size=3)), max_size=40),
    st.lists(st.lists(st.integers(-1, 4), min_size=2, max_size=2), min_size=4, max_size=4),
)
def test_sums_by_cell_equal_the_exact_rational_sums_of_each_metric(metrics, rows, cell_groups):
    """Each metric row is summed exactly into every group of each row's cell: any floats (NaN and
    infinities left out, subnormals, signed zeros, extremes), cells reaching no group or one group twice."""
    from vlnkit.io.exactsum import exact_sums_by_cell

    cells = np.array([c for c, _ in rows], dtype=np.int64)
    values = np.array([v[:metrics] for _, v in rows], dtype=np.float64).reshape(len(rows), metrics).T
    totals, counts = exact_sums_by_cell(cells, np.array(cell_groups), values, 5)
    for m in range(metrics):
        for g in range(5):
            kept = [Fraction(v[m]) for c, v in rows for h in cell_groups[c] if h == g and math.isfinite(v[m])]
            assert _as_fraction(totals[m][g]) == sum(kept, Fraction(0)) and counts[m][g] == len(kept)
