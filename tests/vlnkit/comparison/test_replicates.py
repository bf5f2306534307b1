"""Exact replicate sums: equal to Python-integer arithmetic, and the same bits on any partitioning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.comparison.replicates import REPLICATE_BITS, ReplicateSums, percentile_interval
from vlnkit.comparison.resampling import episode_keys, poisson_weights
from vlnkit.evaluation import means, totals
from vlnkit.io.exactsum import SUM_SCALE, exact_sum

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64).filter(lambda v: not abs(v) < 2.0**36 <= abs(v))
BOUNDED = st.one_of(
    st.floats(-(2.0**36), 2.0**36, exclude_max=True, exclude_min=True), st.sampled_from([np.nan, np.inf])
)


@settings(max_examples=60, deadline=None)
@given(st.lists(BOUNDED, min_size=0, max_size=40), st.integers(0, 2**32))
def test_weighted_sums_are_exact(values, seed):
    """Replicate sums: w times x rounded half to even onto 2**-26 (Python's `round`), summed as Python
    integers; point sums: the exact sums of the unrounded values."""
    x = np.array(values, dtype=np.float64)
    w = np.random.default_rng(seed).integers(0, 32, size=(len(x), 5)).astype(np.uint8)
    sums = ReplicateSums.of({"x": x}, w)
    finite = np.isfinite(x)
    on_grid = [round(float(v) * 2**REPLICATE_BITS) for v in x[finite]]
    for b in range(5):
        assert sums.weighted_totals["x"][b] == sum(int(wb) * e for wb, e in zip(w[finite, b], on_grid))
        assert sums.weighted_counts["x"][b] == int(w[finite, b].sum())
    exact = [exact_sum([v]) for v in x[finite]]  # integers of 2**-SUM_SCALE, summed in Python
    assert sums.totals["x"] == sum(exact) and sums.counts["x"] == int(finite.sum())


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(0, 13), st.integers(0, 2**32))
def test_sums_of_several_columns_are_exact(metrics, rows, seed):
    """Several metrics at once (the kernel adds the columns of four rows two at a time, an odd one
    alone): zeros, NaNs, values of one and of two limbs and negatives mixed in every column, and rows
    not a multiple of four; each replicate sum equals the Python-integer sum."""
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 5, size=(rows, metrics))
    x = np.where(kinds == 0, 0.0, rng.random((rows, metrics)))
    x = np.where(kinds == 1, np.nan, x)
    x = np.where(kinds == 2, rng.random((rows, metrics)) * 2.0**35, x)  # two non-zero limbs
    x = np.where(kinds == 3, -rng.random((rows, metrics)) * 3e3, x)
    w = rng.integers(0, 32, size=(rows, 7)).astype(np.uint8)
    columns = {f"m{m}": x[:, m] for m in range(metrics)}
    sums = ReplicateSums.of(columns, w)
    for m, name in enumerate(columns):
        finite = np.isfinite(x[:, m])
        on_grid = [round(float(v) * 2**REPLICATE_BITS) for v in x[finite, m]]
        for b in range(7):
            assert sums.weighted_totals[name][b] == sum(int(wb) * e for wb, e in zip(w[finite, b], on_grid))
            assert sums.weighted_counts[name][b] == int(w[finite, b].sum())


@settings(max_examples=30, deadline=None)
@given(st.lists(FLOATS, min_size=1, max_size=10))
def test_values_off_the_grid_are_refused_with_the_value(values):
    x = np.array(values, dtype=np.float64)
    big = np.isfinite(x) & (np.abs(x) >= 2.0**36)
    if big.any():
        with pytest.raises(ValueError, match="below 6.87195e\\+10"):
            ReplicateSums.of({"x": x}, np.ones((len(x), 2), np.uint8))
    else:
        ReplicateSums.of({"x": x}, np.ones((len(x), 2), np.uint8))


def test_point_mean_is_the_jobs_mean():
    x = np.random.default_rng(1).random(500) * 20
    x[::17] = np.inf
    sums = ReplicateSums.of({"ne": x}, poisson_weights(episode_keys([f"{i}_0" for i in range(500)]), 10))
    assert sums.mean("ne") == means(totals({"ne": x}), metrics=("ne",))[0]["ne"]
    means_b = sums.replicate_means("ne")
    w = poisson_weights(episode_keys([f"{i}_0" for i in range(500)]), 10)[np.isfinite(x)]
    independent = (w * x[np.isfinite(x)][:, None]).sum(axis=0) / w.sum(axis=0)  # float sums: close, not exact
    # the stated tolerance: values rounded to 2**-26 move a weighted mean by at most half a grid step
    np.testing.assert_allclose(means_b, independent, rtol=0, atol=2.0**-27 + 1e-12)


def test_any_partition_in_any_order_gives_identical_intervals():
    rng = np.random.default_rng(7)
    n = 3000
    ids = [f"{rng.integers(0, 10**6)}_{k % 3}" for k in range(n)]
    cols = {"sr": (rng.random(n) < 0.6).astype(float), "ndtw": rng.random(n) ** 3, "ne": rng.exponential(4, n)}
    cols["ne"][::50] = np.nan
    weights = poisson_weights(episode_keys(ids), 200, seed=5)
    whole = ReplicateSums.of(cols, weights)
    shuffled = np.random.default_rng(3).permutation(n)  # rows in another order: other chunks, same sums
    assert ReplicateSums.of({m: v[shuffled] for m, v in cols.items()}, weights[shuffled]) == whole
    for trial in range(4):
        order = rng.permutation(n)
        cuts = np.sort(rng.choice(np.arange(1, n), size=rng.integers(1, 30), replace=False))
        parts = [
            ReplicateSums.of(
                {m: v[idx] for m, v in cols.items()}, poisson_weights(episode_keys([ids[i] for i in idx]), 200, seed=5)
            )
            for idx in np.split(order, cuts)
        ]
        rng.shuffle(parts)
        merged = parts[0]
        for p in parts[1:]:
            merged = p + merged if trial % 2 else merged + p
        assert merged == whole
        for m in cols:
            assert merged.interval(m) == whole.interval(m)  # bit-identical floats
            assert merged.mean(m) == whole.mean(m)


def test_errors_and_edges():
    w = np.ones((3, 4), dtype=np.uint8)
    with pytest.raises(ValueError, match="3 weight rows"):
        ReplicateSums.of({"x": [1.0, 2.0]}, w)
    with pytest.raises(ValueError, match="above 31"):
        ReplicateSums.of({"x": [1.0, 2.0, 3.0]}, w * 40)
    with pytest.raises(ValueError, match="cannot merge"):
        ReplicateSums.of({"x": [1.0, 2.0, 3.0]}, w) + ReplicateSums(5)
    empty = ReplicateSums.of({"x": [np.nan] * 3}, w)
    assert empty.mean("x") is None and empty.interval("x") is None
    assert ReplicateSums.of({"x": [1.0, 2.0, 3.0]}, np.ones((3, 0), np.uint8)).interval("x") is None
    with pytest.raises(ValueError, match="confidence"):
        percentile_interval([1.0], confidence=1.0)
    assert percentile_interval([np.nan, 2.0, 4.0], confidence=0.5) == [2.5, 3.5]
    with pytest.raises(ValueError, match="not paired"):
        ReplicateSums.of({"a": [1.0, np.nan, 2.0], "b": [1.0, 1.0, 2.0]}, w).difference("a", "b")
    assert SUM_SCALE > 1074


def _partial(ids: list[str], values: np.ndarray) -> ReplicateSums:
    """One worker's share: keys, weights and sums computed in another process from the raw columns."""
    return ReplicateSums.of({"x": values}, poisson_weights(episode_keys(ids), 250, seed=9))


def test_other_processes_give_the_same_bits():
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    rng = np.random.default_rng(11)
    ids = [f"{p}_{k}" for p in range(700) for k in range(3)]
    x = rng.exponential(3.0, len(ids))
    whole = _partial(ids, x)
    parts = np.array_split(rng.permutation(len(ids)), 5)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(_partial, [[ids[i] for i in p] for p in parts], [x[p] for p in parts]))
    merged = results[0]
    for r in results[:0:-1]:
        merged = r + merged
    assert merged == whole and merged.interval("x") == whole.interval("x")


