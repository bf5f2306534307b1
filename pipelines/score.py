"""Score agent trajectories against reference paths with every standard path metric, for one or many agents.

    python -m pipelines.score --runner=DirectRunner --predictions=preds.json \
        --dataset=../shared/data/r2r/R2R_val_unseen.json --connectivity_dir=../shared/data/connectivity \
        --output_dir=output/score [--success_distance=3.0] [--keep_repeats] [--spl_reference=shortest|path] \
        [--success_rule=le|lt]

    # several agents in one run (each scored on its own; a leaderboard compares them)
    python -m pipelines.score ... --predictions=dagger=runs/dagger/*.json --predictions=rl=runs/rl/*.json

Writes `episodes-SSSSS-of-NNNNN.parquet` (agent, instr_id, scan, one column per metric, non_adjacent_steps, path),
`dead_letter-00000-of-00001.jsonl`, `missing_predictions-00000-of-00001.txt` (episodes no prediction was given for),
`without_usable_prediction-00000-of-00001.txt` (episodes not scored: missing, or their prediction was
dead-lettered), `summary.json` (per agent under "agents"; with one agent also at the top level), `leaderboard.csv`,
`leaderboard.md`, `manifest.json` and `_SUCCESS` into --output_dir, and prints a summary table (and, for RxR, one
per language). With --bootstrap (default 1000 replicates), the summary and leaderboards also hold Poisson bootstrap
intervals, paired comparisons with Holm's correction, tie marks and breakdowns by scan, reference path length and
language (docs/jobs/score.md). With several agents the two episode lists hold "<agent><TAB><instr_id>" lines. This
module only declares the flags and wires the transforms; the summary and the leaderboard are built by
`vlnkit.evaluation.score_summary` and `vlnkit.evaluation.leaderboard`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.flags import SHARED, add_shared
from pipelines.runners import one_worker_process
from pipelines.score_outputs import JOB_NAME, MISSING_FILE, UNUSABLE_FILE, declared_outputs, outcome, write_episodes
from pipelines.verdict import JobError, user_error
from vlnkit.continuous.documents import DESCRIPTIONS
from vlnkit.evaluation.common import DEFAULT_SUCCESS_RULE, SUCCESS_RULES
from vlnkit.io import fileio
from vlnkit.scoring.registry import TASKS

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.comparison.config import BootstrapConfig
    from vlnkit.evaluation.scoring_config import ScoringConfig
    from vlnkit.scoring.task import Task, TaskOptions


def declare_flags(parser) -> None:
    add_shared(
        parser,
        "predictions",
        predictions={
            "help": "Trajectories: JSON list or JSON Lines of {instr_id, trajectory} or, for RxR, {instruction_id, "
            "path} (RxR follower files too) (.gz/.bz2 too), or Parquet with instr_id and path; for a VLN-CE "
            "dataset, agent positions or per-episode simulator results (stats_ep_ckpt_*.json, result.json), "
            "or both for one agent. " + SHARED["predictions"][1]["help"]
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
            "the format is told by content), build_r4r paths-*.parquet, or a VLN-CE episode file (R2R-CE or "
            "RxR-Habitat {split}.json.gz, with its ground truth: --ce_gt)"
        },
    )
    add_shared(parser, "dtw", "fastdtw_rules", "ce_reference", "ce_gt", "goal_distance")
    parser.add_argument(
        "--success_rule",
        choices=SUCCESS_RULES,
        default=DEFAULT_SUCCESS_RULE,
        help="Success at exactly d_th: le = NE <= d_th (the R4R/nDTW papers' code), lt = NE < d_th (R2R eval.py, "
        "HAMT, DUET, BabyWalk, VLN-CE); only exact ties differ",
    )
    add_shared(parser, "bootstrap", "confidence", "bootstrap_unit", "baseline")
    for task in TASKS.values():  # each task's own flags (vlnkit.scoring.registry)
        if task.add_flags is not None:
            task.add_flags(parser)


def warm_up():
    """Load the compiled kernels on a thread while the job imports Beam (`vlnkit.scoring.warm`)."""
    from vlnkit.scoring.warm import warm_up_in_background

    return warm_up_in_background()


JOB = Job(JOB_NAME, __doc__, declare_flags, warm_up)


def build(
    pipeline,
    agents: dict[str, list[str]],
    dataset_files: list[str],
    connectivity_dir: str,
    output_dir: str,
    config: ScoringConfig,
    bootstrap: BootstrapConfig,
    num_shards: int = 0,
    buckets: int | None = None,
    range_bytes: int | None = None,
    followers: dict[str, list[str]] | None = None,
    task: Task | None = None,
    options: TaskOptions | None = None,
) -> None:
    """Wire the score job: read batches by bucket, join and score each bucket, write the episode rows, the
    two episode lists, the dead letters and summary.json (with the leaderboards).

    `agents`: {agent name: [prediction files]}; `buckets` defaults to `bucket_count` of the inputs;
    `range_bytes` cuts plain JSON Lines files into byte ranges of that size for parallel workers (None:
    every file whole; the planning pass costs a read of each file, which pays off only with several
    worker processes);
    `followers` names the agents whose files are RxR follower files (`follower_agents`): their scores
    are compared with the metrics RxR released (`human_metrics_comparison.json`);
    `task` (default R2R's) and its `options` decide the rule, the rows and the readers' forms
    (`vlnkit.scoring.registry`).
    """
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER
    from transforms.run_summary import finish_run
    from transforms.score.followers import CheckFollowerMetrics
    from transforms.score.outputs import MergeFollowerComparisons
    from transforms.score.read import TOTALS, ReadScoringInputs
    from transforms.score.score import FOLLOWERS, ScoreBuckets
    from transforms.write import write_json
    from vlnkit.datasets.buckets import bucket_count
    from vlnkit.evaluation.leaderboard import write_leaderboard
    from vlnkit.evaluation.score_summary import bootstrap_pairs, score_summary
    from vlnkit.io.schemas import schema_version
    from vlnkit.scoring.followers import COMPARISON_FILE, finish_differences
    from vlnkit.scoring.task import R2R_TASK, TaskOptions

    followers = followers or {}
    task = task or R2R_TASK
    options = options or TaskOptions()
    names = list(agents)
    if buckets is None:
        buckets = bucket_count(sorted({f for files in agents.values() for f in files}) + list(dataset_files))
    read = pipeline | "Read" >> ReadScoringInputs(
        list(agents.items()), dataset_files, connectivity_dir, buckets, range_bytes, task, options
    )
    pairs = bootstrap_pairs(names, bootstrap.baseline) if bootstrap.enabled else []
    score = ScoreBuckets(connectivity_dir, agents, dataset_files, config, bootstrap, pairs, followers, task, options)
    scored = read["batches"] | "Score" >> score
    side = write_episodes(scored, output_dir, task.schema, num_shards, bootstrap)
    dead_letters = (read[DEAD_LETTER], scored[DEAD_LETTER])
    if followers:
        side["compared"] = beam.pvalue.AsSingleton(
            scored[FOLLOWERS] | "Followers" >> MergeFollowerComparisons(), default_value={}
        )
        checked = (
            pipeline
            | "FollowerFiles" >> beam.Create(sorted(followers.items()))
            | "FollowerMetrics" >> CheckFollowerMetrics()
        )
        side["follower_lines"] = beam.pvalue.AsDict(checked["counts"])
        dead_letters += (checked[DEAD_LETTER],)
    static = {
        "job": JOB.name,
        "schema_version": schema_version(task.schema),
        "options": {**config.to_dict(), **task.summary_options(options)},
        "predictions": list(dict.fromkeys(f for files in agents.values() for f in files)),
        "dataset": list(dataset_files),
    }
    described = task.describe(options, config.to_dict())
    if described is not None:  # what the leaderboard and the console say of the task
        static["task"] = described

    def finish(
        totals: dict, compared: dict | None = None, follower_lines: dict | None = None, bootstrap_sums=None
    ) -> dict:
        summary = score_summary(static, totals, names, bootstrap_sums, bootstrap.to_dict(), task.metrics, task.counters)
        write_leaderboard(output_dir, summary)
        if compared is not None:
            report = {
                agent: finish_differences(compared.get(agent, {}), *(follower_lines or {}).get(agent, (0, 0)))
                for agent in followers
            }
            write_json(fileio.join(output_dir, COMPARISON_FILE), report, indent=True)
        return summary

    _ = finish_run(output_dir, finish, dead_letters, (scored[TOTALS], read[TOTALS]), side)


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table, print_outputs
    from vlnkit.continuous.results import totals_line
    from vlnkit.continuous.schemas import CE_METRICS
    from vlnkit.evaluation.common import METRICS
    from vlnkit.evaluation.leaderboard import (
        aligned,
        language_rows,
        leaderboard_options,
        leaderboard_text,
        metric_rows,
        own_metrics,
    )

    output_dir = ctx.output_dir
    o = summary["options"]
    title = (
        f"Scores (d_th={o['success_distance']} m, success_rule={o.get('success_rule', DEFAULT_SUCCESS_RULE)}, "
        f"keep_repeats={o['keep_repeats']}, spl_reference={o['spl_reference']})"
    )
    task = summary.get("task") or {}  # a task with its own rule: its metrics, and its title where it has one
    shown = task.get("metrics") or METRICS
    title = task.get("title") or title
    if "ce_reference" in o:  # a continuous dataset: its own conventions, and the metrics some agent has
        title = (
            f"Scores (continuous: dtw={o['dtw']}, reference={o['ce_reference']}, d_th={o['success_distance']} m, "
            f"keep_repeats={o['keep_repeats']}, goal_distance={o['goal_distance']})"
        )
        shown = [m for m in CE_METRICS if m in summary["agents"][next(iter(summary["agents"]))]["metrics"]]
    agents = summary.get("agents") or {}
    if "count" in summary:
        # One agent is shown like many: each metric with its interval (when the run has them).
        row = summary["leaderboard"][0] if summary.get("leaderboard") else {}
        intervals = {m: row.get(f"{m}_ci") for m in shown}
        if any(intervals.values()):
            b = summary["bootstrap"]
            title += f"; [{100 * b['confidence']:g}% bootstrap interval, {b['bootstrap']} replicates]"
        metrics = metric_rows({m: summary["metrics"].get(m) for m in shown}, intervals, own_metrics(summary))
        rows = [("episodes scored", summary["count"]), *metrics]
        rows += [
            ("predictions read", summary["predictions_read"]),
            ("reference episodes", summary["reference_episodes"]),
            ("missing predictions", summary["missing_predictions"]),
            ("without a usable prediction", summary.get("without_usable_prediction", 0)),
            ("dead-lettered records", summary["dead_letters"]),
            *([] if "ce_reference" in o else [("non-adjacent steps (jumps)", summary["non_adjacent_steps"])]),
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
    for agent, block in agents.items():  # a continuous agent that gave both positions and simulator results
        for m, d in (block.get("results_vs_positions") or {}).items():
            print(
                f"{agent}: {m} from its result file, ours from its positions differ by at most "
                f"{d['max_abs_difference']:.4g} (mean {d['mean_abs_difference']:.4g}) over {d['episodes']} episodes"
            )
    for agent, block in agents.items():  # a result file that ends with its evaluator's own totals
        for t in block.get("file_totals") or ():
            print(f"{agent}: {totals_line(t)}")
    print_outputs(output_dir, summary["dead_letters"])
    if any(b["missing_predictions"] for b in agents.values()):
        print(f"Reference episodes without a prediction: see {output_dir}/{MISSING_FILE}")
    if any(b["without_usable_prediction"] for b in agents.values()):
        print(f"Reference episodes without a usable prediction: see {output_dir}/{UNUSABLE_FILE}")


def task_of(opts, data_files: list[str], layouts: dict[str, str | None]):
    """(the task the dataset files are scored by, its options), or JobError: a REVERIE test split, files of
    two tasks, a flag that does not apply, a file its options name missing (`Task.options_of`). `layouts`:
    each file's continuous layout, as the input checks found it (`vlnkit.scoring.registry.task_of_files`)."""
    from vlnkit.scoring.registry import task_of_files

    with user_error():
        task = task_of_files(data_files, layouts)
        return task, task.options_of(opts, data_files)


def run(ctx: Run) -> dict:
    from vlnkit.comparison.config import BootstrapConfig
    from vlnkit.datasets.json_chunks import RANGE_BYTES
    from vlnkit.evaluation.scoring_config import scoring_config
    from vlnkit.scoring.followers import COMPARISON_FILE, follower_agents

    opts = ctx.args
    with user_error():
        config = scoring_config(opts)
        bootstrap = BootstrapConfig.from_flags(opts)
    if not opts.predictions:
        raise JobError("--predictions is required")
    agent_files = ctx.agents(opts.predictions, accept=tuple(DESCRIPTIONS))  # judged below, with the dataset
    with user_error():
        bootstrap.check_agents(agent_files)
    data_files = ctx.inputs("dataset", opts.dataset, accept=("episodes",))
    task, options = task_of(opts, data_files, ctx.kinds)
    if task.layouts:  # a continuous (VLN-CE) dataset: scored from positions, by its own wiring
        from pipelines.score_continuous import run_continuous

        return run_continuous(ctx, agent_files, data_files, config, bootstrap, options)
    for agent, files in agent_files.items():
        for path in files:
            if ctx.kinds.get(path):
                raise JobError(
                    f"--predictions={agent}: {path} is {DESCRIPTIONS[ctx.kinds[path]]}, but --dataset is not a "
                    "VLN-CE episode file: continuous agents are scored against their R2R-CE or RxR-Habitat episodes"
                )
    followers = follower_agents(agent_files)
    for flag, pattern in options.inputs().items():  # files the task's options name that decide its results
        if fileio.is_glob(pattern):
            ctx.input_set(flag, pattern)
        else:
            ctx.inputs(flag, pattern)
    if task.configure is not None:
        config = task.configure(config)
    ctx.graphs(opts.connectivity_dir)
    from transforms.score.read import load_context_in_background
    from vlnkit.evaluation.leaderboard import LEADERBOARD_FILES  # numba-backed: loaded after Beam, not before

    if one_worker_process(ctx.options):  # the worker is this process: its data (REVERIE's) loads while Beam builds
        load_context_in_background(task, options, opts.connectivity_dir)
    return ctx.execute(
        lambda p, out: build(
            p,
            agent_files,
            data_files,
            opts.connectivity_dir,
            out.folder,
            config,
            bootstrap,
            num_shards=opts.num_shards,
            range_bytes=None if one_worker_process(ctx.options) else RANGE_BYTES,
            followers=followers,
            task=task,
            options=options,
        ),
        ["episodes", "missing_predictions", "without_usable_prediction"],
        extra_outputs=tuple(fileio.join(ctx.output_dir, name) for name in (*LEADERBOARD_FILES, COMPARISON_FILE)),
        outcome=outcome,
        declared=lambda summary: declared_outputs(summary, COMPARISON_FILE if followers else None),
    )


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
