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

from pipelines.job import Job, JobError, Outcome, Run, format_table, print_outputs
from pipelines.options import add_shared
from pipelines.score_tables import summary_rows
from transforms.deadletter import DEAD_LETTER, DEAD_LETTER_FILE, WriteDeadLetters
from transforms.scoring import (
    MISSING,
    TOTALS,
    MatchPredictions,
    ReadDataset,
    ReadPredictions,
    ScoreByScan,
    WriteLines,
    WriteTables,
    reference_episodes,
)
from transforms.tally import tally
from transforms.write import WriteSummary
from vlnkit.evaluation.metrics import means
from vlnkit.evaluation.scoring_config import ScoringConfig, scoring_config
from vlnkit.io import fileio
from vlnkit.io.schemas import EPISODE_SCORES, schema_version

MISSING_FILE = "missing_predictions-00000-of-00001.txt"


def declare_flags(parser) -> None:
    parser.add_argument(
        "--predictions",
        help="Prediction file(s): JSON list or JSON Lines of {instr_id, trajectory}, or Parquet with "
        "instr_id and path; a path, glob or comma-separated list (local or gs://)",
    )
    add_shared(
        parser,
        "dataset",
        "connectivity_dir",
        "success_distance",
        "keep_repeats",
        "spl_reference",
        "num_shards",
        dataset={"help": "Reference dataset(s): R2R/R4R JSON or JSON Lines, or build_r4r paths-*.parquet"},
    )


JOB = Job("score", __doc__, declare_flags)


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
        "job": JOB.name,
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


def print_summary(summary: dict, ctx: Run) -> None:
    output_dir = ctx.output_dir
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


def outcome(summary: dict) -> Outcome:
    """Scoring reads predictions: the run counts when enough of them could be scored."""
    return Outcome(int(summary.get("predictions_read", 0)), int(summary.get("dead_letters", 0)))


def run(ctx: Run) -> dict:
    opts = ctx.args
    try:
        config = scoring_config(opts)
    except ValueError as exc:
        raise JobError(str(exc)) from None
    pred_files = ctx.inputs("predictions", opts.predictions)
    data_files = ctx.inputs("dataset", opts.dataset)
    ctx.graphs(opts.connectivity_dir)
    return ctx.execute(
        lambda p: build(p, pred_files, data_files, opts.connectivity_dir, opts, config),
        ["episodes", "missing_predictions"],
        outcome=outcome,
    )


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    main()
