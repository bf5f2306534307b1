"""The score job at scale against the plain script, in one run: wall time, peak RSS and their ratios.

Three commands on the same files (made by `benchmarks.make_scale_data`, reused when present), run in
interleaved rounds (default 3; the median round is reported, since the machine drifts between runs):

1. `python -m pipelines.score --runner=DirectRunner` (in-process DirectRunner);
2. the same with `--direct_running_mode=multi_processing --direct_num_workers=2`;
3. `python -m benchmarks.plain_score` (orjson per line, a dict of references, score_batch per scan).

Each runs as a subprocess of a fresh measuring process, which reports its wall time and
`resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`: the peak RSS of the largest process in that run's
tree (for the multi-process run, the largest of the job and its workers). The job's summary means
are checked against the plain script's.

    python -m benchmarks.bench_score_scale /tmp/scale [--n 1000000] [--rounds 3] [--data ../shared/data] [--skip_multi]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from benchmarks.make_scale_data import make
from benchmarks.measure import interleaved_rounds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def job_cmd(preds: str, dataset: str, data: str, out: str, *extra: str) -> list[str]:
    """The score job's command: scoring only (`--bootstrap=0`, what the plain script does too) unless
    `extra` sets --bootstrap (benchmarks.bench_score_bootstrap measures the bootstrap's cost)."""
    if not any(flag.startswith("--bootstrap=") for flag in extra):
        extra = ("--bootstrap=0", *extra)
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
    parser.add_argument("folder", help="where the generated inputs and outputs go (inputs are reused)")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--skip_multi", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    args = parser.parse_args(argv)
    data = os.path.abspath(args.data)
    folder = os.path.join(args.folder, f"n{args.n}")
    preds, dataset = make(folder, args.n, data)
    print(
        f"inputs: {preds} ({os.path.getsize(preds) / 1e6:.0f} MB), {dataset} ({os.path.getsize(dataset) / 1e6:.0f} MB)"
    )
    out = os.path.join(folder, "out")
    commands = {
        "plain script": [sys.executable, "-m", "benchmarks.plain_score", preds, dataset, f"{data}/connectivity"],
        "score job, in-process": job_cmd(preds, dataset, data, out),
    }
    if not args.skip_multi:
        commands["score job, 2 processes"] = job_cmd(
            preds, dataset, data, out + "_mp", "--direct_running_mode=multi_processing", "--direct_num_workers=2"
        )
    return interleaved_rounds(commands, args.rounds, lambda runs: check(runs, out, args.n, not args.skip_multi))


def check(runs: dict, out: str, n: int, multi: bool) -> None:
    """The job's means equal the plain script's (to 1e-6), and the two job modes' bit for bit."""
    summary = json.load(open(os.path.join(out, "summary.json")))
    if multi:
        assert json.load(open(os.path.join(out + "_mp", "summary.json")))["metrics"] == summary["metrics"]
    means = eval(runs["plain script"]["stdout"].strip().splitlines()[-1])  # noqa: S307 -- our own script's dict
    assert summary["count"] == means["count"] == n, (summary["count"], means["count"])
    for m, v in means.items():
        if m != "count":
            assert abs(summary["metrics"][m] - v) < 1e-6, (m, summary["metrics"][m], v)


if __name__ == "__main__":
    main()
