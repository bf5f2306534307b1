"""nDTW of continuous episodes: the compiled kernels against the `fastdtw` package called per episode.

The workload is the 1,839 R2R-CE v1-2 val_unseen episodes with their ground-truth `locations`, and one
agent trajectory per episode made from its gt path (seeded): the path resampled to 60-500 positions,
a detour off the path and back, gaussian noise (0.15 m), and some positions repeated (turning in
place). Three ways of computing every episode's nDTW, each in a fresh process (so its peak RSS is its
own, measured as `benchmarks.measure` does):

- `exact`: `vlnkit.continuous.score_paths(dtw="exact")`, all episodes in one call (nDTW, CLS, PL);
- `fastdtw`: the same call with `dtw="fastdtw"` under the rules of the implementation that
  `from fastdtw import fastdtw` picks here;
- `package`: what VLN-CE does, per episode: repeats dropped, `fastdtw(locations, gt_locations,
  dist=euclidean_distance)[0]` with VLN-CE's `np.linalg.norm(b - a, ord=2)`, then exp(-d / (3 |gt|)).

Timed inside each process after a warm-up call (imports and the kernel cache load excluded; the
first-call cost is reported too), best of `--repeats` for the two library modes. The fastdtw mode's
nDTW must equal the package's to 1e-9 on every episode. Target: exact nDTW at least 20x faster per
episode than the package's approximation.

    python -m benchmarks.bench_ce_ndtw [--data ../shared/data] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from benchmarks.measure import measured

SPLIT = os.path.join("vlnce", "R2R_VLNCE_v1-2_preprocessed", "val_unseen", "val_unseen.json.gz")


def make_trajectories(gt_paths: list[np.ndarray], seed: int = 0) -> list[np.ndarray]:
    """One agent trajectory per gt path: resampled to 60-500 positions, a detour, noise, repeats."""
    rng = np.random.default_rng(seed)
    out = []
    for gt in gt_paths:
        n = int(rng.integers(60, 501))
        seg = np.linalg.norm(np.diff(gt, axis=0), axis=1)
        along = np.r_[0.0, np.cumsum(seg)]
        t = np.linspace(0.0, along[-1], n - 8) if along[-1] > 0 else np.zeros(n - 8)
        walk = np.stack([np.interp(t, along, gt[:, c]) for c in range(3)], axis=1)
        at = int(rng.integers(1, len(walk)))  # a detour: 4 positions out to 1-3 m sideways and 4 back
        side = rng.normal(size=3) * np.array([1.0, 0.0, 1.0])
        side *= rng.uniform(1.0, 3.0) / max(np.linalg.norm(side), 1e-9)
        out_and_back = walk[at - 1] + np.outer(np.r_[np.linspace(0.25, 1, 4), np.linspace(1, 0.25, 4)], side)
        walk = np.concatenate([walk[:at], out_and_back, walk[at:]])
        walk[1:] += rng.normal(scale=0.15, size=(len(walk) - 1, 3)) * np.array([1.0, 0.0, 1.0])
        repeat = rng.random(len(walk)) < 0.1
        walk[1:][repeat[1:]] = walk[:-1][repeat[1:]]  # turning in place: the same position again
        walk[0] = gt[0]
        out.append(walk)
    return out


def child(mode: str, data_file: str, values_file: str, repeats: int) -> dict:
    """One mode in this process: returns timings and writes every episode's nDTW to values_file."""
    saved = np.load(data_file)
    gt_off, gt_pts, q_off, q_pts = saved["gt_off"], saved["gt_pts"], saved["q_off"], saved["q_pts"]
    n = len(gt_off) - 1
    if mode == "package":
        from fastdtw import fastdtw

        def euclidean_distance(position_a, position_b):  # VLN-CE's NDTW.euclidean_distance
            return np.linalg.norm(np.array(position_b) - np.array(position_a), ord=2)

        gts = [gt_pts[gt_off[i] : gt_off[i + 1]].tolist() for i in range(n)]
        queries = [q_pts[q_off[i] : q_off[i + 1]].tolist() for i in range(n)]
        start = time.perf_counter()
        values = []
        for gt, positions in zip(gts, queries):
            locations = [positions[0]]
            for p in positions[1:]:
                if p != locations[-1]:
                    locations.append(p)
            d = fastdtw(locations, gt, dist=euclidean_distance)[0]
            values.append(np.exp(-d / (len(gt) * 3.0)))
        best = time.perf_counter() - start
        first = None
        extra = {"implementation": fastdtw.__module__}
    else:
        from fastdtw import fastdtw as picked

        from vlnkit.continuous.points import PointPaths
        from vlnkit.continuous.scoring import score_paths

        rules = "compiled" if picked.__module__ == "fastdtw._fastdtw" else "python"
        reference, query = PointPaths(gt_off, gt_pts), PointPaths(q_off, q_pts)
        options = {"dtw": mode, "fastdtw_rules": rules}
        start = time.perf_counter()
        score_paths(reference.take([0]), query.take([0]), **options)  # kernel cache load (or compile)
        first = time.perf_counter() - start
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            out = score_paths(reference, query, **options)
            best = min(best, time.perf_counter() - start)
        values = out["ndtw"]
        extra = {"rules": rules}
    np.save(values_file, np.asarray(values, dtype=np.float64))
    return {"seconds": best, "per_episode_us": best / n * 1e6, "first_call_s": first, **extra}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", nargs=4, metavar=("MODE", "DATA", "VALUES", "REPEATS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        mode, data_file, values_file, repeats = args.child
        print(json.dumps(child(mode, data_file, values_file, int(repeats))))
        return {}

    from vlnkit.continuous.episodes import read_episodes
    from vlnkit.continuous.points import PointPaths

    start = time.perf_counter()
    episodes, errors = read_episodes(os.path.join(args.data, SPLIT))
    read_s = time.perf_counter() - start
    assert not errors and len(episodes) == 1839, errors[:3]
    gt = episodes.gt_locations
    trajectories = make_trajectories([gt.path(i) for i in range(len(gt))], args.seed)
    query = PointPaths.from_lists([t.tolist() for t in trajectories])
    lengths = query.lengths()
    assert lengths.min() >= 60 and lengths.max() <= 500
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        data_file = os.path.join(tmp, "workload.npz")
        np.savez(data_file, gt_off=gt.offsets, gt_pts=gt.points, q_off=query.offsets, q_pts=query.points)
        values = {}
        for mode in ("exact", "fastdtw", "package"):
            out = os.path.join(tmp, f"{mode}.npy")
            cmd = [sys.executable, "-m", "benchmarks.bench_ce_ndtw", "--child", mode, data_file, out, str(args.repeats)]
            run = measured(cmd)
            runs[mode] = {**json.loads(run["stdout"].strip().splitlines()[-1]), "peak_rss_mb": run["peak_rss_mb"]}
            values[mode] = np.load(out)
    worst = float(np.abs(values["fastdtw"] - values["package"]).max())
    assert worst <= 1e-9, f"fastdtw mode differs from the package by {worst}"
    gap = np.abs(values["exact"] - values["package"])
    result = {
        "episodes": len(episodes),
        "positions_per_episode": [int(lengths.min()), float(lengths.mean()), int(lengths.max())],
        "gt_locations_per_episode": float(gt.lengths().mean()),
        "read_episodes_and_gt_s": round(read_s, 3),
        "runs": runs,
        "package_over_exact": runs["package"]["per_episode_us"] / runs["exact"]["per_episode_us"],
        "package_over_fastdtw_mode": runs["package"]["per_episode_us"] / runs["fastdtw"]["per_episode_us"],
        "fastdtw_mode_vs_package_max_abs": worst,
        "exact_minus_fastdtw_ndtw": {
            "mean": float(np.mean(values["exact"] - values["package"])),
            "max": float(gap.max()),
        },
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
