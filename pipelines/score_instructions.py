"""Score instruction generators with the COCO caption metrics, exactly (docs/jobs/score_instructions.md).

    python -m pipelines.score_instructions --runner=DirectRunner \
        --predictions=lstm=speaker_lstm.json --predictions=t5=speaker_t5.json \
        [--references=R2R_val_seen.json] [--human_baseline] --output_dir=output/instruction_scores

Each system's file is a dict or list keyed by instr_id or path_id, JSON Lines, the SPICE jar's input list
[{image_id, refs, test}], or a multi-system file ({system: {path_id: record}}, as zhao2023's human
evaluation, whose systems are named by the file). References are the ones each file carries, or with
--references those of an R2R-format file (R2R, R4R, REVERIE: records with path_id and instructions).
BLEU-1..4, ROUGE-L and CIDEr-D equal pycocoevalcap 1.2's per item and per system (CIDEr-D's document
frequencies from each system's own set); --meteor and --spice add METEOR 1.5 and SPICE 1.0 from the
reference jars (one SPICE jar call per batch); --human_baseline adds a row scoring each reference against the
others. Writes `instructions-SSSSS-of-NNNNN.parquet` (one row per scored instruction),
`summary.json` (corpus scores with bootstrap intervals, paired comparisons, the leaderboard with tie
marks, Kendall's tau-b against human outcomes when the files carry `human_scores`),
`dead_letter-00000-of-00001.jsonl`, `manifest.json`, `README.md` (the dataset card), `_SUCCESS`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.flags import add_shared
from pipelines.provenance import fingerprinted_settings
from pipelines.verdict import JobError, user_error
from vlnkit.io import fileio
from vlnkit.io.redact import redact

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.runs.staging import Staging
    from vlnkit.runs.verdict import Outcome

RANKABLE = ("cider_d", "bleu_4", "bleu_1", "bleu_2", "bleu_3", "rouge_l")
BATCH, SPICE_BATCH = 2048, 512  # instructions per batch a worker scores (with --spice: per SPICE jar call)
DEFAULT_OUTCOME_METRICS = ("sr", "spl", "ndtw", "sdtw", "ne")  # vlnkit.captioning.outcomes.DEFAULT_METRICS


def declare_flags(parser) -> None:
    add_shared(
        parser,
        "predictions",
        predictions={
            "help": "Generated instructions of one system per NAME=FILES (a multi-system file names its own "
            "systems). " + "Layouts: see the job's page. " + "A path, glob or comma-separated list; repeatable"
        },
    )
    parser.add_argument(
        "--references",
        default=None,
        help="Score against the references of this R2R-format file (records with path_id and instructions: "
        "R2R, R4R, REVERIE) instead of those the files carry; an id whose path is not there is a dead letter",
    )
    parser.add_argument(
        "--human_baseline",
        action="store_true",
        help="Add the row `human`: each reference of every path scored against the others (leave-one-out)",
    )
    parser.add_argument(
        "--meteor",
        action="store_true",
        help="Also METEOR 1.5 through the reference jar (Java and `python -m vlnkit.captioning.jars`); without "
        "them it is refused in one line and the other metrics run",
    )
    parser.add_argument(
        "--spice",
        action="store_true",
        help="Also SPICE 1.0 through the reference jar, one jar call per batch of a system (Java, Rhino and "
        "`python -m vlnkit.captioning.jars --spice`); without them it is refused in one line and the other "
        "metrics run",
    )
    parser.add_argument(
        "--spice_cache",
        default=None,
        help="With --spice: a local folder that keeps SPICE's parse cache across runs (each worker locks a "
        "slot of its own in it), so a rerun parses only new sentences; default: a fresh folder per worker, "
        "removed when it ends",
    )
    parser.add_argument(
        "--outcomes",
        action="append",
        default=None,
        help="Wayfinding outcomes from the score job (`python -m pipelines.score`) of followers of these "
        "instructions: its episode rows (a score run's output folder, or its episodes-*.parquet; a path, glob "
        "or comma-separated list), joined to the instructions on instr_id. SYSTEM=FILES: the rows (of one "
        "agent) follow system SYSTEM; FILES without a name: each row's agent names its system. Each "
        "--outcome_metrics column m is the outcome episode_m of the agreement table; a row that joins nothing "
        "is a dead letter. Repeatable",
    )
    parser.add_argument(
        "--outcome_metrics",
        default=",".join(DEFAULT_OUTCOME_METRICS),
        help="With --outcomes: the episode rows' metric columns that become outcomes (comma-separated)",
    )
    parser.add_argument(
        "--rank_by", choices=RANKABLE, default="cider_d", help="The leaderboard's metric (tie marks on it)"
    )
    add_shared(parser, "seed", "num_shards", "bootstrap", "confidence")


JOB = Job("score_instructions", __doc__, declare_flags)


def _reference_table(path: str) -> dict[str, list[str]]:
    """{path_id: references} of an R2R-format file (JSON list or JSON Lines), first record of a path wins."""
    with fileio.open_read(path) as f:
        text = f.read().decode("utf-8")
    try:
        records = json.loads(text)
    except json.JSONDecodeError:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    table: dict[str, list[str]] = {}
    for k, r in enumerate(records if isinstance(records, list) else []):
        if not isinstance(r, dict) or "path_id" not in r or not isinstance(r.get("instructions"), list):
            raise JobError(f"--references={path}: record {k} has no path_id and instructions list")
        table.setdefault(str(r["path_id"]), r["instructions"])
    if not table:
        raise JobError(f"--references={path}: no records with path_id and instructions")
    return table


def _tally(rows: list[dict]) -> dict[str, int]:
    """A scored batch's counts (one system per batch)."""
    return {"instructions": len(rows), f"system:{rows[0]['system']}": len(rows)} if rows else {}


