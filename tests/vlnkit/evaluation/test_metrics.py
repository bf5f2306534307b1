"""Path metrics against deliberately simple, independent implementations of their definitions."""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vlnkit.evaluation import batch as B
from vlnkit.evaluation import common as C
from vlnkit.evaluation import metrics as M
from vlnkit.fixtures.grid import grid_connectivity
from vlnkit.io import exactsum
from vlnkit.navigation.graph import GraphStore, NavGraph

TH = 3.0


# ----------------------------------------------------------------------------- the oracle
def collapse(path):
    out = []
    for v in path:
        if not out or out[-1] != v:
            out.append(v)
    return out


def levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i]
        for j in range(1, len(b) + 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])))
        prev = cur
    return prev[-1]


def simple_scores(R, Q, dist, th=TH, keep_repeats=False, spl_reference="shortest"):
    """Every metric, straight from the definitions, one Python loop at a time."""
    d = lambda u, v: float(dist[u][v])  # noqa: E731
    if not keep_repeats:
        Q = collapse(Q)
    length = lambda P: sum(d(P[i], P[i + 1]) for i in range(len(P) - 1))  # noqa: E731
    pl = length(Q)
    ne = d(Q[-1], R[-1])
    one = min(d(q, R[-1]) for q in Q)
    sr = 1.0 if ne <= th else 0.0
    osr = 1.0 if one <= th else 0.0
    ref = d(Q[0], R[-1]) if spl_reference == "shortest" else length(R)
    if not math.isfinite(ref):
        spl = 0.0
    elif max(pl, ref) == 0:
        spl = sr
    else:
        spl = sr * ref / max(pl, ref)
    er = [(R[i], R[i + 1]) for i in range(len(R) - 1)]
    eq = [(Q[i], Q[i + 1]) for i in range(len(Q) - 1)]
    longest = max(len(er), len(eq))
    sed = sr * (1.0 - levenshtein(er, eq) / longest) if longest else sr
    pc = sum(math.exp(-min(d(r, q) for q in Q) / th) for r in R) / len(R)
    epl = pc * length(R) if pc > 0 else 0.0
    denom = epl + abs(epl - pl) if math.isfinite(epl) and math.isfinite(pl) else math.inf
    ls = 1.0 if denom == 0 else (epl / denom if math.isfinite(denom) else 0.0)
    C = [[math.inf] * (len(Q) + 1) for _ in range(len(R) + 1)]
    C[0][0] = 0.0
    for i in range(1, len(R) + 1):
        for j in range(1, len(Q) + 1):
            C[i][j] = d(R[i - 1], Q[j - 1]) + min(C[i - 1][j], C[i][j - 1], C[i - 1][j - 1])
    dtw = C[len(R)][len(Q)]
    ndtw = math.exp(-dtw / (len(R) * th))
    to_ref = [min(d(q, r) for r in R) for q in Q]
    return {
        "pl": pl,
        "ne": ne,
        "one": one,
        "sr": sr,
        "osr": osr,
        "spl": spl,
        "sed": sed,
        "pc": pc,
        "ls": ls,
        "cls": pc * ls,
        "dtw": dtw,
        "ndtw": ndtw,
        "sdtw": sr * ndtw,
        "ad": sum(to_ref) / len(to_ref),
        "md": max(to_ref),
    }


def assert_close(ours: dict, expected: dict, where=""):
    for m, want in expected.items():
        got = ours[m]
        if math.isinf(want):
            assert got == want, (where, m, got, want)
        else:
            assert abs(got - want) <= 1e-9, (where, m, got, want)


# ----------------------------------------------------------------------------- graphs
def line_graph(xs, edges, scan="line"):
    entries = []
    n = len(xs)
    for k, x in enumerate(xs):
        row = [False] * n
        for a, b in edges:
            if k in (a, b):
                row[b if k == a else a] = True
        pose = [1, 0, 0, float(x), 0, 1, 0, 0.0, 0, 0, 1, 1.5, 0, 0, 0, 1]
        entries.append({"image_id": f"v{k}", "pose": pose, "included": True, "unobstructed": row})
    return NavGraph.from_connectivity(scan, entries)


@pytest.fixture(scope="module")
def grid():
    return NavGraph.from_connectivity("grid", grid_connectivity(7, size=8))


def random_walk(rng, graph, start, steps):
    path = [start]
    for _ in range(steps):
        nb = graph.neighbours[path[-1]]
        path.append(int(rng.choice(nb)) if len(nb) else path[-1])
    return path


