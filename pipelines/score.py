"""Score agent trajectories against reference paths with every standard path metric, for one or many agents.

    python -m pipelines.score --runner=DirectRunner --predictions=preds.json \
        --dataset=../shared/data/r2r/R2R_val_unseen.json --connectivity_dir=../shared/data/connectivity \
        --output_dir=output/score [--success_distance=3.0] [--keep_repeats] [--spl_reference=shortest|path] \
        [--success_rule=le|lt]

    # several agents in one run (each scored on its own; a leaderboard compares them)
    python -m pipelines.score ... --predictions=dagger=runs/dagger/*.json --predictions=rl=runs/rl/*.json

Writes `episodes-SSSSS-of-NNNNN.parquet` (agent, instr_id, scan, one column per metric,
non_adjacent_steps, path), `dead_letter-00000-of-00001.jsonl`, `missing_predictions-00000-of-00001.txt`
(episodes no prediction was given for), `without_usable_prediction-00000-of-00001.txt` (episodes not
scored: missing, or their prediction was dead-lettered), `summary.json` (per agent under "agents"; with
one agent also at the top level), `leaderboard.csv`, `leaderboard.md`, `manifest.json` and `_SUCCESS`
into --output_dir, and prints a summary table (and, for RxR, one per language). With --bootstrap (default
1000 replicates), the summary and leaderboards also hold Poisson bootstrap intervals, paired comparisons with
Holm's correction, tie marks and breakdowns by scan, reference path length and language (docs/jobs/score.md).
With several agents the two episode lists hold "<agent><TAB><instr_id>" lines. This module only declares
the flags and wires the transforms; the summary and the leaderboard are built by
`vlnkit.evaluation.score_summary` and `vlnkit.evaluation.leaderboard`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.options import SHARED, JobError, add_shared, agent_inputs, one_worker_process, user_error
from vlnkit.evaluation.common import DEFAULT_SUCCESS_RULE, SUCCESS_RULES
from vlnkit.evaluation.leaderboard import LEADERBOARD_FILES
from vlnkit.io import fileio

if TYPE_CHECKING:
    from pipelines.job import Outcome, Run
    from vlnkit.evaluation.scoring_config import ScoringConfig


MISSING_FILE = "missing_predictions-00000-of-00001.txt"
UNUSABLE_FILE = "without_usable_prediction-00000-of-00001.txt"


def declare_flags(parser) -> None:
    add_shared(
        parser,
        "predictions",
        predictions={
            "help": "Trajectories: JSON list or JSON Lines of {instr_id, trajectory} or, for RxR, {instruction_id, "
            "path} (RxR follower files too) (.gz/.bz2 too), or Parquet with instr_id and path. "
            + SHARED["predictions"][1]["help"]
        },
    )
    add_shared(
        parser,
        "dataset",
        "connectivity_dir",
        "success_distance",
        "keep_repeats",
        "spl_reference",
        "num_shards",
        "seed",
        dataset={
            "help": "Reference dataset(s): R2R/R4R JSON or JSON Lines, RxR guide JSON Lines (rxr_*_guide.jsonl.gz; "
            "the format is told by content), or build_r4r paths-*.parquet"
        },
    )
    parser.add_argument(
        "--success_rule",
        choices=SUCCESS_RULES,
        default=DEFAULT_SUCCESS_RULE,
        help="Success at exactly d_th: le = NE <= d_th (the R4R/nDTW papers' code), lt = NE < d_th (R2R eval.py, "
        "HAMT, DUET, BabyWalk, VLN-CE); only exact ties differ",
    )
    add_shared(parser, "bootstrap", "confidence", "bootstrap_unit", "baseline")


JOB = Job("score", __doc__, declare_flags)


def published_agents(agents: dict[str, list[str]]) -> dict[str, list[str]]:
    """The agents whose every prediction file is an RxR follower file (by content: lines with
    `instruction_id` and `metrics`), e.g. `--predictions=human=rxr_val_unseen_follower.jsonl.gz`."""
    from vlnkit.datasets.rxr import RXR_FOLLOWER_FORMAT, file_format

    found = {}
    for agent, files in agents.items():
        paths = [f[0] if isinstance(f, tuple) else f for f in files]
        try:
            if paths and all(file_format(p) == RXR_FOLLOWER_FORMAT for p in paths):
                found[agent] = paths
        except OSError:  # unreadable: the read step reports it
            continue
    return found


def build(
    pipeline,
    agents,
    dataset_files: list[str],
    connectivity_dir: str,
    opts,
    config: ScoringConfig,
    buckets: int | None = None,
    split_files: bool = True,
    published: dict[str, list[str]] | None = None,
) -> None:
    """Wire the score job: read batches, join by bucket, score per scan, write shards and summary.

    `agents`: {agent name: [prediction files]} (a plain list of files scores each file as its own
    agent); `opts` needs `output_dir` and `num_shards`; `buckets` defaults to `bucket_count`.
    `split_files=False` reads every file whole instead of in byte ranges for parallel workers (the
    planning pass costs a read of each file, which only pays off with several worker processes).
    `published` names the agents whose files are RxR follower files: their scores are compared with
    the metrics RxR published (`human_metrics_comparison.json`, see `published_agents`).
    """
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER
    from transforms.run_summary import finish_run
    from transforms.score_batches import MISSING, UNUSABLE, ScoreBuckets
    from transforms.score_published import COMPARISON_FILE, ComparePublished
    from transforms.score_read import TOTALS, ReadScoringInputs
    from transforms.score_write import WriteLines
    from transforms.write import WriteTables, write_json
    from vlnkit.datasets.buckets import bucket_count
    from vlnkit.datasets.json_chunks import RANGE_BYTES
    from vlnkit.evaluation.leaderboard import write_leaderboard
    from vlnkit.evaluation.score_summary import finish_summary
    from vlnkit.io.schemas import EPISODE_SCORES, schema_version
    from vlnkit.reports.published_metrics import finish_differences

    if not isinstance(agents, dict):
        agents = {path: [path] for path in agents}
    agents = {name: list(files) for name, files in agents.items()}
    out = opts.output_dir
    if buckets is None:
        buckets = bucket_count(sorted({f for files in agents.values() for f in files}) + list(dataset_files))
    read = pipeline | "Read" >> ReadScoringInputs(
        list(agents.items()), dataset_files, connectivity_dir, buckets, RANGE_BYTES if split_files else None
    )
    names = list(agents)
    side = {}
    replicates = int(getattr(opts, "bootstrap", 0) or 0)
    hook = None
    if replicates:
        from transforms.score_bootstrap import SliceSums
        from vlnkit.evaluation.common import METRICS
        from vlnkit.evaluation.score_summary import bootstrap_pairs

        pairs = bootstrap_pairs(names, getattr(opts, "baseline", None))
        seed, unit = int(getattr(opts, "seed", 0)), getattr(opts, "bootstrap_unit", "episode")
        hook = SliceSums(METRICS, replicates, seed, unit, pairs)
    scored = read["batches"] | "Score" >> ScoreBuckets(connectivity_dir, agents, dataset_files, config, hook)
    if hook is not None:
        from transforms.score_batches import BOOTSTRAP
        from transforms.score_bootstrap import MergeSums

        side["bootstrap"] = beam.pvalue.AsSingleton(scored[BOOTSTRAP] | "Bootstrap" >> MergeSums())
    scored["tables"] | "WriteEpisodes" >> WriteTables(fileio.join(out, "episodes"), EPISODE_SCORES, opts.num_shards)
    scored[MISSING] | "WriteMissing" >> WriteLines(fileio.join(out, MISSING_FILE))
    scored[UNUSABLE] | "WriteUnusable" >> WriteLines(fileio.join(out, UNUSABLE_FILE))
    dead = (read[DEAD_LETTER], scored[DEAD_LETTER])
    tallies = (scored[TOTALS], read[TOTALS])
    static = {
        "job": JOB.name,
        "schema_version": schema_version(EPISODE_SCORES),
        "options": config.to_dict(),
        "predictions": list(dict.fromkeys(f for files in agents.values() for f in files)),
        "dataset": list(dataset_files),
    }
    bootstrap_options = {
        "bootstrap": replicates,
        "confidence": float(getattr(opts, "confidence", 0.95)),
        "bootstrap_unit": getattr(opts, "bootstrap_unit", "episode"),
        "baseline": getattr(opts, "baseline", None),
        "seed": int(getattr(opts, "seed", 0)),
    }
    if published:
        compared = scored["tables"] | "ComparePublished" >> ComparePublished(published)
        side["compared"] = beam.pvalue.AsSingleton(compared)

    def finish(totals: dict, compared: dict | None = None, bootstrap: dict | None = None) -> dict:
        summary = finish_summary(static, totals, names, bootstrap, bootstrap_options)
        write_leaderboard(out, summary)
        if compared is not None:
            report = {agent: finish_differences(compared.get(agent, {})) for agent in published}
            write_json(fileio.join(out, COMPARISON_FILE), report, indent=True)
        return summary

    _ = finish_run(out, finish, dead, tallies, side)


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.job import format_table, print_outputs
    from vlnkit.evaluation.common import METRICS
    from vlnkit.evaluation.leaderboard import aligned, language_rows, leaderboard_options, leaderboard_text
    from vlnkit.evaluation.scoring_config import metric_rows

    output_dir = ctx.output_dir
    o = summary["options"]
    title = (
        f"Scores (d_th={o['success_distance']} m, success_rule={o.get('success_rule', DEFAULT_SUCCESS_RULE)}, "
        f"keep_repeats={o['keep_repeats']}, spl_reference={o['spl_reference']})"
    )
    agents = summary.get("agents") or {}
    if "count" in summary:
        rows = [("episodes scored", summary["count"]), *metric_rows({m: summary["metrics"].get(m) for m in METRICS})]
        rows += [
            ("predictions read", summary["predictions_read"]),
            ("reference episodes", summary["reference_episodes"]),
            ("missing predictions", summary["missing_predictions"]),
            ("without a usable prediction", summary.get("without_usable_prediction", 0)),
            ("dead-lettered records", summary["dead_letters"]),
            ("non-adjacent steps (jumps)", summary["non_adjacent_steps"]),
            ("repeats collapsed", summary["repeats_collapsed"]),
        ]
        print(format_table(rows, title))
    else:
        rows = [
            ("agents", len(agents)),
            ("reference episodes", summary["reference_episodes"]),
            ("dead-lettered records", summary["dead_letters"]),
        ]
        print(format_table(rows, title))
    if len(agents) > 1:
        print()
        print("Leaderboard (by SPL, then SR)")
        print(leaderboard_text(summary["leaderboard"], leaderboard_options(summary))[1], end="")
    languages = language_rows(summary)
    if languages:
        print()
        print("By language (rates in %)")
        print(aligned(languages))
    print_outputs(output_dir, summary["dead_letters"])
    if any(b["missing_predictions"] for b in agents.values()):
        print(f"Reference episodes without a prediction: see {output_dir}/{MISSING_FILE}")
    if any(b["without_usable_prediction"] for b in agents.values()):
        print(f"Reference episodes without a usable prediction: see {output_dir}/{UNUSABLE_FILE}")


def outcome(summary: dict) -> Outcome:
    """Scoring reads predictions: the run counts when it scored episodes and enough predictions could be
    used, and never when the references cannot be scored at all (e.g. the R2R test split, where success
    would be trivially 100%). A run that scored no episode fails whatever --max_failure_fraction says."""
    from pipelines.job import Outcome

    blocks = summary.get("agents", {}).values()
    read = sum(int(b.get("predictions_read", 0)) for b in blocks)
    scored = sum(int(b.get("count", 0)) for b in blocks)
    dead = int(summary.get("dead_letters", 0))
    reason = summary.get("unscorable") or (
        f"no episode was scored ({read} prediction(s) read, {dead} record(s) dead-lettered)"
        if read and not scored
        else None
    )
    return Outcome(read, dead, reason)


def run(ctx: Run) -> dict:
    from transforms.score_published import COMPARISON_FILE
    from vlnkit.evaluation.scoring_config import scoring_config

    opts = ctx.args
    with user_error():
        config = scoring_config(opts)
    if not opts.predictions:
        raise JobError("--predictions is required")
    agent_files = agent_inputs(ctx, opts.predictions)
    if opts.baseline is not None and opts.baseline not in agent_files:
        raise JobError(f"--baseline={opts.baseline} is not one of the agents: {', '.join(agent_files)}")
    if opts.bootstrap < 0 or not 0.0 < opts.confidence < 1.0:
        raise JobError(f"--bootstrap must be >= 0 and --confidence in (0, 1), got {opts.bootstrap}, {opts.confidence}")
    published = published_agents(agent_files)
    data_files = ctx.inputs("dataset", opts.dataset)
    ctx.graphs(opts.connectivity_dir)
    return ctx.execute(
        lambda p: build(
            p,
            agent_files,
            data_files,
            opts.connectivity_dir,
            opts,
            config,
            split_files=not one_worker_process(ctx.options),
            published=published,
        ),
        ["episodes", "missing_predictions", "without_usable_prediction"],
        extra_outputs=tuple(fileio.join(ctx.output_dir, name) for name in (*LEADERBOARD_FILES, COMPARISON_FILE)),
        outcome=outcome,
        declared=lambda summary: declared_outputs(summary, COMPARISON_FILE if published else None),
    )


def declared_outputs(summary: dict, comparison: str | None) -> dict[str, int | None]:
    """What a score run wrote, from its tallies: one Parquet row per episode scored, one line per
    missing episode and per episode without a usable prediction, one leaderboard row per agent, and
    the comparison with the published follower metrics when there is one."""
    blocks = list(summary.get("agents", {}).values())
    out = {
        "episodes": sum(int(b.get("count", 0)) for b in blocks),
        "missing_predictions": sum(int(b.get("missing_predictions", 0)) for b in blocks),
        "without_usable_prediction": sum(int(b.get("without_usable_prediction", 0)) for b in blocks),
        LEADERBOARD_FILES[0]: len(blocks),
        LEADERBOARD_FILES[1]: None,
    }
    if comparison:
        out[comparison] = None
    return out


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
