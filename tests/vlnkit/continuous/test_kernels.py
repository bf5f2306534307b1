"""The compiled DTW kernels against the `fastdtw` package (a test oracle, never imported by vlnkit), an
independent plain-Python reading of both of its implementations' rules, and a textbook O(nm) DTW.

`from fastdtw import fastdtw` gives the package's compiled extension where it was built and its
pure-Python module otherwise; the pure-Python module (`fastdtw.fastdtw`) is always importable, so the
"python" rules are checked against the package everywhere, and the "compiled" rules against the
extension wherever it is built (and against the oracle everywhere, which is itself checked against
the extension where it is built). All comparisons are to 1e-9; in practice they are bit-identical.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from fastdtw import fastdtw as picked  # noqa: E402  (whichever implementation the package picks)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracles import fastdtw_rules as oracle
from vlnkit.continuous import kernels
from vlnkit.continuous.points import PointPaths
from vlnkit.continuous.scoring import score_paths

PURE = importlib.import_module("fastdtw.fastdtw")
COMPILED = importlib.import_module("fastdtw._fastdtw") if importlib.util.find_spec("fastdtw._fastdtw") else None
PICKED_RULES = "compiled" if picked.__module__ == "fastdtw._fastdtw" else "python"
TOL = 1e-9


def vlnce_distance(a, b):
    """VLN-CE's `NDTW.euclidean_distance`, the `dist` it passes to fastdtw."""
    return np.linalg.norm(np.array(b) - np.array(a), ord=2)


def package(x, y, rules: str, radius: int = 1) -> float:
    module = COMPILED if rules == "compiled" else PURE
    return float(module.fastdtw(x, y, radius=radius, dist=vlnce_distance)[0])


def kernel(x, y, rules: str, radius: int = 1) -> float:
    rule = kernels.RULES_COMPILED if rules == "compiled" else kernels.RULES_PYTHON
    return kernels.fastdtw_cost(np.asarray(x, dtype=float), np.asarray(y, dtype=float), radius, rule)


# ----------------------------------------------------------------------------- generated trajectories
coordinate = st.one_of(
    st.integers(-3, 3).map(float),  # grid-aligned: exact ties everywhere
    st.sampled_from([0.0, 0.25, 0.5, -0.25]),
    st.floats(-5, 5, allow_nan=False, allow_infinity=False, width=32).map(float),
)
point = st.tuples(coordinate, coordinate, coordinate)
path = st.lists(point, min_size=1, max_size=40).flatmap(
    lambda pts: st.lists(st.integers(0, len(pts) - 1), min_size=len(pts), max_size=len(pts) + 10).map(
        lambda idx: [pts[i] for i in sorted(idx)]  # sorted indices repeat points, consecutively
    )
)


def seeded_cases(seed: int, count: int, long: bool = False):
    """Random walks: real-valued, grid-aligned (ties), with repeats; lengths 1 and 2 included."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        if long:
            n, m = int(rng.integers(60, 501)), int(rng.integers(15, 90))
        else:
            n, m = int(rng.integers(1, 70)), int(rng.integers(1, 50))
            if k % 10 == 0:
                n = 1 + k % 3
        x = rng.normal(scale=0.25, size=(n, 3)).cumsum(axis=0)
        y = rng.normal(scale=0.25, size=(m, 3)).cumsum(axis=0)
        if k % 3 == 0:
            x, y = np.round(x * 4) / 4, np.round(y * 4) / 4
        if k % 4 == 1 and n > 2:
            x = np.repeat(x, rng.integers(1, 3, size=n), axis=0)
        yield x, y


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path, path)
def test_python_rules_equal_the_pure_python_package(x, y):
    assert abs(kernel(x, y, "python") - package(x, y, "python")) <= TOL


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path, path)
def test_compiled_rules_equal_the_oracle_and_the_extension(x, y):
    got = kernel(x, y, "compiled")
    assert abs(got - oracle.fastdtw(x, y, rules="compiled")) <= TOL
    if COMPILED is not None:
        assert abs(got - package(x, y, "compiled")) <= TOL


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path, path)
def test_exact_dtw_equals_a_textbook_dtw(x, y):
    out = score_paths(PointPaths.from_lists([y]), PointPaths.from_lists([x]), keep_repeats=True)
    assert abs(out["dtw"][0] - oracle.plain_dtw(x, y)) <= TOL


@pytest.mark.parametrize("seed", [0, 1])
def test_seeded_trajectories_equal_the_package_picked_by_from_fastdtw_import(seed):
    """Hundreds of walks (60-500 positions against 15-90 gt points, and short ones), both rule sets:
    the implementation `from fastdtw import fastdtw` picks here is among those compared."""
    checked = {"compiled": 0, "python": 0}
    cases = list(seeded_cases(seed, 150)) + list(seeded_cases(seed + 10, 25, long=True))
    for x, y in cases:
        assert abs(kernel(x, y, PICKED_RULES) - picked(x, y, dist=vlnce_distance)[0]) <= TOL
        for rules in ("python", "compiled"):
            if rules == "compiled" and COMPILED is None:
                continue
            assert abs(kernel(x, y, rules) - package(x, y, rules)) <= TOL
            checked[rules] += 1
    assert checked["python"] == len(cases)


def test_the_oracle_reads_both_implementations_right():
    """The oracle's 'python' rules are the pure-Python package's, and (where built) its 'compiled'
    rules the extension's; and the two rule sets do differ, so the rules matter."""
    differ = 0
    for x, y in seeded_cases(5, 120):
        assert abs(oracle.fastdtw(x, y, rules="python") - package(x, y, "python")) <= TOL
        if COMPILED is not None:
            assert abs(oracle.fastdtw(x, y, rules="compiled") - package(x, y, "compiled")) <= TOL
        differ += abs(oracle.fastdtw(x, y, rules="python") - oracle.fastdtw(x, y, rules="compiled")) > TOL
    assert differ > 0


@pytest.mark.parametrize("radius", [1, 2, 3])
def test_other_radii(radius):
    for x, y in seeded_cases(7, 30):
        assert abs(kernel(x, y, "python", radius) - package(x, y, "python", radius)) <= TOL
        assert abs(kernel(x, y, "compiled", radius) - oracle.fastdtw(x, y, radius, "compiled")) <= TOL


def test_many_pairs_in_one_call_equal_one_pair_at_a_time():
    cases = list(seeded_cases(3, 40))
    refs = PointPaths.from_lists([y.tolist() for _, y in cases])
    qrys = PointPaths.from_lists([x.tolist() for x, _ in cases])
    for mode in ("exact", "fastdtw"):
        batch = score_paths(refs, qrys, dtw=mode, fastdtw_rules="python", keep_repeats=True)["dtw"]
        for b, (x, y) in enumerate(cases):
            want = oracle.plain_dtw(x, y) if mode == "exact" else package(x, y, "python")
            assert abs(batch[b] - want) <= TOL


def test_repeats_are_exact_equality_of_all_three_coordinates():
    paths = PointPaths.from_lists([[[0, 0, 0], [0, 0, 0], [0.0, -0.0, 0], [0, 0, 1e-300], [0, 0, 1e-300], [1, 1, 1]]])
    collapsed = paths.collapse_repeats()
    assert collapsed.path(0).tolist() == [[0, 0, 0], [0, 0, 1e-300], [1, 1, 1]]
