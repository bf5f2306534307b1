"""Score agent trajectories against reference paths with every standard path metric.

    python -m pipelines.score --runner=DirectRunner --predictions=preds.json \
        --dataset=../shared/data/r2r/R2R_val_unseen.json --connectivity_dir=../shared/data/connectivity \
        --output_dir=output/score [--success_distance=3.0] [--keep_repeats] [--spl_reference=shortest|path]

Writes `episodes-SSSSS-of-NNNNN.parquet` (instr_id, scan, one column per metric, non_adjacent_steps),
`dead_letter-00000-of-00001.jsonl`, `missing_predictions-00000-of-00001.txt`, `summary.json`,
`manifest.json` and `_SUCCESS` into --output_dir, and prints a summary table.
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
from transforms.scoring import (
    MISSING,
    TOTALS,
    MatchPredictions,
    ReadDataset,
    ReadPredictions,
    ScoreByScan,
    ScoringConfig,
    WriteLines,
    WriteTables,
    reference_episodes,
)
from transforms.tally import tally
from transforms.write import WriteSummary
from vlnkit.evaluation.metrics import METRICS, SPL_REFERENCES, means
from vlnkit.io import fileio
from vlnkit.io.schemas import EPISODE_SCORES, schema_version

JOB = "score"
DEFAULT_OUTPUT_DIR = default_output_dir(JOB)
MISSING_FILE = "missing_predictions-00000-of-00001.txt"
RATES = ("sr", "osr", "spl", "sed", "cls", "ndtw", "sdtw")


class ScoreOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--predictions",
            help="Prediction file(s): JSON list or JSON Lines of {instr_id, trajectory}, or Parquet with "
            "instr_id and path; a path, glob or comma-separated list (local or gs://...)",
        )
        parser.add_argument(
            "--dataset", help="Reference dataset(s): R2R/R4R JSON or JSON Lines, or build_r4r paths-*.parquet"
        )
        parser.add_argument("--connectivity_dir", help="Folder of <scan>_connectivity.json files")
        parser.add_argument("--output_dir", help=f"Folder for shards, summary, manifest (default {DEFAULT_OUTPUT_DIR})")
        parser.add_argument(
            "--success_distance", type=float, default=3.0, help="d_th: success threshold and CLS/nDTW scale (m)"
        )
        parser.add_argument(
            "--keep_repeats",
            action="store_true",
            default=False,
            help="Score trajectories as given (HAMT/DUET); default: collapse consecutive repeated viewpoints",
        )
        parser.add_argument(
            "--spl_reference",
            choices=SPL_REFERENCES,
            default="shortest",
            help="SPL reference length: shortest = d(q_1, r_last) (default); path = the reference path's length",
        )
        parser.add_argument("--num_shards", type=int, default=0, help="Parquet shards (0: let the runner decide)")


def build(pipeline, prediction_files, dataset_files, connectivity_dir, opts, config: ScoringConfig) -> None:
    out = opts.output_dir
    preds = pipeline | "ReadPredictions" >> ReadPredictions(prediction_files)
    dataset = pipeline | "ReadDataset" >> ReadDataset(dataset_files)
    references = dataset["records"] | "Episodes" >> beam.FlatMap(reference_episodes)
    match = {"predictions": preds["predictions"], "references": references} | "Match" >> MatchPredictions(
        connectivity_dir
    )
    scored = match["matched"] | "Score" >> ScoreByScan(connectivity_dir, config)
    scored["tables"] | "WriteEpisodes" >> WriteTables(fileio.join(out, "episodes"), EPISODE_SCORES, opts.num_shards)
    match[MISSING] | "WriteMissing" >> WriteLines(fileio.join(out, MISSING_FILE))
    dead = (preds[DEAD_LETTER], dataset[DEAD_LETTER], match[DEAD_LETTER]) | "DeadLetters" >> WriteDeadLetters(
        fileio.join(out, DEAD_LETTER_FILE)
    )
    tallies = (
        scored[TOTALS],
        preds["predictions"] | "TallyPredictions" >> tally("predictions_read"),
        references | "TallyReferences" >> tally("reference_episodes"),
        match[MISSING] | "TallyMissing" >> tally("missing_predictions"),
        dead | "TallyDead" >> tally("dead_letters"),
    )
    static = {
        "job": JOB,
        "schema_version": schema_version(EPISODE_SCORES),
        "options": config.to_dict(),
        "predictions": prediction_files,
        "dataset": dataset_files,
    }
    _ = tallies | "Summary" >> WriteSummary(fileio.join(out, "summary.json"), lambda t: finish_summary(static, t))


def finish_summary(static: dict, totals: dict) -> dict:
    mean, nulls = means(totals)
    return {
        **static,
        "count": int(totals.get("count", 0)),
        "metrics": mean,
        "null_counts": nulls,
        "predictions_read": int(totals.get("predictions_read", 0)),
        "reference_episodes": int(totals.get("reference_episodes", 0)),
        "missing_predictions": int(totals.get("missing_predictions", 0)),
        "dead_letters": int(totals.get("dead_letters", 0)),
        "non_adjacent_steps": int(totals.get("non_adjacent_steps", 0)),
        "trajectories_with_jumps": int(totals.get("trajectories_with_jumps", 0)),
        "repeats_collapsed": int(totals.get("repeats_collapsed", 0)),
    }


def summary_rows(summary: dict) -> list[tuple[str, object]]:
    """Metric rows of a summary table: rates as percentages, distances in metres."""
    rows = []
    for m in METRICS:
        v = summary["metrics"].get(m)
        if v is None:
            rows.append((m.upper(), "n/a"))
        elif m in RATES:
            rows.append((f"{m.upper()} (%)", round(100 * v, 2)))
        else:
            rows.append((f"{m.upper()} (m)", v))
    return rows


def print_summary(summary: dict, output_dir: str) -> None:
    o = summary["options"]
    rows = [("episodes scored", summary["count"]), *summary_rows(summary)]
    rows += [
        ("predictions read", summary["predictions_read"]),
        ("reference episodes", summary["reference_episodes"]),
        ("missing predictions", summary["missing_predictions"]),
        ("dead-lettered records", summary["dead_letters"]),
        ("non-adjacent steps (jumps)", summary["non_adjacent_steps"]),
        ("repeats collapsed", summary["repeats_collapsed"]),
    ]
    title = (
        f"Scores (d_th={o['success_distance']} m, keep_repeats={o['keep_repeats']}, spl_reference={o['spl_reference']})"
    )
    print(format_table(rows, title))
    print_outputs(output_dir, summary["dead_letters"])
    if summary["missing_predictions"]:
        print(f"Reference episodes without a prediction: see {output_dir}/{MISSING_FILE}")


def scoring_config(opts) -> ScoringConfig:
    """The scoring conventions from the flags shared by score and random_baseline."""
    try:
        return ScoringConfig(opts.success_distance, opts.keep_repeats, opts.spl_reference)
    except ValueError as exc:
        raise JobError(str(exc)) from None


@main_wrapper
def main(argv=None) -> dict:
    options, opts = parse_options(ScoreOptions, argv)
    require_flags(opts, "predictions", "dataset", "connectivity_dir")
    config = scoring_config(opts)
    opts.output_dir = opts.output_dir or DEFAULT_OUTPUT_DIR
    pred_inputs = require_inputs("--predictions", opts.predictions)
    data_inputs = require_inputs("--dataset", opts.dataset)
    graphs = require_graphs(opts.connectivity_dir)
    pred_files, data_files = [p for p, _ in pred_inputs], [p for p, _ in data_inputs]
    summary = run_job(
        JOB,
        options,
        opts.output_dir,
        ["episodes", "dead_letter", "missing_predictions"],
        pred_inputs + data_inputs + graphs,
        lambda p: build(p, pred_files, data_files, opts.connectivity_dir, opts, config),
        job_options=opts,
    )
    if summary.get("skipped"):
        return summary
    print_summary(summary, opts.output_dir)
    return summary


if __name__ == "__main__":
    main()