def adversarial_pairs(rng, graph, references, count):
    """Random walks, repeats, jumps, reversals, single nodes, the reference itself, R4R-length paths."""
    n = len(graph)
    pairs = []
    for k in range(count):
        R = references[k % len(references)]
        kind = k % 8
        if kind == 0:
            Q = random_walk(rng, graph, R[0], int(rng.integers(0, 12)))
        elif kind == 1:
            Q = list(R)
        elif kind == 2:
            Q = list(reversed(R))
        elif kind == 3:
            Q = [R[0]]
        elif kind == 4:  # turning in place: repeats everywhere
            Q = [
                v
                for v in random_walk(rng, graph, R[0], int(rng.integers(1, 8)))
                for _ in range(int(rng.integers(1, 4)))
            ]
        elif kind == 5:  # multi-step jumps
            Q = [R[0], *rng.integers(0, n, size=int(rng.integers(1, 6))).tolist()]
        elif kind == 6:  # long R4R-like queries
            Q = random_walk(rng, graph, R[0], int(rng.integers(15, 35)))
        else:
            Q = [int(rng.integers(n))]
            R = [R[0]]
        pairs.append((list(R), [int(q) for q in Q]))
    return pairs


# ----------------------------------------------------------------------------- hand-worked
def test_hand_worked_example_on_a_line():
    # v0 - v1 - v2 - v3 - v4 at x = 0, 1, 2, 3, 7 (metres); a straight corridor.
    g = line_graph([0, 1, 2, 3, 7], [(0, 1), (1, 2), (2, 3), (3, 4)])
    R, Q = [0, 1, 2, 3], [0, 1, 1, 0, 1, 2]
    s = M.score(R, Q, g.distances)
    # Collapsed Q = 0 1 0 1 2: PL = 4, NE = d(2, 3) = 1, ONE = 1, SR = OSR = 1.
    assert (s["pl"], s["ne"], s["one"], s["sr"], s["osr"]) == (4.0, 1.0, 1.0, 1.0, 1.0)
    assert s["spl"] == pytest.approx(3 / 4)  # d(q1, r_last) = 3, PL = 4
    # Edges R: 01 12 23; Q: 01 10 01 12 -> ED = 3 (delete 10 and 01, insert 23) over max 4.
    assert s["sed"] == pytest.approx(1 - 3 / 4)
    # PC: d(r, Q) = 0, 0, 0, 1 -> (3 + e^-1/3) / 4; EPL = PC * 3; LS = EPL / (EPL + |EPL - 4|).
    pc = (3 + math.exp(-1 / 3)) / 4
    assert s["cls"] == pytest.approx(pc * (pc * 3) / (pc * 3 + abs(pc * 3 - 4)))
    # DTW: the step back (q = v0 after v1) costs 1 wherever it is matched, and r3 (x = 3) is
    # matched with q = v2 at best (1): DTW = 2.
    assert s["dtw"] == pytest.approx(2.0)
    assert s["ndtw"] == pytest.approx(math.exp(-2 / 12))
    assert s["sdtw"] == pytest.approx(math.exp(-2 / 12))
    assert (s["ad"], s["md"]) == (0.0, 0.0)
    # Failure: stop at v4 (NE = 4 > 3): SR-gated scores are 0.
    f = M.score(R, [0, 1, 2, 3, 4], g.distances)
    assert f["ne"] == 4.0 and f["sr"] == 0.0 and f["spl"] == f["sed"] == f["sdtw"] == 0.0
    assert f["osr"] == 1.0 and f["one"] == 0.0 and f["md"] == 4.0 and f["ad"] == pytest.approx(4 / 5)


