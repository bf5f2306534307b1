"""Benchmark: the build_r4r Beam job (DirectRunner) against a straightforward single-process generator.

Both run as separate commands, end to end (interpreter start, imports, reading, joining, writing one
R4R JSON file), on the same input, in interleaved rounds (default 3): this machine's speed drifts by
tens of percent within minutes, so each round times the two side by side and the median round's
ratio is reported, with each command's peak RSS (`benchmarks.measure`):

    python -m benchmarks.bench_build_r4r                   # R2R train + synthetic growth
    python -m benchmarks.bench_build_r4r --skip_growth     # R2R train only
    python -m benchmarks.bench_build_r4r --skip_growth --rounds 5

The growth part makes a synthetic dataset (jittered grids) with ~77 paths per scan (R2R train's
average) and one with 10x more paths per scan, and times both implementations on each.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

from benchmarks.measure import measured

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("VLNKIT_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))


def baseline_cmd(r2r: str, conn: str, out: str) -> list[str]:
    code = f"from tests.oracles.r4r_generator import main; print(main({r2r!r}, {conn!r}, {out!r}))"
    return [sys.executable, "-c", code]


def beam_cmd(r2r: str, conn: str, out_dir: str, extra=()) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipelines.build_r4r",
        "--runner=DirectRunner",
        f"--r2r_path={r2r}",
        f"--connectivity_dir={conn}",
        f"--output_dir={out_dir}",
        f"--json_output={out_dir}/R4R.json",
        *extra,
    ]


def compare(label: str, r2r: str, conn: str, work: str, extra=(), rounds: int = 3) -> dict:
    base, beam = [], []
    for _ in range(rounds):
        base.append(measured(baseline_cmd(r2r, conn, os.path.join(work, f"{label}_baseline.json"))))
        beam.append(measured(beam_cmd(r2r, conn, os.path.join(work, f"{label}_beam"), extra)))
    with open(os.path.join(work, f"{label}_beam", "summary.json")) as f:
        joined = json.load(f)["dataset"]["paths"]
    with open(r2r) as f:
        n = len(json.load(f))
    ratios = [b["wall_s"] / j["wall_s"] for b, j in zip(base, beam)]
    row = {
        "dataset": label,
        "paths_in": n,
        "joined": joined,
        "baseline_s": statistics.median(b["wall_s"] for b in base),
        "beam_s": statistics.median(j["wall_s"] for j in beam),
        "ratio": statistics.median(ratios),
        "baseline_rss_mb": max(b["peak_rss_mb"] for b in base),
        "beam_rss_mb": max(j["peak_rss_mb"] for j in beam),
    }
    print(
        f"{label:28s} in={n:6d} joined={joined:8d}  median baseline {row['baseline_s']:6.2f} s "
        f"({row['baseline_rss_mb']:.0f} MB)  beam {row['beam_s']:6.2f} s ({row['beam_rss_mb']:.0f} MB)  "
        f"speed ratio baseline/beam = {row['ratio']:4.2f}x (rounds: {', '.join(f'{r:.2f}' for r in ratios)})",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip_growth", action="store_true")
    parser.add_argument("--beam_flags", default="", help="extra flags for the Beam job, space-separated")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    args = parser.parse_args()
    extra = args.beam_flags.split()
    with tempfile.TemporaryDirectory() as work:
        rows = [
            compare(
                "R2R train",
                os.path.join(DATA, "r2r", "R2R_train.json"),
                os.path.join(DATA, "connectivity"),
                work,
                extra,
                args.rounds,
            )
        ]
        if not args.skip_growth:
            from vlnkit.fixtures.grid import write_environment

            for factor in (1, 10):
                env = os.path.join(work, f"synthetic_x{factor}")
                r2r, conn = write_environment(env, scans=4, paths_per_scan=77 * factor, seed=7, instructions=1)
                rows.append(compare(f"synthetic 4 scans x{factor}", r2r, conn, work, extra, args.rounds))
            small, big = rows[-2], rows[-1]
            print(
                f"growth x1 -> x10 paths per scan: joined x{big['joined'] / small['joined']:.1f}, "
                f"baseline time x{big['baseline_s'] / small['baseline_s']:.1f}, "
                f"beam time x{big['beam_s'] / small['beam_s']:.1f}"
            )


if __name__ == "__main__":
    main()
