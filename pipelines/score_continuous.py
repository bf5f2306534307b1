"""The score job on a continuous (VLN-CE) dataset: the checks of its inputs and the wiring of its run.

`pipelines.score` hands a run here when --dataset names R2R-CE or RxR-Habitat episode files: every agent
file must then hold positions or per-episode simulator results (never graph predictions), the ground
truth is found beside the episodes (or named by --ce_gt), and the pipeline reads pieces by bucket of
episode_id, scores each bucket and writes what the graph wiring writes (docs/jobs/score.md, VLN-CE).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.score_outputs import JOB_NAME, declared_outputs, outcome, write_episodes
from pipelines.verdict import JobError
from vlnkit.continuous.documents import DESCRIPTIONS, POSITION_KINDS, RESULT_KINDS
from vlnkit.io import fileio

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.comparison.config import BootstrapConfig
    from vlnkit.continuous.buckets import ContinuousOptions
    from vlnkit.evaluation.scoring_config import ScoringConfig

# What --predictions may hold for a continuous dataset: agent positions or per-episode simulator results.
AGENT_KINDS = POSITION_KINDS + RESULT_KINDS


def build_continuous(
    pipeline,
    agents: dict[str, list[tuple[str, str | None]]],
    dataset_files: list[str],
    output_dir: str,
    config: ScoringConfig,
    options: ContinuousOptions,
    bootstrap: BootstrapConfig,
    num_shards: int = 0,
    buckets: int | None = None,
    ground_truth: list[str] | None = None,
) -> None:
    """Wire the score job for a continuous (VLN-CE) dataset: read every file into pieces by bucket of
    episode_id, join and score each bucket, then write what the graph wiring writes (episode rows in the
    `continuous_episode_scores` schema, the two episode lists, dead letters, summary.json, leaderboards).

    `agents`: {agent name: [(file, its continuous layout or None)]}; `ground_truth`: the ground-truth
    files read (for the summary)."""
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER
    from transforms.run_summary import finish_run
    from transforms.score.continuous import DIFFERENCES, FILE_TOTALS, ReadContinuousInputs, ScoreContinuousBuckets
    from transforms.score.outputs import MergeFollowerComparisons
    from transforms.score.read import TOTALS
    from vlnkit.continuous.schemas import CONTINUOUS_EPISODE_SCORES
    from vlnkit.continuous.summary import continuous_summary
    from vlnkit.datasets.buckets import bucket_count
    from vlnkit.evaluation.leaderboard import write_leaderboard
    from vlnkit.evaluation.score_summary import bootstrap_pairs
    from vlnkit.io.schemas import schema_version
    from vlnkit.scoring.vlnce import VLNCE

    names = list(agents)
    files = {agent: [f for f, _ in layouts] for agent, layouts in agents.items()}
    if buckets is None:
        buckets = bucket_count(sorted({f for fs in files.values() for f in fs}) + list(dataset_files))
    read = pipeline | "Read" >> ReadContinuousInputs(list(agents.items()), dataset_files, buckets, options)
    pairs = bootstrap_pairs(names, bootstrap.baseline) if bootstrap.enabled else []
    scored = read["pieces"] | "Score" >> ScoreContinuousBuckets(files, dataset_files, config, options, bootstrap, pairs)
    side = write_episodes(scored, output_dir, CONTINUOUS_EPISODE_SCORES, num_shards, bootstrap)
    side["differences"] = beam.pvalue.AsSingleton(
        scored[DIFFERENCES] | "Differences" >> MergeFollowerComparisons(), default_value={}
    )
    side["file_totals"] = beam.pvalue.AsList(read[FILE_TOTALS])
    static = {
        "job": JOB_NAME,
        "schema": "continuous_episode_scores",
        "schema_version": schema_version(CONTINUOUS_EPISODE_SCORES),
        "options": {**config.to_dict(), **options.to_dict()},
        "predictions": list(dict.fromkeys(f for fs in files.values() for f in fs)),
        "dataset": list(dataset_files),
        "ground_truth": list(ground_truth or []),
        "task": VLNCE.describe(options),  # how its own metrics are shown
    }
    inputs = {agent: {f: layout for f, layout in layouts} for agent, layouts in agents.items()}

    def finish(totals: dict, differences: dict, file_totals: list, bootstrap_sums: dict | None = None) -> dict:
        summary = continuous_summary(
            static, totals, names, bootstrap_sums, bootstrap.to_dict(), differences, inputs, file_totals
        )
        write_leaderboard(output_dir, summary)
        return summary

    _ = finish_run(output_dir, finish, (read[DEAD_LETTER], scored[DEAD_LETTER]), (scored[TOTALS], read[TOTALS]), side)


def run_continuous(
    ctx: Run,
    agent_files: dict[str, list[str]],
    data_files: list[str],
    config: ScoringConfig,
    bootstrap,
    options: ContinuousOptions,
) -> dict:
    """The checks and the run of a continuous (VLN-CE) dataset (`vlnkit.scoring.vlnce.VLNCE`, whose options
    `options` are): every dataset file an episode file, its ground truth found (beside it, or --ce_gt), every
    agent file positions or simulator results."""
    from vlnkit.continuous.documents import instruction_keyed
    from vlnkit.continuous.episodes import gt_path_for
    from vlnkit.evaluation.leaderboard import LEADERBOARD_FILES  # numba-backed: loaded after Beam, not before

    opts = ctx.args
    others = [f for f in data_files if ctx.kinds.get(f) != "episodes"]
    if others:
        raise JobError(
            f"--dataset: {others[0]} is not a VLN-CE episode file, but other --dataset files are: score a continuous "
            "dataset on its own"
        )
    if opts.ce_gt:
        if len(data_files) > 1:
            raise JobError(f"--ce_gt names one ground-truth file, but --dataset names {len(data_files)} episode files")
        ground_truth = ctx.inputs("ce_gt", opts.ce_gt, accept=tuple(DESCRIPTIONS))
        if ctx.kinds.get(ground_truth[0]) != "ground_truth":
            raise JobError(f"--ce_gt: {ground_truth[0]} is not a ground-truth file ({{episode_id: {{locations}}}})")
    else:
        beside = [gt_path_for(f) for f in data_files]
        ground_truth = [g for g in beside if fileio.exists(g)]
        if len(ground_truth) < len(beside) and opts.ce_reference == "gt":
            gone = next(g for g in beside if g not in ground_truth)
            raise JobError(
                f"--dataset: no ground truth beside the episode file ({gone} does not exist): name it with --ce_gt, "
                "or score against the episodes' reference paths with --ce_reference=reference_path"
            )
        for g in ground_truth:
            ctx.inputs("ce_gt", g)
    if bootstrap.unit == "path" and any(instruction_keyed(f) for f in data_files):
        raise JobError(
            "--bootstrap_unit=path needs R2R-CE instr_ids (<trajectory_id>_<k>); an RxR-Habitat dataset's are "
            "instruction ids: use --bootstrap_unit=episode"
        )
    layouts = {}
    for agent, files in agent_files.items():
        for path in files:
            kind = ctx.kinds.get(path)
            if kind is None and _graph_predictions(path):
                raise JobError(
                    f"--predictions={agent}: {path} holds predictions on a navigation graph (viewpoint ids), but "
                    "--dataset is a VLN-CE episode file: give the agent's positions or its simulator results"
                )
            if kind is not None and kind not in AGENT_KINDS:
                raise JobError(
                    f"--predictions={agent}: {path} is {DESCRIPTIONS[kind]}, not agent positions or "
                    f"per-episode simulator results ({', '.join(AGENT_KINDS)})"
                )
        layouts[agent] = [(path, ctx.kinds.get(path)) for path in files]
    return ctx.execute(
        lambda p, out: build_continuous(
            p,
            layouts,
            data_files,
            out.folder,
            config,
            options,
            bootstrap,
            num_shards=opts.num_shards,
            ground_truth=ground_truth,
        ),
        ["episodes", "missing_predictions", "without_usable_prediction"],
        extra_outputs=tuple(fileio.join(ctx.output_dir, name) for name in LEADERBOARD_FILES),
        outcome=outcome,
        declared=lambda summary: declared_outputs(summary, None),
    )


def _graph_predictions(path: str) -> bool:
    """`vlnkit.continuous.documents.graph_predictions` of a file's head (False when it cannot be read: its
    reader then dead-letters it, naming the error)."""
    import zlib

    from vlnkit.continuous.documents import graph_predictions, head_bytes

    try:
        return graph_predictions(head_bytes(path))
    except (OSError, EOFError, zlib.error):
        return False