def test_threads_on_replicate_and_episode_ranges_give_the_same_bits(monkeypatch):
    import vlnkit.parallel as threads

    rng = np.random.default_rng(5)
    ids = [f"{p}_{k}" for p in range(400) for k in range(3)]
    cols = {"sr": (rng.random(len(ids)) < 0.5).astype(float), "ne": rng.exponential(5.0, len(ids))}
    monkeypatch.setattr(threads, "PARALLEL_WORK", 1 << 60)
    assert threads.thread_count(len(ids) * 1000) == 1
    weights = poisson_weights(episode_keys(ids), 1000, seed=2)
    alone = ReplicateSums.of(cols, weights)
    monkeypatch.setattr(threads, "PARALLEL_WORK", 1)
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert threads.thread_count(len(ids) * 1000) == 3
    assert (poisson_weights(episode_keys(ids), 1000, seed=2) == weights).all()
    threaded = ReplicateSums.of(cols, weights)
    assert threaded == alone and threaded.interval("ne") == alone.interval("ne")


def test_kernel_calls_of_any_size_carry_exactly(monkeypatch):
    import vlnkit.comparison.replicates as replicates

    rng = np.random.default_rng(8)
    ids = [f"{p}_0" for p in range(500)]
    cols = {"pl": rng.exponential(2000.0, 500), "spl": rng.random(500)}
    weights = poisson_weights(episode_keys(ids), 300, seed=4)
    whole = ReplicateSums.of(cols, weights)
    monkeypatch.setattr(replicates, "KERNEL_ROWS", 7)  # carries between calls change nothing
    assert ReplicateSums.of(cols, weights) == whole


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, (1 << 36) - 1),
            st.integers(-(1 << 17), 1 << 17),  # both sides of the float fast path's 2**16 bound
            st.integers(0, (1 << 28)),  # both sides of its 2**27 weight bound
        ),
        min_size=1,
        max_size=12,
    )
)
def test_replicate_means_are_pythons_correctly_rounded_quotients(rows):
    """The float division used for small sums gives Python's int / int, bit for bit, NaN for weight 0."""
    from vlnkit.comparison.replicates import LIMB_BITS, _replicate_ratios

    limbs = np.array([[r[0] for r in rows], [r[1] for r in rows]], np.int64)
    weights = np.array([r[2] for r in rows], np.int64)
    got = _replicate_ratios(limbs, weights, len(rows))
    for (low, high, w), value in zip(rows, got.tolist()):
        want = (low + (high << LIMB_BITS)) / (w << REPLICATE_BITS) if w else float("nan")
        assert value == want or (np.isnan(value) and np.isnan(want))
    same_everywhere = _replicate_ratios(limbs[:, ::-1], weights[::-1], len(rows))[::-1]
    assert np.array_equal(got, same_everywhere, equal_nan=True)


