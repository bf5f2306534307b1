"""The compiled kernels against the numpy reference implementation and the textbook formulas.

Tolerances, and why:
- vs the textbook formulas of test_metrics.simple_scores (Python loops, sums left to right): every
  metric bit-identical. AD and MD read d(r, q) as the numpy implementation always did; the scipy
  distance matrix is not bit-symmetric, so they are compared with the oracle run on the transpose.
- vs the numpy implementation (`tests.oracles.numpy_metrics`, written as whole-batch array operations):
  NE, ONE, SR, OSR, SED, DTW and MD bit-identical. nDTW and SDTW (= SR * nDTW) within one unit in the
  last place: the kernels call the C library's exp, as the textbook formulas do, but numpy's float64
  exp is its own SIMD routine on CPUs with AVX-512F, which differs from the C library's in the last
  bit for about 5% of arguments (measured on 5M arguments in [-60, 0]: 4.6% differ, never by more
  than 1 ulp); on other CPUs numpy calls the C library and they are bit-identical. PL, PC, AD are
  sums, and numpy added some of them pairwise (its fancy-indexed step arrays come out column-major),
  so they and what is built on them (SPL, LS, CLS) agree to 1e-12 (observed: 7e-14 on path lengths
  of tens of metres).
"""

import inspect
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracles import numpy_metrics as reference
from tests.vlnkit.evaluation.test_metrics import adversarial_pairs, line_graph, simple_scores
from vlnkit.datasets.trajectories import parse_predictions
from vlnkit.evaluation import batch, metrics
from vlnkit.evaluation.common import ALL
from vlnkit.fixtures.grid import grid_connectivity
from vlnkit.navigation.graph import GraphStore, NavGraph

EXACT = ("ne", "one", "sr", "osr", "sed", "dtw", "md")
ONE_ULP = ("ndtw", "sdtw")  # exp(...): numpy's own SIMD exp on AVX-512F CPUs, the C library's elsewhere
SUMS = ("pl", "pc", "ad", "spl", "ls", "cls")
TOL = 1e-12


def same(a, b) -> bool:
    """Bit-identical floats (inf == inf; no NaN is ever produced)."""
    return np.array_equal(np.asarray(a), np.asarray(b))


def assert_matches_reference(new: dict, old: dict, where=""):
    for m in EXACT:
        if m in new:
            assert same(new[m], old[m]), (where, m, np.flatnonzero(np.asarray(new[m]) != np.asarray(old[m]))[:5])
    for m in ONE_ULP:
        if m in new:
            a, b = np.asarray(new[m]), np.asarray(old[m])
            assert np.all(np.abs(a - b) <= np.spacing(np.abs(b))), (where, m, np.flatnonzero(a != b)[:5])
    for m in SUMS:
        if m in new:
            a, b = np.asarray(new[m]), np.asarray(old[m])
            assert same(np.isinf(a), np.isinf(b)), (where, m)
            fin = np.isfinite(b)
            assert np.all(np.abs(a[fin] - b[fin]) <= TOL), (where, m, np.max(np.abs(a[fin] - b[fin])))


@pytest.fixture(scope="module")
def grid():
    return NavGraph.from_connectivity("grid", grid_connectivity(7, size=8))


# Runs in a fresh interpreter: calls each kernel once through the public API, then prints, per kernel,
# how many of its signatures were loaded from the on-disk cache and how many had to be compiled.
CACHE_PROBE = """
import json
import numpy as np
from vlnkit.evaluation import batch, kernels, metrics, reward_kernels
from vlnkit.evaluation.rewards import RewardBatch

d = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
batch.score_batch(d, [[0, 1, 2]], [[0, 1]])  # score_many
metrics.score([0, 1, 2], [0, 1], d)  # score_one
metrics.ndtw([0, 1, 2], [0, 1], d)  # metric_one
from vlnkit.fixtures.grid import grid_connectivity
from vlnkit.navigation.graph import NavGraph
g = NavGraph.from_connectivity("grid", grid_connectivity(2, size=2))
metrics.cls(list(g.viewpoints[:2]), list(g.viewpoints[1:]), g)  # metric_codes, through its compiled entry
env = RewardBatch(d, kind="ndtw")
env.reset([[0, 1, 2]])
env.step([1])  # rewards_step
fns = {"score_many": kernels.score_many, "score_one": kernels.score_one, "metric_one": kernels.metric_one,
       "metric_codes": kernels.metric_codes,
       "rewards_step": reward_kernels.rewards_step}
print(json.dumps({name: {"loaded": sum(fn.stats.cache_hits.values()), "compiled": sum(fn.stats.cache_misses.values()),
                         "signatures": len(fn.signatures)} for name, fn in fns.items()}))
"""


