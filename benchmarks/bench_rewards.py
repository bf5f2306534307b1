"""Incremental rewards for a batch of environments vs recomputing the metric from scratch at every step.

Workload: 64 environments on R4R val_unseen reference paths (R2R val_unseen joined with the R4R
rule, spread over the scans, so the environments sit in many scans behind one GraphStore). Each
walks 12 random neighbour moves (drawn in advance, so the policy is not timed) and then stops.

Measured in one run, CPU seconds of this process (`time.process_time`), best of `--repeats`:
- `RewardBatch.step` for all 64 environments (node index arrays in), for each reward kind, and
  from viewpoint ids for nDTW; microseconds per step, target < 50 us;
- the same nDTW rewards recomputed from scratch at every step, per environment, (a) with
  original-script code (dict-of-dict distances, Python double loop over a numpy matrix) and
  (b) with this library's single-pair `ndtw` (a compiled kernel, but O(|R| t) per step).
Rewards are checked: equal to (b) bit for bit, to (a) within 1e-12.

    python -m benchmarks.bench_rewards [--data ../shared/data] [--envs 64] [--moves 12] [--repeats 5]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time

import numpy as np

from benchmarks.bench_metrics import OriginalScriptDTW, dict_of_dicts, r4r_pairs
from vlnkit.evaluation import metrics
from vlnkit.evaluation.rewards import RewardBatch
from vlnkit.navigation.graph import GraphStore


def workload(data: str, envs: int, moves: int, seed: int = 0):
    """(store, scans, references as ids, walks as index arrays (moves, B), walks as ids)."""
    pairs = r4r_pairs(data, envs * 4, seed)
    store = GraphStore(os.path.join(data, "connectivity"), {scan: g for scan, (g, _) in pairs.items()})
    rng = np.random.default_rng(seed)
    scans, refs = [], []
    by_scan = {scan: list(dict.fromkeys(tuple(r) for r, _ in p)) for scan, (_, p) in sorted(pairs.items())}
    pool = [(scan, list(rs[k])) for k in range(envs) for scan, rs in by_scan.items() if k < len(rs)]
    for b in range(envs):
        scan, ref = pool[b % len(pool)]
        scans.append(scan)
        refs.append(ref)
    walks = np.empty((moves, envs), dtype=np.int64)
    for b, (scan, ref) in enumerate(zip(scans, refs)):
        g = store.get(scan)
        node = g.idx(ref[0])
        for t in range(moves):
            node = int(rng.choice(g.neighbours[node]))
            walks[t, b] = node
    ids = [[store.get(s).viewpoints[k] for s, k in zip(scans, walks[t])] for t in range(moves)]
    return store, scans, refs, walks, ids


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--moves", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=50, help="episodes per timing of the library")
    args = parser.parse_args(argv)
    store, scans, refs, walks, ids = workload(args.data, args.envs, args.moves)
    B, T = args.envs, args.moves
    stop_all = np.ones(B, dtype=bool)

    def run_library(kind, nodes, episodes, **options):
        env = RewardBatch(store, kind, **options)
        best, rewards = math.inf, None
        for _ in range(args.repeats):
            spent = 0.0
            for _ in range(episodes):
                env.reset(refs, scans=scans)
                out = []
                start = time.process_time()
                for t in range(T):
                    out.append(env.step(nodes[t]))
                spent += time.process_time() - start
                out.append(env.step(nodes[0], stop=stop_all))
            best = min(best, spent / (episodes * T))
            rewards = np.array(out)
        return best * 1e6, rewards

    def time_reset(repeats=20):
        env = RewardBatch(store, "ndtw")
        env.reset(refs, scans=scans)  # the scans' matrices are placed once; later resets reuse them
        best = math.inf
        for _ in range(repeats):
            start = time.process_time()
            env.reset(refs, scans=scans)
            best = min(best, time.process_time() - start)
        return best * 1e6

    reset_us = time_reset()
    results = {}
    for label, kind, nodes, options in (
        ("goal", "goal", walks, {}),
        ("ndtw", "ndtw", walks, {}),
        ("cls (shaping)", "cls", walks, {"cls_shaping": True}),
        ("ndtw, viewpoint ids in", "ndtw", ids, {}),
    ):
        results[label] = run_library(kind, nodes, args.episodes, **options)

    # Baselines: recompute nDTW of the walk so far at every step, per environment.
    graphs = [store.get(s) for s in scans]
    walk_ids = [[refs[b][0]] + [ids[t][b] for t in range(T)] for b in range(B)]
    tables = {s: OriginalScriptDTW(dict_of_dicts(store.get(s))) for s in set(scans)}

    def original_script():
        prev = [tables[scans[b]](walk_ids[b][:1], refs[b]) for b in range(B)]
        out = np.empty((T, B))
        for t in range(1, T + 1):
            for b in range(B):
                now = tables[scans[b]](walk_ids[b][: t + 1], refs[b])
                out[t - 1, b], prev[b] = now - prev[b], now
        return out

    def library_from_scratch():
        prev = [metrics.ndtw(refs[b], walk_ids[b][:1], graphs[b]) for b in range(B)]
        out = np.empty((T, B))
        for t in range(1, T + 1):
            for b in range(B):
                now = metrics.ndtw(refs[b], walk_ids[b][: t + 1], graphs[b])
                out[t - 1, b], prev[b] = now - prev[b], now
        return out

    def best_per_step(fn, repeats):
        best, value = math.inf, None
        for _ in range(repeats):
            start = time.process_time()
            value = fn()
            best = min(best, time.process_time() - start)
        return best / T * 1e6, value

    pub_us, pub = best_per_step(original_script, max(1, args.repeats // 2))
    scratch_us, scratch = best_per_step(library_from_scratch, args.repeats)
    ndtw_us, ndtw_rewards = results["ndtw"]
    assert np.array_equal(ndtw_rewards[:T], scratch), "incremental nDTW rewards differ from recomputation"
    assert np.array_equal(results["ndtw, viewpoint ids in"][1], ndtw_rewards)
    worst = float(np.max(np.abs(ndtw_rewards[:T] - pub)))
    assert worst <= 1e-12, worst
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ref_nodes = float(np.mean([len(r) for r in refs]))

    print(f"{B} environments in {len(set(scans))} scans, references {ref_nodes:.1f} nodes (mean), {T} moves + stop")
    print("One reward step for the whole batch (CPU microseconds, best of repeats):")
    for label, (us, _) in results.items():
        print(f"  RewardBatch.step, {label:24} {us:8.1f} us   ({us / B * 1000:6.0f} ns per environment)")
    print(
        f"  recompute nDTW from scratch, library ndtw()   {scratch_us:8.1f} us   ({scratch_us / ndtw_us:5.1f}x slower)"
    )
    print(f"  recompute nDTW from scratch, original-script  {pub_us:8.1f} us   ({pub_us / ndtw_us:5.0f}x slower)")
    print(f"  target: one step for {B} environments < 50 us; nDTW step = {ndtw_us:.1f} us")
    print(f"  RewardBatch.reset for {B} environments (viewpoint ids in): {reset_us:.0f} us")
    print(f"  rewards: equal to the library's recomputation bit for bit; max |diff| vs original-script {worst:.1e}")
    print(f"Peak RSS: {peak_mib:.0f} MiB")
    return {
        "envs": B,
        "scans": len(set(scans)),
        "step_us": {label: round(us, 1) for label, (us, _) in results.items()},
        "reset_us": round(reset_us),
        "recompute_library_us": round(scratch_us, 1),
        "recompute_original_script_us": round(pub_us, 1),
        "speedup_vs_library_recompute": round(scratch_us / ndtw_us, 1),
        "speedup_vs_original_script": round(pub_us / ndtw_us),
        "max_abs_difference_original_script": worst,
        "peak_rss_mib": round(peak_mib),
    }


if __name__ == "__main__":
    main()