def _normalized_before(limbs):
    """`_normalized` as it was written first (numpy passes), the oracle of the leaner one."""
    limbs = np.array(limbs, dtype=np.int64)
    for p in range(len(limbs) - 1):
        carry = limbs[p] >> 36
        limbs[p] -= carry << 36
        limbs[p + 1] += carry
    if len(limbs) and np.abs(limbs[-1]).max(initial=0) >= 1 << 50:
        carry = limbs[-1] >> 36
        limbs[-1] -= carry << 36
        limbs = np.vstack([limbs, carry[None]])
    nonzero = np.flatnonzero(limbs.any(axis=1))
    return limbs[: nonzero[-1] + 1 if len(nonzero) else 0]


LIMB = st.one_of(st.integers(-(1 << 40), 1 << 40), st.integers(-(1 << 52), 1 << 52), st.just(0))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.integers(0, 3), st.integers(0, 4), st.sampled_from([1, -1]), st.data())
def test_combined_limbs_equal_the_first_formulation(nx, ny, replicates, sign, data):
    """x + sign * y normalized: the same limbs, same shape, as the numpy formulation (carries, a third
    limb past 2**50, zero top limbs trimmed), and the same integers as Python's."""
    from vlnkit.comparison.replicates import _combined, _normalized, _to_ints

    x = np.array(
        data.draw(st.lists(st.lists(LIMB, min_size=replicates, max_size=replicates), min_size=nx, max_size=nx)),
        np.int64,
    ).reshape(nx, replicates)
    y = np.array(
        data.draw(st.lists(st.lists(LIMB, min_size=replicates, max_size=replicates), min_size=ny, max_size=ny)),
        np.int64,
    ).reshape(ny, replicates)
    padded = np.zeros((max(nx, ny), replicates), np.int64)
    padded[:nx] += x
    padded[:ny] += sign * y
    expected = _normalized_before(padded)
    got = _combined(x, y, sign)
    assert got.dtype == np.int64 and got.shape == expected.shape and (got == expected).all()
    assert _normalized(padded).shape == expected.shape and (_normalized(padded) == expected).all()
    assert _to_ints(got, replicates) == [a + sign * b for a, b in zip(_to_ints(x, replicates), _to_ints(y, replicates))]