def test_keep_repeats_and_spl_reference_options():
    g = line_graph([0, 1, 2, 3], [(0, 1), (1, 2), (2, 3)])
    R, Q = [0, 1, 2, 3], [0, 0, 1, 2, 3, 3]
    assert M.ndtw(R, Q, g.distances) == 1.0
    kept = M.score(R, Q, g.distances, keep_repeats=True)
    assert kept["dtw"] == 0.0 and kept["ndtw"] == 1.0  # repeats align with the same node at 0 cost
    assert kept["sed"] == pytest.approx(1 - 2 / 5)  # two (v, v) edges inserted
    # spl_reference=path: PL(R) = 3 vs d(q1, r_last) = 3 (same here); a detour tells them apart.
    R2 = [0, 1, 0, 1, 2, 3]  # a reference with a loop: PL(R) = 5, d(q1, r_last) = 3
    assert M.spl(R2, [0, 1, 2, 3], g.distances) == 1.0
    assert M.spl(R2, [0, 1, 2, 3], g.distances, spl_reference="path") == 1.0  # 5 / max(3, 5)
    assert M.spl(R2, [0, 1, 2, 1, 2, 3], g.distances, spl_reference="path") == 1.0
    assert M.spl(R2, [0, 1, 2, 1, 2, 1, 2, 3], g.distances, spl_reference="path") == pytest.approx(5 / 7)
    assert M.spl(R2, [0, 1, 2, 1, 2, 1, 2, 3], g.distances) == pytest.approx(3 / 7)


def test_cls_is_order_invariant_and_ndtw_is_not():
    # a, b, c: a triangle of mutual neighbours.
    entries = []
    xy = [(0, 0), (2, 0), (1, 1.7)]
    for k, (x, y) in enumerate(xy):
        pose = [1, 0, 0, x, 0, 1, 0, y, 0, 0, 1, 1.5, 0, 0, 0, 1]
        entries.append(
            {"image_id": "abc"[k], "pose": pose, "included": True, "unobstructed": [j != k for j in range(3)]}
        )
    g = NavGraph.from_connectivity("tri", entries)
    R, Q = list("abca"), list("acba")
    assert M.cls(R, Q, g) == M.cls(R, R, g) == 1.0
    assert M.ndtw(R, R, g) == 1.0 and M.ndtw(R, Q, g) < 0.9


def test_single_pair_api_takes_viewpoint_ids_with_a_graph_or_indices_with_a_matrix(grid):
    R = [grid.viewpoints[k] for k in (0, 1, 2, 10)]
    Q = [grid.viewpoints[k] for k in (0, 8, 9, 10)]
    by_id = M.score(R, Q, grid)
    by_index = M.score(grid.indices(R), grid.indices(Q), grid.distances)
    assert by_id == by_index
    assert set(by_id) == set(C.METRICS)
    for m in C.METRICS + C.EXTRA:
        assert getattr(M, m)(R, Q, grid) == pytest.approx(
            simple_scores(grid.indices(R), grid.indices(Q), grid.distances)[m]
        )


# ----------------------------------------------------------------------------- degenerate cases
def test_degenerate_cases_are_documented_values_not_nan():
    g = line_graph([0, 1, 2, 10, 11], [(0, 1), (1, 2), (3, 4)])  # two components: {0, 1, 2}, {3, 4}
    single = M.score([0], [0], g.distances)
    assert single == {
        **{m: 0.0 for m in ("pl", "ne", "one", "dtw", "ad", "md")},
        **{m: 1.0 for m in ("sr", "osr", "spl", "sed", "cls", "ndtw", "sdtw")},
    }
    # A query that jumps into the other component: distances are +inf, scores stay in [0, 1].
    s = M.score([0, 1, 2], [0, 3], g.distances)
    assert s["pl"] == s["ne"] == s["dtw"] == s["md"] == math.inf
    assert s["sr"] == s["spl"] == s["sed"] == s["sdtw"] == s["ndtw"] == 0.0
    assert 0 <= s["cls"] <= 1 and not any(math.isnan(v) for v in s.values())
    assert_close(s, {k: v for k, v in simple_scores([0, 1, 2], [0, 3], g.distances).items() if k in C.METRICS})
    # The reference itself unreachable from the query's only node.
    s = M.score([3, 4], [0], g.distances)
    assert not any(math.isnan(v) for v in s.values()) and s["cls"] == 0.0 and s["ne"] == math.inf
    # A reference spanning both components (invalid data): PL(R) = inf, still no NaN.
    s = M.score([0, 3], [0, 3], g.distances)
    assert not any(math.isnan(v) for v in s.values())
    with pytest.raises(ValueError, match="empty"):
        M.score([0], [], g.distances)
    with pytest.raises(ValueError, match="outside"):
        M.score([0], [99], g.distances)
    with pytest.raises(ValueError, match="threshold"):
        M.score([0], [0], g.distances, 0.0)
    with pytest.raises(ValueError, match="unknown metric"):
        M.score([0], [0], g.distances, metrics=("nope",))


