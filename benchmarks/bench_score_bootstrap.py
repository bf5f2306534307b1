"""The score job as a user runs it by default (1,000 bootstrap replicates) against the plain script, in one run.

Three commands on the same files, in interleaved rounds (the median round is reported), each a fresh
process measured as in every benchmark (`benchmarks.measure`):

1. the plain script (`benchmarks.plain_score`: orjson per line, a dict of references, `score_batch` per
   scan; no intervals);
2. the score job with `--bootstrap=0` (scoring only);
3. the score job with the default flags: `--bootstrap=1000` intervals, breakdowns and tie marks.

Besides each run's ratio to the script, it prints what the bootstrap adds, round by round (median): the
bootstrap run's wall time minus the scoring-only run's, as a share of the script's time, and the CPU
seconds the bootstrap adds. The ratio of the bootstrap run is the scoring-only run's ratio plus this
share, so the two say which part of a machine's figure is the bootstrap's.

With `--agents 1` (the default) the files are one random walker's N predictions (`benchmarks.make_scale_data`);
with `--agents 2`, two walkers (seeds 0 and 1, N/2 each) scored in one run and compared. The runs' plain
metrics are checked to be equal, and the bootstrap run's summary to hold intervals.

    python -m benchmarks.bench_score_bootstrap /tmp/scale [--n 1000000] [--agents 1] [--replicates 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from benchmarks.bench_score_scale import ROOT, job_cmd
from benchmarks.make_scale_data import make
from benchmarks.measure import interleaved_rounds


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="where the generated inputs and outputs go (inputs are reused)")
    parser.add_argument("--n", type=int, default=1_000_000, help="predictions in all")
    parser.add_argument("--agents", type=int, choices=(1, 2), default=1)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    args = parser.parse_args(argv)
    data = os.path.abspath(args.data)
    share = args.n // args.agents
    folder = os.path.join(args.folder, f"n{share}")
    first, dataset = make(folder, share, data, seed=0)
    files = {"first": first}
    if args.agents == 2:
        files["second"] = make(os.path.join(folder, "second"), share, data, seed=1)[0]  # same dataset, other walks
    named = [f"{name}={path}" for name, path in files.items()]
    extra = [f"--predictions={p}" for p in named[1:]]
    out = os.path.join(folder, "out_bootstrap")
    base, boot = f"{out}_0", f"{out}_{args.replicates}"
    commands = {
        "plain script": [sys.executable, "-m", "benchmarks.plain_score", ",".join(files.values()), dataset, f"{data}/connectivity"],
        "score job, --bootstrap=0": job_cmd(named[0], dataset, data, base, *extra, "--bootstrap=0"),
        f"score job, --bootstrap={args.replicates}": job_cmd(named[0], dataset, data, boot, *extra, f"--bootstrap={args.replicates}"),
    }  # fmt: skip
    rounds = []

    def checked(runs: dict) -> None:
        check(base, boot, list(files))
        rounds.append(runs)

    table = interleaved_rounds(commands, args.rounds, checked)
    plain, only, full = commands
    boot_ratio = table[full]["wall_s"] / table[only]["wall_s"]
    share = statistics.median((r[full]["wall_s"] - r[only]["wall_s"]) / r[plain]["wall_s"] for r in rounds)
    cpu = statistics.median(r[full]["cpu_s"] - r[only]["cpu_s"] for r in rounds)
    print(f"\nbootstrap run / scoring-only run: {boot_ratio:.2f}x")
    print(f"the bootstrap adds {share:.2f} of the script's time (median round), and {cpu:.1f} s of CPU")
    table["bootstrap"] = {"share": share, "cpu_s": cpu}
    return table


def check(base: str, boot: str, agents: list[str]) -> None:
    """Same plain metrics with and without the bootstrap; intervals (and the agents' comparison) with it."""
    plain = json.load(open(os.path.join(base, "summary.json")))
    with_ci = json.load(open(os.path.join(boot, "summary.json")))
    assert plain["agents"] == with_ci["agents"]
    assert all(row["sr_ci"] is not None for row in with_ci["leaderboard"])
    if len(agents) == 2:
        assert {(r["a"], r["b"]) for r in with_ci["comparisons"]} == {tuple(agents)}


if __name__ == "__main__":
    main()
