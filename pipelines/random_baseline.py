"""The R2R paper's random baseline: random walks from each episode's start, scored with every metric.

    python -m pipelines.random_baseline --runner=DirectRunner \
        --dataset=../shared/data/r2r/R2R_val_unseen.json --steps_from=../shared/data/r2r/R2R_train.json \
        --connectivity_dir=../shared/data/connectivity --num_trajectories=1000000 --seed=0 \
        --output_dir=output/random_val_unseen [--write_episodes]

Both flags take R2R/R4R files or RxR guide files (`rxr_{split}_guide.jsonl.gz`): each RxR instruction is
one episode (instr_id `str(instruction_id)`), and walk lengths come from each distinct training path once
(several RxR instructions share a path).

Writes `summary.json` (mean of every metric over all walks), `dead_letter-00000-of-00001.jsonl`,
`manifest.json`, `_SUCCESS`, and with --write_episodes `episodes-SSSSS-of-NNNNN.parquet`
(instr_id, sample, scan, one column per metric).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.flags import add_shared
from pipelines.verdict import JobError, user_error
from vlnkit.datasets.usable import require_usable_records

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.evaluation.scoring_config import ScoringConfig
    from vlnkit.runs.staging import Staging
    from vlnkit.runs.verdict import Outcome


def declare_flags(parser) -> None:
    add_shared(
        parser,
        "dataset",
        "connectivity_dir",
        "seed",
        "success_distance",
        "keep_repeats",
        "spl_reference",
        "num_shards",
        dataset={"help": "Evaluation dataset: R2R/R4R JSON or JSON Lines, an RxR guide file, or build_r4r Parquet"},
        seed={"help": "Global seed (each episode also uses its instr_id)"},
    )
    parser.add_argument(
        "--steps_from",
        help="Training split of the same dataset (R2R/R4R or RxR guide files): walk lengths are drawn from "
        "its distinct paths' edge counts",
    )
    parser.add_argument("--num_trajectories", type=int, default=1_000_000, help="Total walks, shared by episodes")
    parser.add_argument("--write_episodes", action="store_true", help="Also write one Parquet row per walk")


JOB = Job("random_baseline", __doc__, declare_flags)


def edge_count(record: dict) -> int:
    return len(record["path"]) - 1


def one_per_path(records, name: str):
    """Records -> (path key, (order, edge count)) of each distinct path: the first record (by `_order`) of each."""
    import apache_beam as beam

    from vlnkit.datasets.rxr import path_key

    return (
        records
        | f"{name}PathKeys" >> beam.Map(lambda r: (path_key(r), (r["_order"], edge_count(r))))
        | f"{name}FirstOfPath" >> beam.CombinePerKey(min)
    )


def episode_count(record: dict) -> dict:
    from vlnkit.datasets.rxr import episode_ids

    return {"evaluation_records": 1, "evaluation_episodes": len(episode_ids(record))}


def build(pipeline, out: Staging, dataset_files, steps_files, connectivity_dir, opts, config: ScoringConfig) -> None:
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER, DEAD_LETTER_FILE, WriteDeadLetters
    from transforms.random_walks import RandomBaseline
    from transforms.read import ReadDataset
    from transforms.score.read import TOTALS
    from transforms.tally import tally
    from transforms.write import WriteSummary, WriteTables
    from vlnkit.evaluation.schemas import RANDOM_EPISODE_SCORES
    from vlnkit.evaluation.summary import random_baseline_summary
    from vlnkit.io.schemas import schema_version

    dataset = pipeline | "ReadDataset" >> ReadDataset(dataset_files)
    train = pipeline | "ReadStepsFrom" >> ReadDataset(steps_files)
    pool = one_per_path(train["records"], "Train") | "EdgeCounts" >> beam.Map(lambda kv: kv[1][1])
    walks = dataset["records"] | "RandomBaseline" >> RandomBaseline(
        connectivity_dir,
        pool,
        opts.num_trajectories,
        opts.seed,
        config,
        tables=opts.write_episodes,
    )
    if opts.write_episodes:
        walks["tables"] | "WriteEpisodes" >> WriteTables(out.join("episodes"), RANDOM_EPISODE_SCORES, opts.num_shards)
    dead = (dataset[DEAD_LETTER], train[DEAD_LETTER], walks[DEAD_LETTER]) | "DeadLetters" >> WriteDeadLetters(
        out.join(DEAD_LETTER_FILE)
    )
    step_hist = pool | "StepHistogram" >> beam.Map(lambda n: {f"steps_{n}": 1, "training_paths": 1})
    tallies = (
        walks[TOTALS],
        step_hist,
        dataset["records"] | "TallyEpisodes" >> beam.Map(episode_count),
        one_per_path(dataset["records"], "Evaluation") | "TallyPaths" >> tally("evaluation_paths"),
        dead | "TallyDead" >> tally("dead_letters"),
    )
    static = {
        "job": JOB.name,
        "schema_version": schema_version(RANDOM_EPISODE_SCORES),
        "options": {**config.to_dict(), "seed": opts.seed, "num_trajectories": opts.num_trajectories},
        "dataset": dataset_files,
        "steps_from": steps_files,
    }
    _ = tallies | "Summary" >> WriteSummary(out.join("summary.json"), lambda t: random_baseline_summary(static, t))


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table, print_outputs
    from vlnkit.evaluation.common import METRICS
    from vlnkit.evaluation.leaderboard import metric_rows

    output_dir = ctx.output_dir
    rows = [("random walks scored", summary["count"]), *metric_rows({m: summary["metrics"].get(m) for m in METRICS})]
    rows += [
        ("evaluation episodes (instructions)", summary["evaluation_episodes"]),
        ("evaluation paths", summary["evaluation_paths"]),
        ("training paths (step counts)", summary["training_paths"]),
        ("dead-lettered records", summary["dead_letters"]),
    ]
    print(format_table(rows, f"Random baseline (seed={summary['options']['seed']})"))
    print_outputs(output_dir, summary["dead_letters"])


def outcome(summary: dict) -> Outcome:
    from vlnkit.runs.verdict import Outcome

    return Outcome(int(summary.get("evaluation_records", 0)), int(summary.get("dead_letters", 0)))


def run(ctx: Run) -> dict:
    from vlnkit.evaluation.scoring_config import scoring_config

    opts = ctx.args
    if opts.num_trajectories < 0:
        raise JobError(f"--num_trajectories must be >= 0, got {opts.num_trajectories}")
    with user_error():
        config = scoring_config(opts)
    data_files = ctx.inputs("dataset", opts.dataset)
    steps_files = ctx.inputs("steps_from", opts.steps_from)
    with user_error():
        require_usable_records("--steps_from", steps_files)
    ctx.graphs(opts.connectivity_dir)
    return ctx.execute(
        lambda p, out: build(p, out, data_files, steps_files, opts.connectivity_dir, opts, config),
        ["episodes"],
        outcome=outcome,
        declared=lambda summary: {"episodes": summary["count"]} if opts.write_episodes else {},
    )


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
