"""Benchmark: the same job in-process (DirectRunner) and multi-process (2 workers) on this machine.

    python -m benchmarks.bench_runners                       # build_r4r on R2R train, random_baseline 1M
    python -m benchmarks.bench_runners --jobs=build_r4r

Each job runs as a separate command, end to end, once per mode in the same run; the ratio is
in-process wall time over multi-process wall time (above 1: multi-process is faster). Both modes
must produce the same summary, which is checked.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("VLNKIT_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
MODES = {
    "in-process": ["--runner=DirectRunner"],
    "multi-process x2": ["--runner=DirectRunner", "--direct_running_mode=multi_processing", "--direct_num_workers=2"],
}


def job_command(job: str, out: str) -> list[str]:
    conn = f"--connectivity_dir={DATA}/connectivity"
    if job == "build_r4r":
        flags = [f"--r2r_path={DATA}/r2r/R2R_train.json", conn, f"--json_output={out}/R4R_train.json"]
    elif job == "random_baseline":
        flags = [
            f"--dataset={DATA}/r2r/R2R_val_unseen.json",
            f"--steps_from={DATA}/r2r/R2R_train.json",
            conn,
            "--num_trajectories=1000000",
            "--seed=0",
        ]
    else:
        raise SystemExit(f"unknown job {job}")
    return [sys.executable, "-m", f"pipelines.{job}", *flags, f"--output_dir={out}"]


def comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("wall_seconds", "runner")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", default="build_r4r,random_baseline")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for job in args.jobs.split(","):
            times, summaries = {}, {}
            for mode, flags in MODES.items():
                out = os.path.join(work, f"{job}-{mode.replace(' ', '_')}")
                cmd = job_command(job, out)
                start = time.perf_counter()
                proc = subprocess.run([*cmd[:3], *flags, *cmd[3:]], cwd=ROOT, capture_output=True, text=True)
                times[mode] = time.perf_counter() - start
                if proc.returncode != 0:
                    raise SystemExit(f"{job} ({mode}) failed:\n{proc.stderr[-3000:]}")
                with open(os.path.join(out, "summary.json")) as f:
                    summaries[mode] = comparable(json.load(f))
            a, b = MODES
            same = summaries[a] == summaries[b]
            print(
                f"{job:16s} {a} {times[a]:7.2f} s   {b} {times[b]:7.2f} s   "
                f"ratio in-process/multi-process = {times[a] / times[b]:5.2f}x   same summary: {same}",
                flush=True,
            )
            if not same:
                raise SystemExit(f"{job}: summaries differ between modes")


if __name__ == "__main__":
    main()