def build(
    pipeline, out: Staging, systems, references, opts, bootstrap, jars: dict[str, str | None], followed=None
) -> None:
    """`jars`: {"meteor", "spice"} -> None when computed, else why not (refused or not asked for);
    `followed`: --outcomes as ([(system or None, episode file)], metrics), or None."""
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER
    from transforms.instructions import JoinOutcomes, ReadChecked, ScoreSystems
    from transforms.run_summary import finish_run
    from transforms.write import WriteParquetShards
    from vlnkit.captioning.schemas import INSTRUCTION_SCORES
    from vlnkit.captioning.summary import instructions_summary

    # SPICE's jar scores a batch as one set (its per-item values depend on the set): batches of 512, as before
    size = SPICE_BATCH if jars["spice"] is None else BATCH
    read = pipeline | "Read" >> ReadChecked(systems, references, opts.human_baseline, batch_size=size)
    scored = read | "Score" >> ScoreSystems(
        bootstrap.replicates,
        bootstrap.seed,
        jars["meteor"] is None,
        jars["spice"] is None,
        followed is not None,
        opts.spice_cache,
    )
    scored["rows"] | "WriteRows" >> WriteParquetShards(
        out.join("instructions"), INSTRUCTION_SCORES, opts.num_shards, batched=True
    )
    tallies = (scored["rows"] | "TallyRows" >> beam.Map(_tally),)
    sums = scored["sums"] | "SystemSums" >> beam.combiners.ToDict()
    outcomes = scored["outcomes"] | "Outcomes" >> beam.combiners.ToList()
    static = {
        "job": JOB.name,
        "systems": sorted(systems),
        "human_baseline": bool(opts.human_baseline),
        "references": opts.references or "carried by the files",
        "rank_by": opts.rank_by,
        **{m: why or "computed" for m, why in jars.items()},
        **bootstrap.to_dict(),
        "options": redact(fingerprinted_settings(opts)),
    }

    side = {"sums": beam.pvalue.AsSingleton(sums), "outcomes": beam.pvalue.AsSingleton(outcomes)}
    dead = list(read[DEAD_LETTER])
    if followed is not None:
        joined = scored["scored"] | "EpisodeOutcomes" >> JoinOutcomes(*followed)
        dead += joined[DEAD_LETTER]
        side["followed"] = beam.pvalue.AsSingleton(joined["joined"])

    def summarize(totals, sums, outcomes, followed=None):
        return instructions_summary(static, totals, sums, outcomes, followed)

    _ = finish_run(out.folder, summarize, dead, tallies, side)