def test_kernels_are_cached_on_disk(tmp_path):
    """A kernel compiled in one process is loaded, without compiling, from the on-disk cache by a fresh one.

    Both processes use an empty cache folder of their own (NUMBA_CACHE_DIR), so the first must compile
    and write it and the second can only have read it from disk."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba_cache")}

    def probe() -> dict:
        done = subprocess.run([sys.executable, "-c", CACHE_PROBE], env=env, capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = probe()
    assert all(k["signatures"] >= 1 and k["compiled"] >= 1 and k["loaded"] == 0 for k in first.values()), first
    assert list((tmp_path / "numba_cache").rglob("*.nbi")) and list((tmp_path / "numba_cache").rglob("*.nbc"))
    second = probe()
    assert all(k["signatures"] >= 1 and k["loaded"] >= 1 and k["compiled"] == 0 for k in second.values()), second


@pytest.mark.real_data
def test_kernels_match_the_numpy_reference_and_the_textbook_on_real_graphs(r2r_dir, connectivity_dir):
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())
    store = GraphStore(connectivity_dir)
    rng = np.random.default_rng(1)
    checked = 0
    for scan in sorted({r["scan"] for r in records})[:8]:
        graph = store.get(scan)
        dist = graph.distances
        refs = [graph.indices(r["path"]).tolist() for r in records if r["scan"] == scan]
        refs += [a + graph.shortest_path_indices(a[-1], b[0])[1:] + b[1:] for a, b in zip(refs, refs[1:])][:20]
        pairs = adversarial_pairs(rng, graph, refs, 300)
        R, Q = [p[0] for p in pairs], [p[1] for p in pairs]
        for keep, spl_ref in ((False, "shortest"), (True, "path")):
            opts = dict(keep_repeats=keep, spl_reference=spl_ref, metrics=ALL)
            new = batch.score_batch(dist, R, Q, **opts)
            for chunk in (1, 97, 8192):  # the reference's result depends on its chunking (numpy's sum order)
                assert_matches_reference(new, reference.score_batch(dist, R, Q, chunk_size=chunk, **opts), scan)
            for b in range(0, len(pairs), 7):
                want = simple_scores(R[b], Q[b], dist, keep_repeats=keep, spl_reference=spl_ref)
                transposed = simple_scores(R[b], Q[b], dist.T, keep_repeats=keep, spl_reference=spl_ref)
                for m in ALL:
                    expected = transposed[m] if m in ("ad", "md") else want[m]
                    assert new[m][b] == expected, (scan, m, R[b], Q[b], new[m][b], expected)
                one = metrics.score(R[b], Q[b], dist, **opts)  # the single-pair kernel: same bits as the batch
                assert one == {m: float(new[m][b]) for m in ALL}
                checked += 1
    assert checked >= 600


node = st.integers(0, 63)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pairs=st.lists(
        st.tuples(st.lists(node, min_size=1, max_size=14), st.lists(node, min_size=1, max_size=14)),
        min_size=1,
        max_size=6,
    ),
    keep=st.booleans(),
    spl_ref=st.sampled_from(["shortest", "path"]),
    th=st.sampled_from([0.5, 1.0, 3.0]),
    wanted=st.lists(st.sampled_from(ALL), min_size=1, max_size=4, unique=True),
)
def test_property_kernels_equal_the_reference_for_any_metric_subset(grid, pairs, keep, spl_ref, th, wanted):
    R, Q = [p[0] for p in pairs], [p[1] for p in pairs]
    opts = dict(keep_repeats=keep, spl_reference=spl_ref)
    full = batch.score_batch(grid.distances, R, Q, th, metrics=ALL, **opts)
    part = batch.score_batch(grid.distances, R, Q, th, metrics=tuple(wanted), **opts)
    assert list(part) == wanted and all(same(part[m], full[m]) for m in wanted)  # subsets skip work, not bits
    assert_matches_reference(full, reference.score_batch(grid.distances, R, Q, th, metrics=ALL, **opts))
    for m in wanted:  # the written-out single-pair functions
        fn = getattr(metrics, m)
        kw = opts if m == "spl" else {"keep_repeats": keep}
        assert fn(R[0], Q[0], grid.distances, th, **kw) == full[m][0], m


def test_single_pair_functions_accept_ids_indices_arrays_and_matrices(grid):
    ids_r = [grid.viewpoints[k] for k in (0, 1, 2, 10)]
    ids_q = [grid.viewpoints[k] for k in (0, 8, 9, 10)]
    want = metrics.ndtw(grid.indices(ids_r), grid.indices(ids_q), grid.distances)
    assert 0 < want < 1
    assert metrics.ndtw(ids_r, ids_q, grid) == want
    assert metrics.ndtw(np.array(ids_r), tuple(ids_q), grid) == want
    assert metrics.ndtw(grid.indices(ids_r).tolist(), grid.indices(ids_q), grid) == want  # indices with a graph
    assert metrics.ndtw(grid.indices(ids_r), grid.indices(ids_q), grid.distances.tolist()) == want
    with pytest.raises(ValueError, match="not an included viewpoint"):
        metrics.ndtw(ids_r, [*ids_q, "nowhere"], grid)
    with pytest.raises(ValueError, match="need a NavGraph"):
        metrics.ndtw(ids_r, ids_q, grid.distances)
    with pytest.raises(ValueError, match="query #0 is empty"):
        metrics.ndtw(ids_r, [], grid)
    with pytest.raises(ValueError, match="reference #0 has a node index outside"):
        metrics.dtw([0, 99], [0], grid.distances)
    with pytest.raises(ValueError, match="threshold"):
        metrics.sed([0], [0], grid.distances, float("nan"))
    with pytest.raises(ValueError, match="spl_reference"):
        metrics.spl([0], [0], grid.distances, spl_reference="both")


def test_ids_of_a_navgraph_take_the_byte_code_path_with_the_same_bits(grid):
    """Viewpoint ids of a NavGraph go through `kernels.metric_codes` (their byte codes, the kernel's compiled
    entry kept per kind of distance matrix); node indices through `metric_one`: every metric, every option,
    the same bits, also for a Fortran-ordered and a read-only distance matrix (other compiled entries)."""
    rng = np.random.default_rng(7)
    refs = [[int(v) for v in rng.integers(0, len(grid), size=int(rng.integers(1, 9)))] for _ in range(6)]
    pairs = adversarial_pairs(rng, grid, refs, 48)
    fortran = NavGraph.from_connectivity("grid", grid_connectivity(7, size=8))
    fortran.__dict__["distances"] = np.asfortranarray(grid.distances)
    frozen = NavGraph.from_connectivity("grid", grid_connectivity(7, size=8))
    frozen.__dict__["distances"] = grid.distances.copy()
    frozen.distances.flags.writeable = False
    options = [{}, {"keep_repeats": True}, {"success_rule": "lt"}, {"spl_reference": "path"}]
    checked = 0
    for R, Q in pairs:
        ids_r, ids_q = [grid.viewpoints[k] for k in R], [grid.viewpoints[k] for k in Q]
        for name in ALL:
            fn = getattr(metrics, name)
            for opts in options:
                if set(opts) - set(inspect.signature(fn).parameters):
                    continue
                want = fn(np.array(R), np.array(Q), grid.distances, 2.5, **opts)
                for graph in (grid, fortran, frozen):
                    got = fn(ids_r, ids_q, graph, 2.5, **opts)
                    assert same(got, want), (name, opts, R, Q, got, want)
                checked += 1
    assert checked > 48 * len(ALL)
    assert len(metrics._CODES_ENTRY) >= 3  # one compiled entry per kind of matrix
    with pytest.raises(ValueError, match="not an included viewpoint"):
        metrics.cls([grid.viewpoints[0]], ["nowhere"], grid)
    with pytest.raises(ValueError, match="reference #0 is empty"):
        metrics.cls([], [grid.viewpoints[0]], grid)


def test_batch_errors_name_the_first_bad_pair():
    g = line_graph([0, 1, 2], [(0, 1), (1, 2)])
    with pytest.raises(ValueError, match="query #2 is empty"):
        batch.score_batch(g.distances, [[0], [1], [2]], [[0], [1], []])
    with pytest.raises(ValueError, match="reference #1 has a node index outside"):
        batch.score_batch(g.distances, [[0], [1, 5]], [[0], [1]])
    with pytest.raises(ValueError, match="2 references but 1 queries"):
        batch.score_batch(g.distances, [[0], [1]], [[0]])
    with pytest.raises(ValueError, match="exceeds"):
        batch.score_batch(g.distances, (np.zeros((1, 2), dtype=np.int64), np.array([3])), [[0]])
    assert batch.score_batch(g.distances, [], [], metrics=("ndtw",))["ndtw"].shape == (0,)


@pytest.mark.real_data
def test_real_agent_files_score_as_the_numpy_implementation_did(shared_data, connectivity_dir):
    """All 17 prediction files, every episode: new scores equal the previous implementation's."""
    store = GraphStore(connectivity_dir)
    refs = {}
    for split in ("val_seen", "val_unseen"):
        for r in json.loads((shared_data / "r2r" / f"R2R_{split}.json").read_text()):
            for k in range(len(r["instructions"])):
                refs[split, f"{r['path_id']}_{k}"] = r
    files = sorted((shared_data / "agent_outputs").glob("*/*.json"))
    assert len(files) == 17
    episodes = parsed = 0
    for f in files:
        split = "val_seen" if "val_seen" in f.name else "val_unseen"
        by_scan: dict[str, list] = {}
        for p in parse_predictions(f.read_bytes(), str(f)):
            parsed += 1
            r = refs.get((split, p.get("instr_id"))) if isinstance(p, dict) else None
            if r is None:
                continue
            g = store.get(r["scan"])
            if any(v not in g.index for v in p["path"]):
                continue
            by_scan.setdefault(r["scan"], []).append((g.indices(r["path"]), g.indices(p["path"])))
        for scan, pairs in by_scan.items():
            dist = store.get(scan).distances
            R, Q = [a for a, _ in pairs], [b for _, b in pairs]
            for keep in (False, True):
                new = batch.score_batch(dist, R, Q, keep_repeats=keep, metrics=ALL)
                assert_matches_reference(new, reference.score_batch(dist, R, Q, keep_repeats=keep, metrics=ALL), f)
            episodes += len(pairs)
    assert episodes == parsed == 20_350  # every prediction of every file was compared


