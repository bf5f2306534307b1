"""The published random baseline: random walks from each episode's start, scored with every metric.

    python -m pipelines.random_baseline --runner=DirectRunner \
        --dataset=../shared/data/r2r/R2R_val_unseen.json --steps_from=../shared/data/r2r/R2R_train.json \
        --connectivity_dir=../shared/data/connectivity --num_trajectories=1000000 --seed=0 \
        --output_dir=output/random_val_unseen [--write_episodes]

Writes `summary.json` (mean of every metric over all walks), `dead_letter-00000-of-00001.jsonl`,
`manifest.json`, `_SUCCESS`, and with --write_episodes `episodes-SSSSS-of-NNNNN.parquet`
(instr_id, sample, scan, one column per metric).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.common import (
    JobError,
    default_output_dir,
    format_table,
    main_wrapper,
    parse_options,
    print_outputs,
    require_flags,
    require_graphs,
    require_inputs,
    run_job,
)
from transforms.deadletter import DEAD_LETTER, DEAD_LETTER_FILE, WriteDeadLetters
from transforms.random_walks import RandomBaseline
from transforms.score_read import TOTALS
from transforms.score_records import ReadDataset
from transforms.score_write import WriteTables
from transforms.tally import tally
from transforms.write import WriteSummary
from vlnkit.evaluation.metrics import METRICS, SPL_REFERENCES, means
from vlnkit.evaluation.scoring_config import ScoringConfig, metric_rows, scoring_config
from vlnkit.io import fileio
from vlnkit.io.schemas import RANDOM_EPISODE_SCORES, schema_version

JOB = "random_baseline"
DEFAULT_OUTPUT_DIR = default_output_dir(JOB)


class RandomBaselineOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--dataset", help="Evaluation dataset: R2R/R4R JSON or JSON Lines, or build_r4r Parquet")
        parser.add_argument(
            "--steps_from",
            help="Training split of the same dataset: walk lengths are drawn from its paths' edge counts",
        )
        parser.add_argument("--connectivity_dir", help="Folder of <scan>_connectivity.json files")
        parser.add_argument("--output_dir", help=f"Folder for summary, manifest, shards (default {DEFAULT_OUTPUT_DIR})")
        parser.add_argument("--num_trajectories", type=int, default=1_000_000, help="Total walks, shared by episodes")
        parser.add_argument("--seed", type=int, default=0, help="Global seed (each episode also uses its instr_id)")
        parser.add_argument("--success_distance", type=float, default=3.0, help="d_th (m)")
        parser.add_argument(
            "--keep_repeats",
            action="store_true",
            default=False,
            help="Score walks as generated (no effect: walks never repeat in place)",
        )
        parser.add_argument("--spl_reference", choices=SPL_REFERENCES, default="shortest", help="SPL reference length")
        parser.add_argument(
            "--write_episodes", action="store_true", default=False, help="Also write one Parquet row per walk"
        )
        parser.add_argument("--num_shards", type=int, default=0, help="Parquet shards (0: let the runner decide)")


def edge_count(record: dict) -> int:
    return len(record["path"]) - 1


def build(pipeline, dataset_files, steps_files, connectivity_dir, opts, config: ScoringConfig) -> None:
    out = opts.output_dir
    dataset = pipeline | "ReadDataset" >> ReadDataset(dataset_files)
    train = pipeline | "ReadStepsFrom" >> ReadDataset(steps_files)
    pool = train["records"] | "EdgeCounts" >> beam.Map(edge_count)
    walks = dataset["records"] | "RandomBaseline" >> RandomBaseline(
        connectivity_dir,
        pool,
        opts.num_trajectories,
        opts.seed,
        config,
        tables=opts.write_episodes,
    )
    if opts.write_episodes:
        walks["tables"] | "WriteEpisodes" >> WriteTables(
            fileio.join(out, "episodes"), RANDOM_EPISODE_SCORES, opts.num_shards
        )
    dead = (dataset[DEAD_LETTER], train[DEAD_LETTER], walks[DEAD_LETTER]) | "DeadLetters" >> WriteDeadLetters(
        fileio.join(out, DEAD_LETTER_FILE)
    )
    step_hist = pool | "StepHistogram" >> beam.Map(lambda n: {f"steps_{n}": 1, "training_paths": 1})
    tallies = (
        walks[TOTALS],
        step_hist,
        dataset["records"] | "TallyPaths" >> tally("evaluation_paths"),
        dead | "TallyDead" >> tally("dead_letters"),
    )
    static = {
        "job": JOB,
        "schema_version": schema_version(RANDOM_EPISODE_SCORES),
        "options": {**config.to_dict(), "seed": opts.seed, "num_trajectories": opts.num_trajectories},
        "dataset": dataset_files,
        "steps_from": steps_files,
    }
    _ = tallies | "Summary" >> WriteSummary(fileio.join(out, "summary.json"), lambda t: finish_summary(static, t))


def finish_summary(static: dict, totals: dict) -> dict:
    mean, nulls = means(totals)
    paths = int(totals.get("training_paths", 0))
    steps = {int(k[6:]): v for k, v in totals.items() if k.startswith("steps_")}
    return {
        **static,
        "count": int(totals.get("count", 0)),
        "metrics": mean,
        "null_counts": nulls,
        "evaluation_paths": int(totals.get("evaluation_paths", 0)),
        "training_paths": paths,
        "steps_distribution": {str(k): steps[k] / paths for k in sorted(steps)},
        "dead_letters": int(totals.get("dead_letters", 0)),
    }


def print_summary(summary: dict, output_dir: str) -> None:
    rows = [("random walks scored", summary["count"]), *metric_rows({m: summary["metrics"].get(m) for m in METRICS})]
    rows += [
        ("evaluation paths", summary["evaluation_paths"]),
        ("training paths (step counts)", summary["training_paths"]),
        ("dead-lettered records", summary["dead_letters"]),
    ]
    print(format_table(rows, f"Random baseline (seed={summary['options']['seed']})"))
    print_outputs(output_dir, summary["dead_letters"])


@main_wrapper
def main(argv=None) -> dict:
    options, opts = parse_options(RandomBaselineOptions, argv)
    require_flags(opts, "dataset", "steps_from", "connectivity_dir")
    if opts.num_trajectories < 0:
        raise JobError(f"--num_trajectories must be >= 0, got {opts.num_trajectories}")
    if opts.seed < 0:
        raise JobError(f"--seed must be >= 0, got {opts.seed}")
    config = scoring_config(opts)
    opts.output_dir = opts.output_dir or DEFAULT_OUTPUT_DIR
    data_inputs = require_inputs("--dataset", opts.dataset)
    steps_inputs = require_inputs("--steps_from", opts.steps_from)
    graphs = require_graphs(opts.connectivity_dir)
    data_files, steps_files = [p for p, _ in data_inputs], [p for p, _ in steps_inputs]
    summary = run_job(
        JOB,
        options,
        opts.output_dir,
        ["episodes", "dead_letter"],
        data_inputs + steps_inputs + graphs,
        lambda p: build(p, data_files, steps_files, opts.connectivity_dir, opts, config),
        job_options=opts,
    )
    if summary.get("skipped"):
        return summary
    print_summary(summary, opts.output_dir)
    return summary


if __name__ == "__main__":
    main()
