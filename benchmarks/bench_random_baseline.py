"""One million random-baseline walks on R2R val_unseen, end to end on DirectRunner, vs a per-walk loop.

The job is run as a user runs it (a fresh `python -m pipelines.random_baseline` process: read,
generate, score, write the summary), and its wall time is compared with the 60 s target. The
baseline, measured in the same run, generates and scores walks one at a time in plain Python
(random.choice over neighbours, the reference-style scorer of `bench_metrics`) on a sample of
episodes; its time is extrapolated linearly to the same number of walks.

    python -m benchmarks.bench_random_baseline [--data ../shared/data] [--num_trajectories 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from benchmarks.bench_metrics import ReferenceStyleScorer, dict_of_dicts
from vlnkit.navigation.graph import GraphStore

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def job_command(data: str, out: str, n: int, seed: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipelines.random_baseline",
        "--runner=DirectRunner",
        f"--dataset={data}/r2r/R2R_val_unseen.json",
        f"--steps_from={data}/r2r/R2R_train.json",
        f"--connectivity_dir={data}/connectivity",
        f"--num_trajectories={n}",
        f"--seed={seed}",
        f"--output_dir={out}",
    ]


def baseline_walks_per_second(data: str, walks: int, seed: int = 0) -> float:
    """Per-walk Python generation + reference-style scoring, CPU seconds, on `walks` walks."""
    records = json.load(open(os.path.join(data, "r2r", "R2R_val_unseen.json")))
    train = json.load(open(os.path.join(data, "r2r", "R2R_train.json")))
    pool = [len(r["path"]) - 1 for r in train]
    store = GraphStore(os.path.join(data, "connectivity"))
    rng = random.Random(seed)
    episodes = [r for r in records for _ in r["instructions"]]
    rng.shuffle(episodes)
    scorers, neighbours = {}, {}
    for r in episodes:  # graph set-up is not timed (the job loads graphs once per worker too)
        if r["scan"] not in scorers:
            g = store.get(r["scan"])
            scorers[r["scan"]] = ReferenceStyleScorer(dict_of_dicts(g))
            neighbours[r["scan"]] = {v: [g.viewpoints[k] for k in g.neighbours[i]] for i, v in enumerate(g.viewpoints)}
    start = time.process_time()
    for n in range(walks):
        r = episodes[n % len(episodes)]
        nb = neighbours[r["scan"]]
        walk = [r["path"][0]]
        for _ in range(rng.choice(pool)):
            walk.append(rng.choice(nb[walk[-1]]))
        scorers[r["scan"]](walk, r["path"])
    return walks / (time.process_time() - start)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--num_trajectories", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline_walks", type=int, default=5_000)
    args = parser.parse_args(argv)
    data = os.path.abspath(args.data)

    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "out")
        start = time.perf_counter()
        proc = subprocess.run(
            job_command(data, out, args.num_trajectories, args.seed), cwd=ROOT, capture_output=True, text=True
        )
        wall = time.perf_counter() - start
        if proc.returncode:
            raise SystemExit(f"job failed:\n{proc.stderr[-3000:]}")
        summary = json.load(open(os.path.join(out, "summary.json")))
    base_rate = baseline_walks_per_second(data, args.baseline_walks, args.seed)
    base_seconds = args.num_trajectories / base_rate
    result = {
        "num_trajectories": summary["count"],
        "job_wall_seconds": round(wall, 2),
        "target_seconds": 60,
        "baseline_walks_per_cpu_second": round(base_rate),
        "baseline_extrapolated_seconds": round(base_seconds, 1),
        "speedup": round(base_seconds / wall, 1),
        "metrics": summary["metrics"],
    }
    print(f"random_baseline, {summary['count']:,} walks on R2R val_unseen, DirectRunner, end to end (fresh process)")
    print(f"  job wall time            {wall:8.2f} s   (target <= 60 s: {'met' if wall <= 60 else 'NOT met'})")
    print(
        f"  per-walk Python baseline {base_seconds:8.1f} s   ({base_rate:,.0f} walks/CPU-s on {args.baseline_walks:,} walks, extrapolated)"
    )
    print(f"  speedup {base_seconds / wall:.1f}x")
    print("  means: " + ", ".join(f"{k}={v:.4f}" for k, v in summary["metrics"].items()))
    return result


if __name__ == "__main__":
    main()