def test_every_kernel_output_is_finite_or_inf_never_nan(grid):
    rng = np.random.default_rng(5)
    R = [rng.integers(0, 64, size=int(rng.integers(1, 20))).tolist() for _ in range(300)]
    Q = [rng.integers(0, 64, size=int(rng.integers(1, 20))).tolist() for _ in range(300)]
    s = batch.score_batch(grid.distances, R, Q, metrics=ALL)
    assert not any(np.isnan(v).any() for v in s.values())
    assert all(((s[m] >= 0) & (s[m] <= 1)).all() for m in ("sr", "osr", "spl", "sed", "cls", "pc", "ls", "ndtw"))
    assert math.isclose(float(s["cls"].mean()), float((s["pc"] * s["ls"]).mean()))


@pytest.mark.real_data
def test_random_baseline_walks_score_as_the_numpy_implementation_did(r2r_dir, connectivity_dir):
    """The R2R paper's random baseline's own walks (repeats where a start has no neighbours included)."""
    from vlnkit.evaluation.random_baseline import allocate, draw, neighbour_table, step_pool, walk

    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())
    pool = step_pool(records)
    store = GraphStore(connectivity_dir)
    scored = 0
    for scan in sorted({r["scan"] for r in records})[:4]:
        graph = store.get(scan)
        table, degree = neighbour_table(graph)
        episodes = [r for r in records if r["scan"] == scan]
        counts = allocate(20 * len(episodes), len(episodes))
        for r, count in zip(episodes, counts):
            steps, uniforms = draw(0, str(r["path_id"]), int(count), pool)
            start = np.full(int(count), graph.idx(r["path"][0]))
            paths, lengths = walk(table, degree, start, steps, uniforms)
            refs = np.tile(graph.indices(r["path"]), (int(count), 1))
            ref_len = np.full(int(count), len(r["path"]))
            new = batch.score_batch(graph.distances, (refs, ref_len), (paths, lengths), metrics=ALL)
            old = reference.score_batch(graph.distances, (refs, ref_len), (paths, lengths), metrics=ALL)
            assert_matches_reference(new, old, (scan, r["path_id"]))
            scored += int(count)
    assert scored >= 20 * 100
