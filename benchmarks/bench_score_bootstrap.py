"""What the bootstrap costs the score job: two agents, N predictions in all, --bootstrap=0 against 1000.

The two agents are random walkers (`benchmarks.make_scale_data` with seeds 0 and 1, N/2 episodes each,
on the same dataset), scored together in one job run, in interleaved rounds (default 1; the median
round is reported). Each run's wall time and peak RSS are measured as in every benchmark
(`benchmarks.measure`); the two runs' plain metrics are checked to be equal, and the bootstrap
run's summary to hold intervals and the agents' comparison.

    python -m benchmarks.bench_score_bootstrap /tmp/scale [--n 1000000] [--replicates 1000] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os

from benchmarks.bench_score_scale import ROOT, job_cmd
from benchmarks.make_scale_data import make
from benchmarks.measure import interleaved_rounds


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="where the generated inputs and outputs go (inputs are reused)")
    parser.add_argument("--n", type=int, default=1_000_000, help="predictions in all (half per agent)")
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds; medians are reported")
    args = parser.parse_args(argv)
    data = os.path.abspath(args.data)
    half = args.n // 2
    folder = os.path.join(args.folder, f"n{half}")
    first, dataset = make(folder, half, data, seed=0)
    second, _ = make(os.path.join(folder, "second"), half, data, seed=1)  # same dataset, other walks
    preds = [f"--predictions=first={first}", f"--predictions=second={second}"]
    out = os.path.join(folder, "out_bootstrap")
    base, boot = f"{out}_0", f"{out}_{args.replicates}"
    commands = {
        "--bootstrap=0": job_cmd(preds[0][len("--predictions=") :], dataset, data, base, preds[1], "--bootstrap=0"),
        f"--bootstrap={args.replicates}": job_cmd(
            preds[0][len("--predictions=") :], dataset, data, boot, preds[1], f"--bootstrap={args.replicates}"
        ),
    }
    table = interleaved_rounds(commands, args.rounds, lambda runs: check(base, boot), baseline="--bootstrap=0")
    print(f"\nbootstrap / plain time: {table[f'--bootstrap={args.replicates}']['ratio']:.2f}x")
    return table


def check(base: str, boot: str) -> None:
    """Same plain metrics with and without the bootstrap; intervals and one comparison per metric with it."""
    plain = json.load(open(os.path.join(base, "summary.json")))
    with_ci = json.load(open(os.path.join(boot, "summary.json")))
    assert plain["agents"] == with_ci["agents"]
    assert all(row["sr_ci"] is not None for row in with_ci["leaderboard"])
    assert {(r["a"], r["b"]) for r in with_ci["comparisons"]} == {("first", "second")}


if __name__ == "__main__":
    main()
