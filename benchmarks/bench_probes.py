"""Behavioral probes: how fast are the bootstrap and the episode generator, against simple baselines?

    python -m benchmarks.bench_probes [--fgr2r=../shared/data/fgr2r/FGR2R_val_unseen.json]
        [--connectivity_dir=../shared/data/connectivity] [--n_boot=1000]

1. Hierarchical bootstrap: `vlnkit.probes.scoring.hierarchical_bootstrap` (one multinomial draw per
   scan) against the two-stage resampling written out with Python loops, on data shaped like
   FGR2R val_unseen (11 scans, 783 trajectories, 6,132 episodes per skill at most).
2. Episode generation on real FGR2R: the Beam job on DirectRunner against a plain in-process loop
   over the same core functions (the job's overhead, not a speed-up claim).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time

import numpy as np

from vlnkit.probes.scoring import hierarchical_bootstrap


def naive_bootstrap(values, scans, trajs, n_boot, seed):
    rng = random.Random(seed)
    by_scan: dict = {}
    for v, s, t in zip(values, scans, trajs):
        by_scan.setdefault(s, {}).setdefault(t, []).append(v)
    scan_ids = sorted(by_scan)
    out = []
    for _ in range(n_boot):
        total = count = 0
        for _ in scan_ids:
            trajs_of = by_scan[rng.choice(scan_ids)]
            keys = sorted(trajs_of)
            for _ in keys:
                picked = trajs_of[rng.choice(keys)]
                total += sum(picked)
                count += len(picked)
        out.append(total / count)
    return np.array(out)


def bench_bootstrap(n_boot: int) -> None:
    rng = np.random.default_rng(0)
    traj_scan = rng.integers(0, 11, size=783)
    per_traj = rng.integers(3, 13, size=783)
    trajs = np.repeat(np.arange(783), per_traj)
    scans = traj_scan[trajs]
    values = rng.uniform(size=len(trajs))
    t0 = time.perf_counter()
    fast = hierarchical_bootstrap(values, scans, trajs, n_boot, np.random.default_rng(1))
    t1 = time.perf_counter()
    slow = naive_bootstrap(values.tolist(), scans.tolist(), trajs.tolist(), n_boot, 1)
    t2 = time.perf_counter()
    print(f"bootstrap: {len(values)} episodes, 11 scans, 783 trajectories, {n_boot} replicates")
    print(f"  vectorized {t1 - t0:.3f} s   naive loops {t2 - t1:.3f} s   speed-up x{(t2 - t1) / (t1 - t0):.1f}")
    print(f"  replicate std: vectorized {fast.std():.5f}, naive {slow.std():.5f} (same distribution)")


def bench_generation(fgr2r: str, connectivity_dir: str) -> None:
    from pipelines import build_probes
    from vlnkit.datasets.alignments import parse_fgr2r
    from vlnkit.navigation.graph import GraphStore
    from vlnkit.probes.episodes import ProbeConfig, probe_episodes, truncation_candidates

    t0 = time.perf_counter()
    store = GraphStore(connectivity_dir)
    n = 0
    with open(fgr2r, "rb") as f:
        data = f.read()
    for a in parse_fgr2r(data, fgr2r):
        graph = store.get(a["scan"])
        for c in truncation_candidates(a):
            n += len(probe_episodes(c, graph, ProbeConfig(probes=("stop", "direction"))))
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        summary = build_probes.main(
            [
                "--runner=DirectRunner",
                f"--alignments={fgr2r}",
                f"--connectivity_dir={connectivity_dir}",
                f"--output_dir={out}",
                "--probe_types=stop,direction",
            ]
        )
    t2 = time.perf_counter()
    assert summary["episodes"] == n
    print(f"generation: {n} episodes from {fgr2r}")
    print(f"  in-process core loop {t1 - t0:.2f} s ({n / (t1 - t0):,.0f} episodes/s)")
    print(
        f"  Beam job, DirectRunner, incl. Parquet + JSON + manifest {t2 - t1:.2f} s "
        f"({n / (t2 - t1):,.0f} episodes/s), ratio job/core x{(t2 - t1) / (t1 - t0):.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fgr2r", default="../shared/data/fgr2r/FGR2R_val_unseen.json")
    parser.add_argument("--connectivity_dir", default="../shared/data/connectivity")
    parser.add_argument("--n_boot", type=int, default=1000)
    args = parser.parse_args()
    bench_bootstrap(args.n_boot)
    bench_generation(args.fgr2r, args.connectivity_dir)


if __name__ == "__main__":
    main()
