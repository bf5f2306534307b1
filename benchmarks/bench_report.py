"""Report aggregation speed: vectorized mergeable partials against a plain per-row Python loop.

    python -m benchmarks.bench_report [--rows=300000] [--e2e]

1. Score tables: `scores_partial` on column batches (what the report job runs per Parquet batch)
   against a per-row loop filling the same fine-bin dicts; both results are checked equal.
2. With --e2e: the whole report job (DirectRunner) on R2R train against R4R val_unseen (built first
   with build_r4r from ../shared/data, not timed), timed end to end.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import numpy as np

from vlnkit.reports.stats import METRIC_WIDTHS, merge, scores_partial

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("VLNKIT_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))


def columns(rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Score-like columns: rates in [0, 1] (SR-like ones 0/1), distances up to ~30 m, 1% nulls."""
    rng = np.random.default_rng(seed)
    out = {}
    for m in METRIC_WIDTHS:
        if m in ("sr", "osr"):
            v = (rng.random(rows) < 0.3).astype(float)
        elif m in ("spl", "sed", "cls", "ndtw", "sdtw"):
            v = rng.beta(2, 3, rows)
        else:
            v = rng.gamma(2.0, 4.0, rows)
        v[rng.random(rows) < 0.01] = np.nan
        out[m] = v
    return out


def baseline(label: str, cols: dict[str, np.ndarray]) -> dict:
    """The obvious implementation: one Python step per row and metric."""
    out: dict = {}
    n = len(next(iter(cols.values())))
    lists = {m: v.tolist() for m, v in cols.items()}
    for m, values in lists.items():
        w = METRIC_WIDTHS[m]
        key = ("scores", label, m)
        cnt = nulls = 0
        total, lo, hi = 0.0, math.inf, -math.inf
        for x in values:
            if not math.isfinite(x):
                nulls += 1
                continue
            cnt += 1
            total += x
            lo, hi = min(lo, x), max(hi, x)
            b = ("hist", *key, math.floor(x / w + 1e-9))
            out[b] = out.get(b, 0) + 1
        out[("n", *key)] = cnt
        out[("nulls", *key)] = nulls
        out[("sum", *key)], out[("min", *key)], out[("max", *key)] = total, lo, hi
    out[("count", "scores", label, "episodes")] = n
    return out


def vectorized(label: str, cols: dict[str, np.ndarray], batch: int = 65536) -> dict:
    n = len(next(iter(cols.values())))
    out: dict = {}
    for start in range(0, n, batch):
        merge(out, scores_partial(label, {m: v[start : start + batch] for m, v in cols.items()}))
    return out


def best_of(fn, repeats: int) -> tuple[float, object]:
    best, result = math.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def end_to_end() -> None:
    from pipelines import build_r4r, report

    r2r = os.path.join(DATA, "r2r", "R2R_train.json")
    conn = os.path.join(DATA, "connectivity")
    with tempfile.TemporaryDirectory() as tmp:
        r4r = os.path.join(tmp, "R4R_val_unseen.json")
        build_r4r.main(
            [
                f"--r2r_path={os.path.join(DATA, 'r2r', 'R2R_val_unseen.json')}",
                f"--connectivity_dir={conn}",
                f"--output_dir={os.path.join(tmp, 'r4r')}",
                f"--json_output={r4r}",
            ]
        )
        t = time.perf_counter()
        summary = report.main(
            [
                "--runner=DirectRunner",
                f"--inputs={r2r}",
                f"--compare={r4r}",
                f"--connectivity_dir={conn}",
                f"--output_dir={os.path.join(tmp, 'report')}",
                "--draw=6",
            ]
        )
        wall = time.perf_counter() - t
    paths = sum(d.get("paths", 0) for d in summary["datasets"].values())
    instructions = sum(d.get("instructions", 0) for d in summary["datasets"].values())
    print(
        f"end to end (DirectRunner), R2R train + R4R val_unseen: {paths} paths, {instructions} instructions, "
        f"1 figure + 6 drawings: {wall:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--e2e", action="store_true")
    args = parser.parse_args()
    cols = columns(args.rows)
    t_base, base = best_of(lambda: baseline("a", cols), 1)
    t_vec, vec = best_of(lambda: vectorized("a", cols), args.repeats)
    assert base.keys() == vec.keys()
    for k, v in base.items():
        assert math.isclose(v, vec[k], rel_tol=1e-9, abs_tol=1e-9), k
    cells = args.rows * len(METRIC_WIDTHS)
    print(f"score aggregation, {args.rows} rows x {len(METRIC_WIDTHS)} metrics (results identical):")
    print(f"  per-row Python loop : {t_base:8.3f} s  ({cells / t_base / 1e6:6.2f} M values/s)")
    print(f"  vectorized partials : {t_vec:8.3f} s  ({cells / t_vec / 1e6:6.2f} M values/s)")
    print(f"  speed-up            : {t_base / t_vec:8.1f}x")
    if args.e2e:
        end_to_end()


if __name__ == "__main__":
    main()
