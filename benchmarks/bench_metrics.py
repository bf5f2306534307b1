"""Path metrics vs per-pair pure-Python code in the style of the metrics' original scripts.

Three measurements, all in one run:
1. Single pair, viewpoint ids in (a 12 x 12 R4R val_unseen pair): `vlnkit.evaluation.metrics.ndtw`,
   `sdtw` and `cls` against the original scripts' per-metric code (dict-of-dict distances, a Python
   double loop filling a numpy matrix), microseconds of CPU per call, best of several loops.
2. Batch: `score_batch`, all 13 metrics, against the same per-pair baseline and against the previous
   numpy implementation (the test oracle `tests.oracles.numpy_metrics`).
3. Cold start: a fresh process importing the library and scoring one pair, with an empty kernel cache
   (compilation) and with the cache filled (loading), next to a process that only imports numpy.

Batch details:

The baseline is written here, independently, in the style of google-research's r4r `cls.py` /
`dtw.py`: distances in a dict of dicts keyed by viewpoint id, one pair at a time, DTW and edit
distance as Python double loops over a numpy matrix. Both sides start from viewpoint-id lists
and compute all 13 metrics; both are measured in the same run on the same R4R-length pairs
(R4R val_unseen references joined here from R2R, random-walk queries of similar length), on one
core, in CPU seconds of this process (`time.process_time`, so other jobs on a shared machine do not
count against either side). The two must agree to 1e-9 on every pair the baseline scores.

    python -m benchmarks.bench_metrics [--data ../shared/data] [--pairs 40000] [--baseline_pairs 1500]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from tests.oracles import numpy_metrics as reference
from vlnkit.datasets.r4r import join_paths
from vlnkit.evaluation import metrics
from vlnkit.evaluation.batch import score_batch
from vlnkit.evaluation.common import METRICS, pack_viewpoints
from vlnkit.navigation.graph import GraphStore


# ----------------------------------------------------------------------------- the baseline
class ReferenceStyleScorer:
    """Per-pair scorer over dict-of-dict distances, the way the original scripts are written."""

    def __init__(self, distance: dict, threshold: float = 3.0):
        self.distance = distance
        self.threshold = threshold

    def length(self, nodes):
        return float(np.sum([self.distance[a][b] for a, b in zip(nodes[:-1], nodes[1:])]))

    def dtw(self, prediction, reference):
        matrix = np.inf * np.ones((len(prediction) + 1, len(reference) + 1))
        matrix[0][0] = 0
        for i in range(1, len(prediction) + 1):
            for j in range(1, len(reference) + 1):
                best = min(matrix[i - 1][j], matrix[i][j - 1], matrix[i - 1][j - 1])
                matrix[i][j] = self.distance[prediction[i - 1]][reference[j - 1]] + best
        return matrix[len(prediction)][len(reference)]

    def edit_distance(self, a, b):
        matrix = np.zeros((len(a) + 1, len(b) + 1))
        matrix[:, 0] = np.arange(len(a) + 1)
        matrix[0, :] = np.arange(len(b) + 1)
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                matrix[i][j] = min(
                    matrix[i - 1][j] + 1, matrix[i][j - 1] + 1, matrix[i - 1][j - 1] + (a[i - 1] != b[j - 1])
                )
        return matrix[len(a)][len(b)]

    def __call__(self, prediction, reference):
        prediction = [v for n, v in enumerate(prediction) if n == 0 or v != prediction[n - 1]]
        d, th = self.distance, self.threshold
        pl = self.length(prediction)
        ne = d[prediction[-1]][reference[-1]]
        one = np.min([d[q][reference[-1]] for q in prediction])
        sr = float(ne <= th)
        shortest = d[prediction[0]][reference[-1]]
        spl = sr * shortest / max(pl, shortest) if max(pl, shortest) > 0 else sr
        er, eq = list(zip(reference[:-1], reference[1:])), list(zip(prediction[:-1], prediction[1:]))
        longest = max(len(er), len(eq))
        sed = sr * (1 - self.edit_distance(er, eq) / longest) if longest else sr
        coverage = np.mean([np.exp(-np.min([d[u][v] for v in prediction]) / th) for u in reference])
        expected = coverage * self.length(reference)
        denom = expected + np.abs(expected - pl)
        ls = expected / denom if denom > 0 else 1.0
        dtw = self.dtw(prediction, reference)
        ndtw = np.exp(-dtw / (th * len(reference)))
        to_ref = [np.min([d[q][r] for r in reference]) for q in prediction]
        return {
            "pl": pl, "ne": ne, "one": one, "sr": sr, "osr": float(one <= th), "spl": spl, "sed": sed,
            "cls": coverage * ls, "dtw": dtw, "ndtw": ndtw, "sdtw": sr * ndtw,
            "ad": float(np.mean(to_ref)), "md": float(np.max(to_ref)),
        }  # fmt: skip


def dict_of_dicts(graph) -> dict:
    d = graph.distances
    return {u: {v: float(d[i, j]) for j, v in enumerate(graph.viewpoints)} for i, u in enumerate(graph.viewpoints)}


class OriginalScriptDTW:
    """nDTW / SDTW the way the original `dtw.py` computes them: one metric per call."""

    def __init__(self, distance: dict, threshold: float = 3.0):
        self.distance = distance
        self.threshold = threshold

    def __call__(self, prediction, reference, metric="ndtw"):
        dtw_matrix = np.inf * np.ones((len(prediction) + 1, len(reference) + 1))
        dtw_matrix[0][0] = 0
        for i in range(1, len(prediction) + 1):
            for j in range(1, len(reference) + 1):
                best_previous_cost = min(dtw_matrix[i - 1][j], dtw_matrix[i][j - 1], dtw_matrix[i - 1][j - 1])
                cost = self.distance[prediction[i - 1]][reference[j - 1]]
                dtw_matrix[i][j] = cost + best_previous_cost
        dtw = dtw_matrix[len(prediction)][len(reference)]
        ndtw = np.exp(-dtw / (self.threshold * len(reference)))
        if metric == "ndtw":
            return ndtw
        success = self.distance[prediction[-1]][reference[-1]] <= self.threshold
        return success * ndtw


class OriginalScriptCLS:
    """CLS the way the original `cls.py` computes it."""

    def __init__(self, distance: dict, threshold: float = 3.0):
        self.distance = distance
        self.decay = threshold

    def __call__(self, prediction, reference):
        def length(nodes):
            return np.sum([self.distance[a][b] for a, b in zip(nodes[:-1], nodes[1:])])

        coverage = np.mean([np.exp(-np.min([self.distance[u][v] for v in prediction]) / self.decay) for u in reference])
        expected = coverage * length(reference)
        score = expected / (expected + np.abs(expected - length(prediction)))
        return coverage * score


def per_call_us(fns, loops, rounds: int) -> list[float]:
    """Microseconds of CPU per call of each function: best of `rounds`, the functions taking turns
    within each round so that load from other jobs on the machine falls on all of them alike."""
    best = [math.inf] * len(fns)
    for _ in range(rounds):
        for k, (fn, n) in enumerate(zip(fns, loops)):
            start = time.process_time()
            for _ in range(n):
                fn()
            best[k] = min(best[k], (time.process_time() - start) / n)
    return [b * 1e6 for b in best]


def single_pair(workload, repeats: int) -> dict:
    """One 12 x 12 R4R pair, ids in: the library's functions vs the original scripts' code, side by side."""
    graph, R, Q = next(
        (graph, r, q) for graph, pairs in workload.values() for r, q in pairs if len(r) == 12 and len(q) == 12
    )
    table = dict_of_dicts(graph)
    dtw_style, cls_style = OriginalScriptDTW(table), OriginalScriptCLS(table)
    rows = {}
    for name, ours, theirs in (
        ("ndtw", lambda: metrics.ndtw(R, Q, graph), lambda: dtw_style(Q, R, "ndtw")),
        ("sdtw", lambda: metrics.sdtw(R, Q, graph), lambda: dtw_style(Q, R, "sdtw")),
        ("cls", lambda: metrics.cls(R, Q, graph), lambda: cls_style(Q, R)),
    ):
        assert math.isclose(ours(), float(theirs()), rel_tol=1e-12, abs_tol=1e-12), name
        base, lib = per_call_us([theirs, ours], [100, 2000], repeats)
        rows[name] = {
            "library_us": round(lib, 2),
            "original_script_us": round(base, 1),
            "speedup": round(base / lib, 1),
        }
    return rows


COLD = """
import time
t0 = time.perf_counter()
from vlnkit.evaluation.batch import score_batch
from vlnkit.evaluation.metrics import ndtw
t1 = time.perf_counter()
d = [[0.0, 1.0], [1.0, 0.0]]
ndtw([0, 1], [0, 1], d); score_batch(d, [[0, 1]], [[1]])
from vlnkit.evaluation.rewards import RewardBatch
env = RewardBatch(d, "cls", cls_shaping=True); env.reset([[0, 1]]); env.step([1]); env.step([1], stop=[True])
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def cold_start() -> dict:
    """Seconds for a fresh process: import + first calls, with an empty and with a filled kernel cache."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": root}
        runs = {}
        for label in ("empty_cache", "filled_cache"):
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", COLD], env=env, capture_output=True, text=True, check=True)
            total = time.perf_counter() - start
            imp, first = map(float, out.stdout.split())
            runs[label] = {"process_s": round(total, 2), "import_s": round(imp, 2), "first_calls_s": round(first, 2)}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numpy"], env=env, check=True)
        runs["python_numpy_only_s"] = round(time.perf_counter() - start, 2)
    return runs


# ----------------------------------------------------------------------------- workload
def r4r_pairs(data: str, total: int, seed: int = 0):
    """{scan: [(reference ids, query ids)]}: R4R val_unseen references, random-walk queries as long."""
    records = json.loads(open(os.path.join(data, "r2r", "R2R_val_unseen.json")).read())
    for r in records:
        r.setdefault("distance", 0.0)
    store = GraphStore(os.path.join(data, "connectivity"))
    rng = np.random.default_rng(seed)
    scans = sorted({r["scan"] for r in records})
    per_scan = total // len(scans)
    out = {}
    for scan in scans:
        graph = store.get(scan)
        joined, _ = join_paths(graph, [r for r in records if r["scan"] == scan])
        refs = [j["path"] for j in joined] or [r["path"] for r in records if r["scan"] == scan]
        pairs = []
        for k in range(per_scan):
            ref = refs[k % len(refs)]
            node = graph.idx(ref[0])
            walk = [node]
            for _ in range(len(ref) - 1 + int(rng.integers(-3, 4))):
                walk.append(int(rng.choice(graph.neighbours[walk[-1]])))
            pairs.append((ref, [graph.viewpoints[i] for i in walk]))
        out[scan] = (graph, pairs)
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    parser.add_argument("--pairs", type=int, default=40_000, help="pairs scored by the library")
    parser.add_argument("--baseline_pairs", type=int, default=1_500, help="pairs scored by the baseline")
    parser.add_argument("--repeats", type=int, default=3, help="time each side this many times, keep the best")
    parser.add_argument("--cold_start", type=int, default=1, help="also time fresh processes (0: skip)")
    args = parser.parse_args(argv)

    workload = r4r_pairs(args.data, args.pairs)
    n_pairs = sum(len(p) for _, p in workload.values())
    ref_len = np.mean([len(r) for _, p in workload.values() for r, _ in p])
    q_len = np.mean([len(q) for _, p in workload.values() for _, q in p])

    def best_of(repeats, fn):
        times = []
        for _ in range(repeats):
            start = time.process_time()
            value = fn()
            times.append(time.process_time() - start)
        return min(times), value

    # Library, from viewpoint ids (conversion to indices included) and from index arrays (the batch API).
    def library_from_ids():
        out = {}
        for scan, (graph, pairs) in workload.items():
            refs = pack_viewpoints(graph.index, [r for r, _ in pairs])
            queries = pack_viewpoints(graph.index, [q for _, q in pairs])
            out[scan] = score_batch(graph.distances, refs, queries)
        return out

    packed = {
        scan: (
            graph,
            pack_viewpoints(graph.index, [r for r, _ in pairs]),
            pack_viewpoints(graph.index, [q for _, q in pairs]),
        )
        for scan, (graph, pairs) in workload.items()
    }

    def library_from_indices():
        return {scan: score_batch(graph.distances, refs, queries) for scan, (graph, refs, queries) in packed.items()}

    def numpy_implementation():
        return {
            scan: reference.score_batch(graph.distances, refs, queries)
            for scan, (graph, refs, queries) in packed.items()
        }

    ids_seconds, ours = best_of(args.repeats, library_from_ids)
    lib_seconds, _ = best_of(args.repeats, library_from_indices)
    lib_rate, ids_rate = n_pairs / lib_seconds, n_pairs / ids_seconds
    old_seconds, _ = best_of(args.repeats, numpy_implementation)
    old_rate = n_pairs / old_seconds

    # Baseline: the same pairs, per pair, a sample spread evenly over scans.
    per_scan = max(1, args.baseline_pairs // len(workload))
    tables = {scan: ReferenceStyleScorer(dict_of_dicts(graph)) for scan, (graph, _) in workload.items()}

    def baseline():
        return {scan: [tables[scan](q, r) for r, q in pairs[:per_scan]] for scan, (_, pairs) in workload.items()}

    base_seconds, base = best_of(args.repeats, baseline)
    base_pairs = sum(len(v) for v in base.values())
    base_rate = base_pairs / base_seconds

    worst = 0.0
    for scan, rows in base.items():
        for b, row in enumerate(rows):
            for m in METRICS:
                got, want = float(ours[scan][m][b]), float(row[m])
                worst = max(worst, 0.0 if got == want else abs(got - want))
                assert math.isclose(got, want, abs_tol=1e-9), (scan, b, m, got, want)

    single = single_pair(workload, max(args.repeats, 15))
    cold = cold_start() if args.cold_start else None
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    result = {
        "single_pair_12x12_ids": single,
        "cold_start": cold,
        "numpy_implementation_pairs_per_second": round(old_rate),
        "peak_rss_mib": round(peak_mib),
        "pairs_library": n_pairs,
        "pairs_baseline": base_pairs,
        "mean_reference_nodes": round(float(ref_len), 1),
        "mean_query_nodes": round(float(q_len), 1),
        "library_pairs_per_second": round(lib_rate),
        "library_from_ids_pairs_per_second": round(ids_rate),
        "baseline_pairs_per_second": round(base_rate),
        "speedup": round(lib_rate / base_rate, 1),
        "speedup_from_ids": round(ids_rate / base_rate, 1),
        "max_abs_difference": worst,
    }
    print("Single pair, 12 x 12 viewpoint ids in (CPU time per call, best of loops):")
    for name, row in single.items():
        print(
            f"  {name:5} library {row['library_us']:7.2f} us   original-script {row['original_script_us']:7.1f} us"
            f"   speedup {row['speedup']:6.1f}x (target >= 25x)"
        )
    print(f"R4R-length pairs: reference {ref_len:.1f} nodes, query {q_len:.1f} nodes (mean), all 13 metrics")
    print(f"  library batch API, index arrays  {n_pairs:>7} pairs in {lib_seconds:6.3f} s = {lib_rate:>9,.0f} pairs/s")
    print(f"  library, from viewpoint ids      {n_pairs:>7} pairs in {ids_seconds:6.3f} s = {ids_rate:>9,.0f} pairs/s")
    print(
        f"  reference-style per-pair loop    {base_pairs:>7} pairs in {base_seconds:6.3f} s = {base_rate:>9,.0f} pairs/s"
    )
    print(f"  previous numpy implementation    {n_pairs:>7} pairs in {old_seconds:6.3f} s = {old_rate:>9,.0f} pairs/s")
    print(
        f"  speedup: batch API {lib_rate / base_rate:.1f}x over the per-pair loop, from ids {ids_rate / base_rate:.1f}x"
    )
    print(f"  batch API vs the previous numpy implementation: {lib_rate / old_rate:.1f}x (target: >= 1M pairs/s/core)")
    print(f"  max |library - baseline| over the baseline's pairs: {worst:.2e} (CPU seconds, best of {args.repeats})")
    if cold:
        e, f = cold["empty_cache"], cold["filled_cache"]
        print("Cold start, a fresh process importing the library and making its first calls (wall clock):")
        print(
            f"  empty kernel cache (compiles)  {e['process_s']:5.2f} s (import {e['import_s']} s, first calls {e['first_calls_s']} s)"
        )
        print(
            f"  filled kernel cache (loads)    {f['process_s']:5.2f} s (import {f['import_s']} s, first calls {f['first_calls_s']} s)"
        )
        print(f"  python -c 'import numpy'       {cold['python_numpy_only_s']:5.2f} s")
    print(f"Peak RSS: {peak_mib:.0f} MiB")
    return result


if __name__ == "__main__":
    main()
