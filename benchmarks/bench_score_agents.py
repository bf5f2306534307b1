"""Many agents in one score run (every checkpoint of a training run) against the plain script, in one run.

A score job with A agents of N predictions each (random walks made by `benchmarks.make_scale_data`
with seeds 0..A-1 against the same dataset, so each agent's trajectories differ), against
`benchmarks.plain_score` given the A files (references and graphs loaded once, then each file read
and scored in turn: what a one-off script would do). Interleaved rounds, median ratios and peak RSS
as in `bench_score_scale`; each agent's summary means are checked against the plain script's.

    python -m benchmarks.bench_score_agents /tmp/agents [--agents 50] [--n 20000] [--rounds 3] [--skip_multi]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys

from benchmarks.bench_score_scale import job_cmd
from benchmarks.make_scale_data import make
from benchmarks.measure import interleaved_rounds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="where the generated inputs and outputs go (inputs are reused)")
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--n", type=int, default=20_000, help="predictions per agent")
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--skip_multi", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    args = parser.parse_args(argv)
    data = os.path.abspath(args.data)
    files, dataset = [], None
    for seed in range(args.agents):
        preds, dataset = make(os.path.join(args.folder, f"n{args.n}", f"agent_{seed:03d}"), args.n, data, seed)
        files.append(preds)
    total = sum(os.path.getsize(f) for f in files)
    print(f"inputs: {args.agents} agents x {args.n} predictions ({total / 1e6:.0f} MB), dataset {dataset}")
    out = os.path.join(args.folder, f"n{args.n}", "out")
    # Each file is its own agent, named by its folder (agent_000, ...): files named alike by their stem
    # ("predictions") would name one agent twice, which the job refuses.
    named = [f"{agent_name(f)}={f}" for f in files]
    pattern, agent_flags = named[0], [f"--predictions={n}" for n in named[1:]]
    commands = {
        "plain script": [
            sys.executable,
            "-m",
            "benchmarks.plain_score",
            ",".join(files),
            dataset,
            f"{data}/connectivity",
        ],
        "score job, in-process": job_cmd(pattern, dataset, data, out, *agent_flags),
    }
    if not args.skip_multi:
        commands["score job, 2 processes"] = job_cmd(
            pattern,
            dataset,
            data,
            out + "_mp",
            *agent_flags,
            "--direct_running_mode=multi_processing",
            "--direct_num_workers=2",
        )
    return interleaved_rounds(commands, args.rounds, lambda runs: check(runs, out, files, not args.skip_multi))


def agent_name(path: str) -> str:
    """The agent a prediction file of this benchmark stands for: its folder's name."""
    return os.path.basename(os.path.dirname(path))


def check(runs: dict, out: str, files: list[str], multi: bool) -> None:
    """Each agent's means equal the plain script's (to 1e-6), and the two job modes' bit for bit."""
    summary = json.load(open(os.path.join(out, "summary.json")))
    if multi:
        other = json.load(open(os.path.join(out + "_mp", "summary.json")))
        assert {a: b["metrics"] for a, b in other["agents"].items()} == {
            a: b["metrics"] for a, b in summary["agents"].items()
        }
    plain = ast.literal_eval(runs["plain script"]["stdout"].strip().splitlines()[-1])
    assert sorted(summary["agents"]) == sorted(map(agent_name, plain)) == sorted(map(agent_name, files))
    for path, means in plain.items():
        block = summary["agents"][agent_name(path)]
        assert block["count"] == means["count"], (path, block["count"], means["count"])
        for m, v in means.items():
            if m != "count":
                assert abs(block["metrics"][m] - v) < 1e-6, (path, m, block["metrics"][m], v)


if __name__ == "__main__":
    main()
