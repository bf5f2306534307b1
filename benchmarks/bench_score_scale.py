"""The score job at scale against the plain script, in one run: wall time, peak RSS and their ratios.

Three runs on the same files (made by `benchmarks.make_scale_data`, reused when present):

1. `python -m pipelines.score --runner=DirectRunner` (in-process DirectRunner);
2. the same with `--direct_running_mode=multi_processing --direct_num_workers=2`;
3. `python -m benchmarks.plain_score` (orjson per line, a dict of references, score_batch per scan).

Each runs as a subprocess of a fresh measuring process, which reports its wall time and
`resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`: the peak RSS of the largest process in that run's
tree (for the multi-process run, the largest of the job and its workers). The job's summary means
are checked against the plain script's.

    python -m benchmarks.bench_score_scale /tmp/scale [--n 1000000] [--data ../shared/data] [--skip_multi]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from benchmarks.make_scale_data import make

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(cmd: list[str]) -> dict:
    """Run cmd in a fresh child of this process; wall seconds and peak RSS (MB) of its process tree."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{cmd} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: kilobytes
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(rss_mb, 1), "stdout": proc.stdout[-2000:]}


def measured(cmd: list[str]) -> dict:
    """`measure` in its own process, so RUSAGE_CHILDREN covers only this run."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_score_scale", "--measure", json.dumps(cmd)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def job_cmd(preds: str, dataset: str, data: str, out: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipelines.score",
        "--runner=DirectRunner",
        f"--predictions={preds}",
        f"--dataset={dataset}",
        f"--connectivity_dir={data}/connectivity",
        f"--output_dir={out}",
        *extra,
    ]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--skip_multi", action="store_true")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(json.loads(args.measure))))
        return {}
    data = os.path.abspath(args.data)
    folder = os.path.join(args.folder, f"n{args.n}")
    preds, dataset = make(folder, args.n, data)
    print(
        f"inputs: {preds} ({os.path.getsize(preds) / 1e6:.0f} MB), {dataset} ({os.path.getsize(dataset) / 1e6:.0f} MB)"
    )
    runs = {
        "plain script": measured(
            [sys.executable, "-m", "benchmarks.plain_score", preds, dataset, f"{data}/connectivity"]
        )
    }
    out = os.path.join(folder, "out")
    runs["score job, in-process"] = measured(job_cmd(preds, dataset, data, out))
    summary = json.load(open(os.path.join(out, "summary.json")))
    if not args.skip_multi:
        runs["score job, 2 processes"] = measured(
            job_cmd(
                preds, dataset, data, out + "_mp", "--direct_running_mode=multi_processing", "--direct_num_workers=2"
            )
        )
        multi = json.load(open(os.path.join(out + "_mp", "summary.json")))
        assert multi["metrics"] == summary["metrics"], "multi-process means differ"
    plain = runs["plain script"]
    means = eval(plain["stdout"].strip().splitlines()[-1])  # noqa: S307 -- our own script's printed dict
    assert summary["count"] == means["count"] == args.n, (summary["count"], means["count"])
    for m, v in means.items():
        if m != "count":
            assert abs(summary["metrics"][m] - v) < 1e-6, (m, summary["metrics"][m], v)
    print(f"\n{'run':26} {'wall s':>8} {'x plain':>8} {'peak RSS MB':>12}")
    for name, r in runs.items():
        print(f"{name:26} {r['wall_s']:8.1f} {r['wall_s'] / plain['wall_s']:8.2f} {r['peak_rss_mb']:12.0f}")
    return runs


if __name__ == "__main__":
    main()