@pytest.mark.parametrize("top", [(1 << 50) - 1, 1 << 50, (1 << 50) + 5, -(1 << 50), -(1 << 50) + 1, 3 << 50])
def test_a_third_limb_starts_at_two_to_the_fifty(top):
    from vlnkit.comparison.replicates import _combined, _normalized

    limbs = np.array([[5, (1 << 36) + 7], [top, 0]], np.int64)
    expected = _normalized_before(limbs)
    assert _normalized(limbs).shape == expected.shape and (_normalized(limbs) == expected).all()
    got = _combined(limbs, np.zeros((1, 2), np.int64), 1)
    assert got.shape == expected.shape and (got == expected).all()


def test_value_columns_are_each_metrics_limbs_and_refusals_name_the_first_metrics_value():
    """The one-pass layout equals each metric's own `limbs_of` and misses; a value off the grid is named
    as the per-metric pass names it: the first metric holding one, its first such row."""
    from vlnkit.comparison.replicates import _value_columns, limbs_of

    rng = np.random.default_rng(3)
    x = rng.exponential(300.0, (3, 50))
    x[1, ::7] = np.nan
    x[2, 3] = -np.inf
    x[0, 5] = -(2.0**35)
    dense = _value_columns(x)
    assert (dense[:, 0] == 1.0).all()
    for m in range(3):
        assert (dense[:, 1 + m] == ~np.isfinite(x[m])).all()
        assert (dense[:, 4 + 2 * m : 6 + 2 * m] == limbs_of(x[m])).all()
    x[2, 1], x[1, 4], x[1, 9] = 2.0**40, -(2.0**37), 2.0**38
    with pytest.raises(ValueError, match=r"got np.float64\(-137438953472\.0\)"):
        _value_columns(x)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 60), st.integers(1, 1100), st.integers(-(2**63), 2**64 - 1), st.integers(1, 3), st.integers(0, 2**32)
)
def test_weights_made_in_the_sums_kernel_equal_the_weights_matrix(rows, replicates, seed, threads, draw):
    """`KeyedWeights` (each row's weights made from its key inside the sums kernel, tile by tile) gives
    the same bits as the weights matrix of the numpy definition (`tests/oracles`): replicate counts on
    both sides of a tile (504) and not multiples of a hash's three, cells of any length, keys repeated,
    zero, NaN and two-limb values, on one to three threads."""
    import vlnkit.parallel as parallel
    from tests.oracles.poisson_weights import poisson_weights as numpy_weights
    from vlnkit.comparison.replicates import cell_sums
    from vlnkit.comparison.resampling import KeyedWeights

    rng = np.random.default_rng(draw)
    keys = rng.integers(0, 2**64, size=max(1, rows // 2), dtype=np.uint64)
    keys[0] = 0
    episode = rng.integers(0, len(keys), rows)  # an episode in several rows, some in none
    cell = rng.integers(0, 4, rows)
    targets = np.array([[0, 2], [1, 2], [0, -1], [1, 3]])
    x = np.where(rng.random(rows) < 0.2, np.nan, rng.random(rows) * rng.choice([1.0, 3e3, 2.0**35], rows))
    columns = {"x": np.where(rng.random(rows) < 0.2, 0.0, x), "y": (rng.random(rows) < 0.5).astype(float)}
    parallel_work = parallel.PARALLEL_WORK
    try:
        parallel.PARALLEL_WORK = 1  # as many threads as cores allow, up to `threads`
        parallel.MAX_THREADS, saved = threads, parallel.MAX_THREADS
        keyed = cell_sums(KeyedWeights(keys, replicates, seed), episode, cell, targets, columns)
    finally:
        parallel.PARALLEL_WORK, parallel.MAX_THREADS = parallel_work, saved
    matrix = cell_sums(numpy_weights(keys, replicates, seed), episode, cell, targets, columns)
    assert keyed == matrix
    for mine, theirs in zip(keyed, matrix):
        for name in columns:
            assert np.array_equal(mine.replicate_means(name), theirs.replicate_means(name), equal_nan=True)
            assert mine.interval(name) == theirs.interval(name)