def print_summary(summary: dict, ctx: Run) -> None:
    first = summary["by_system"][summary["leaderboard"][0]["system"]] if summary["leaderboard"] else {}
    metrics = ("bleu_1", "bleu_4", "rouge_l", "cider_d", *(m for m in ("meteor", "spice") if m in first))
    name = max([len("system"), *(len(r["system"]) for r in summary["leaderboard"])]) + 2  # no name runs into a cell
    title = f"{'rank':<5}{'system':<{name}}" + "".join(f"{m:>22}" for m in metrics)
    lines = ["Instruction generators", title, "-" * len(title)]
    for row in summary["leaderboard"]:
        s = summary["by_system"][row["system"]]
        cells = []
        for m in metrics:
            ci = s[m]["interval"]
            cells.append(f"{s[m]['score']:.4f}" + (f" [{ci[0]:.3f},{ci[1]:.3f}]" if ci else ""))
        mark = "=" if row["tied_with_above"] else " "
        lines.append(f"{row['rank']:<4}{mark}{row['system']:<{name}}" + "".join(f"{c:>22}" for c in cells))
    lines.append(
        f"({summary['instructions']} instructions scored, {summary['dead_letters']} dead letters; "
        f"= : not significantly different from the row above on {summary['rank_by']})"
    )
    print("\n".join(lines))


def outcome(summary: dict) -> Outcome:
    from vlnkit.captioning.outcomes import NO_EPISODE
    from vlnkit.runs.verdict import Outcome

    followed = summary.get("episode_outcomes")
    if not followed:
        return Outcome(int(summary.get("instructions", 0)), int(summary.get("dead_letters", 0)))
    # rows of --outcomes that joined nothing are judged apart, as a share of the rows offered to the join
    unjoined = int(summary.get("dead_letters_by_stage", {}).get("outcomes", 0))
    offered = int(followed["episode_rows"]) + int(followed.get(NO_EPISODE, 0)) + int(followed["files"])
    share = ((unjoined, max(offered, 1), "episode rows and followed instructions of --outcomes did not join"),)
    return Outcome(int(summary.get("instructions", 0)), int(summary.get("dead_letters", 0)) - unjoined, shares=share)


def _jar_refusal(metric: str, asked: bool) -> str | None:
    """None when `metric` runs; else why not, printed in one line when it was asked for."""
    if not asked:
        return f"not asked for (--{metric})"
    from vlnkit.captioning.jars import missing

    refusal = missing(metric)
    if refusal:
        print(f"score_instructions: {metric.upper()} refused: {refusal}; the other metrics run")
    return refusal


def _outcome_files(ctx: Run, opts) -> tuple[list[tuple[str | None, str]], tuple[str, ...]]:
    """--outcomes values -> ([(system or None, Parquet file)], metrics): a score run's folder stands for its
    published episode files; SYSTEM=FILES names the system (the name before the first `=`, as
    --predictions' NAME=FILES)."""
    from pipelines.input_checks import AGENT_NAME

    metrics = tuple(m.strip() for m in opts.outcome_metrics.split(",") if m.strip())
    if not metrics:
        raise JobError("--outcome_metrics names no metric")
    files: list[tuple[str | None, str]] = []
    for value in opts.outcomes:
        m = AGENT_NAME.fullmatch(value)
        system, patterns = (m.group(1), m.group(2)) if m and not fileio.exists(value) else (None, value)
        found = [f for f in ctx.inputs("outcomes", patterns) if f.endswith(".parquet")]
        if not found:
            raise JobError(
                f"--outcomes={value}: no Parquet episode rows (a score run's folder or its episodes-*.parquet)"
            )
        files += [(system, f) for f in found]
    return files, metrics


def run(ctx: Run) -> dict:
    from pipelines.input_checks import refuse_continuous
    from transforms.instructions import HUMAN
    from vlnkit.comparison.config import BootstrapConfig

    opts = ctx.args
    with user_error():
        bootstrap = BootstrapConfig.from_flags(opts)
    if not opts.predictions:
        raise JobError("--predictions is required")
    systems = ctx.agents(opts.predictions, refuse=refuse_continuous(JOB.name))
    if opts.human_baseline and HUMAN in systems:
        raise JobError(f"--predictions names a system {HUMAN!r}, the name of the --human_baseline row: rename it")
    references = None
    if opts.references:
        (path,) = ctx.inputs("references", opts.references)[:1]
        references = _reference_table(path)
    jars = {m: _jar_refusal(m, getattr(opts, m)) for m in ("meteor", "spice")}
    followed = _outcome_files(ctx, opts) if opts.outcomes else None
    return ctx.execute(
        lambda p, out: build(p, out, systems, references, opts, bootstrap, jars, followed),
        ["instructions"],
        outcome=outcome,
        declared=lambda summary: {"instructions": summary["instructions"]},
    )


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