def test_batch_helpers():
    padded, lengths = C.pack([[1, 1, 2, 2, 2, 3, 1], [4], [5, 5]])
    out, new_len = C.collapse_repeats_padded(padded, lengths)
    assert new_len.tolist() == [4, 1, 1]
    assert out[0, :4].tolist() == [1, 2, 3, 1] and out[1, 0] == 4 and out[2, 0] == 5
    adjacent = np.zeros((6, 6), dtype=bool)
    adjacent[1, 2] = adjacent[2, 1] = True
    assert C.non_adjacent_steps(adjacent, out, new_len).tolist() == [2, 0, 0]  # 2->3 and 3->1 are jumps
    summed = B.totals({"pl": np.array([1.0, np.inf, 3.0])})
    assert summed == {"sum_pl": 4 << exactsum.SUM_SCALE, "finite_pl": 2, "count": 3}
    mean, nulls = B.means(summed, metrics=("pl",))
    assert mean == {"pl": 2.0} and nulls == {"pl": 1}


def test_exact_sums_do_not_depend_on_the_order_partial_sums_are_combined():
    from fractions import Fraction

    rng = np.random.default_rng(3)
    values = np.concatenate([rng.random(5000) * 40, [5e-324, 1e-310, 1e308, -1e308, 0.1, -0.0]])
    exact = sum((Fraction(float(v)) for v in values), Fraction(0))
    assert Fraction(exactsum.exact_sum(values), 2**exactsum.SUM_SCALE) == exact
    parts = np.array_split(values, 41)
    forward = sum(exactsum.exact_sum(p) for p in parts)
    backward = sum(exactsum.exact_sum(p) for p in reversed(parts))
    assert forward == backward
    mean, _ = B.means({"sum_pl": forward, "finite_pl": len(values), "count": len(values)}, metrics=("pl",))
    assert mean["pl"] == float(exact / len(values))  # correctly rounded


# ----------------------------------------------------------------------------- real graphs
@pytest.mark.real_data
def test_batch_matches_the_simple_implementation_on_real_graphs(r2r_dir, connectivity_dir):
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())
    store = GraphStore(connectivity_dir)
    rng = np.random.default_rng(0)
    checked = 0
    for scan in sorted({r["scan"] for r in records})[:6]:
        graph = store.get(scan)
        refs = [graph.indices(r["path"]).tolist() for r in records if r["scan"] == scan]
        # R4R-length references too: two R2R paths joined by a shortest path.
        refs += [a + graph.shortest_path_indices(a[-1], b[0])[1:] + b[1:] for a, b in zip(refs, refs[1:])][:20]
        pairs = adversarial_pairs(rng, graph, refs, 400)
        for keep, spl_ref in ((False, "shortest"), (True, "path")):
            ours = B.score_batch(
                graph.distances,
                [p[0] for p in pairs],
                [p[1] for p in pairs],
                keep_repeats=keep,
                spl_reference=spl_ref,
                metrics=C.METRICS + C.EXTRA,
            )
            for b, (R, Q) in enumerate(pairs):
                want = simple_scores(R, Q, graph.distances, keep_repeats=keep, spl_reference=spl_ref)
                assert_close({m: v[b] for m, v in ours.items()}, want, (scan, R, Q))
                checked += 1
    assert checked >= 4000


# ----------------------------------------------------------------------------- properties
node = st.integers(0, 63)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    R=st.lists(node, min_size=1, max_size=12),
    Q=st.lists(node, min_size=1, max_size=12),
    keep=st.booleans(),
    th=st.sampled_from([0.5, 1.0, 3.0]),
)
def test_properties(grid, R, Q, keep, th):
    s = M.score(R, Q, grid.distances, th, keep_repeats=keep, metrics=C.METRICS + C.EXTRA)
    for m in ("sr", "osr", "spl", "sed", "cls", "pc", "ls", "ndtw", "sdtw"):
        assert 0.0 <= s[m] <= 1.0, (m, s[m])
    for m in ("pl", "ne", "one", "dtw", "ad", "md"):
        assert s[m] >= 0.0
    if s["sr"] == 0.0:
        assert s["spl"] == s["sed"] == s["sdtw"] == 0.0
    assert s["one"] <= s["ne"] and s["ad"] <= s["md"] and s["osr"] >= s["sr"]
    itself = M.score(R, R, grid.distances, th, keep_repeats=True)
    assert itself["cls"] == 1.0 and itself["ndtw"] == 1.0 and itself["dtw"] == 0.0
    assert_close(s, simple_scores(R, Q, grid.distances, th, keep_repeats=keep))
