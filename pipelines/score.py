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
into --output_dir, and prints a summary table. With --bootstrap (default 1000 replicates), the summary and
leaderboards also hold Poisson bootstrap intervals, paired comparisons with Holm's correction, tie marks and
breakdowns by scan, reference path length and language (docs/jobs/score.md). With several agents the two episode lists hold
"<agent><TAB><instr_id>" lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.options import SHARED, JobError, add_shared, agent_inputs, one_worker_process, user_error
from vlnkit.comparison.paired import HEADLINE
from vlnkit.evaluation.common import DEFAULT_SUCCESS_RULE, SUCCESS_RULES
from vlnkit.io import fileio

if TYPE_CHECKING:
    from pipelines.job import Outcome, Run
    from vlnkit.evaluation.scoring_config import ScoringConfig


MISSING_FILE = "missing_predictions-00000-of-00001.txt"
UNUSABLE_FILE = "without_usable_prediction-00000-of-00001.txt"
LEADERBOARD = ("leaderboard.csv", "leaderboard.md")


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
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=0,
        help="Poisson bootstrap replicates for the intervals, paired comparisons and tie marks (0: off; 1000 is "
        "the usual choice, and costs about 5x the run time at 1M predictions today: benchmarks/RESULTS.md); "
        "each episode's weights are a function of --seed and its id only, so results do not depend on workers",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="Confidence of the intervals; 1 - it is the Holm-corrected significance level of the comparisons",
    )
    parser.add_argument(
        "--bootstrap_unit",
        choices=("episode", "path"),
        default="episode",
        help="What the bootstrap resamples: each episode, or each path with all its instructions together "
        "(they share a trajectory target, so they are not independent)",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        help="Compare every agent with this agent only (default: every pair of agents)",
    )


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
    agent); `opts` needs `output_dir` and `num_shards`; `buckets` defaults to `fileio.bucket_count`.
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
    from vlnkit.datasets.json_chunks import RANGE_BYTES
    from vlnkit.io.schemas import EPISODE_SCORES, schema_version
    from vlnkit.reports.published_metrics import finish_differences

    if not isinstance(agents, dict):
        agents = {path: [path] for path in agents}
    agents = {name: list(files) for name, files in agents.items()}
    out = opts.output_dir
    if buckets is None:
        buckets = fileio.bucket_count(sorted({f for files in agents.values() for f in files}) + list(dataset_files))
    read = pipeline | "Read" >> ReadScoringInputs(
        list(agents.items()), dataset_files, connectivity_dir, buckets, RANGE_BYTES if split_files else None
    )
    names = list(agents)
    side = {}
    replicates = int(getattr(opts, "bootstrap", 0) or 0)
    hook = None
    if replicates:
        from transforms.score_bootstrap import SliceSums
        from vlnkit.comparison.accumulate import pairs_of
        from vlnkit.evaluation.common import METRICS

        pairs = pairs_of(names, getattr(opts, "baseline", None))
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


AGENT_COUNTS = (
    "predictions_read",
    "missing_predictions",
    "without_usable_prediction",
    "dead_letters",
    "non_adjacent_steps",
    "trajectories_with_jumps",
    "repeats_collapsed",
)


def agent_summary(totals: dict, agent: str) -> dict:
    """One agent's block of the summary from the summed totals, with `by_language` (RxR: each language's
    count and metric means from its own exact sums; empty for a dataset without languages)."""
    from transforms.score_batches import BY_LANGUAGE
    from transforms.score_read import SEP
    from vlnkit.evaluation.batch import means

    prefix = agent + SEP
    own = {k[len(prefix) :]: v for k, v in totals.items() if k.startswith(prefix)}
    mean, nulls = means(own)
    per_language: dict[str, dict] = {}
    for key, value in own.items():
        if key.startswith(BY_LANGUAGE + SEP):
            language, name = key[len(BY_LANGUAGE) + 1 :].split(SEP)
            per_language.setdefault(language, {})[name] = value
    by_language = {
        language: {"count": int(sums.get("count", 0)), "metrics": means(sums)[0]}
        for language, sums in sorted(per_language.items())
    }
    return {
        "count": int(own.get("count", 0)),
        "metrics": mean,
        "null_counts": nulls,
        **{name: int(own.get(name, 0)) for name in AGENT_COUNTS},
        "by_language": by_language,
    }


def finish_summary(
    static: dict,
    totals: dict,
    agents: list[str] | None = None,
    bootstrap: dict | None = None,
    bootstrap_options: dict | None = None,
) -> dict:
    """The summary: shared counts, per-agent blocks under "agents" and, for one agent, its block at the top.

    With `bootstrap` (the merged `vlnkit.comparison.accumulate` sums of the job), every leaderboard row
    gains "<metric>_ci" and "tied_with_above", and the summary gains "comparisons" and "breakdowns".

    A dataset whose every reference path is a single viewpoint (the R2R test split) gets
    "unscorable" (the reason) and no metrics: success would be trivially 100%.
    """
    from vlnkit.evaluation.common import METRICS

    agents = list(agents) if agents is not None else [""]
    blocks = {a: agent_summary(totals, a) for a in agents}
    references = int(totals.get("reference_episodes", 0))
    single = int(totals.get("single_viewpoint_episodes", 0))
    unscorable = None
    if references and single == references:
        unscorable = (
            f"every one of the {references} reference episodes of --dataset={','.join(static.get('dataset', []))} "
            "holds only its start viewpoint (like the R2R test split): there is no goal to score against"
        )
        for b in blocks.values():
            b["metrics"] = {m: None for m in METRICS}
            for per_language in b["by_language"].values():
                per_language["metrics"] = {m: None for m in METRICS}
    shared = {
        "reference_episodes": references,
        "single_viewpoint_episodes": single,
        "dead_letters": int(totals.get("dead_letters", 0)),
    }
    summary = dict(static)
    if len(blocks) == 1:
        only = next(iter(blocks.values()))
        summary.update(
            {
                "count": only["count"],
                "metrics": only["metrics"],
                "null_counts": only["null_counts"],
                "predictions_read": only["predictions_read"],
                "reference_episodes": references,
                "missing_predictions": only["missing_predictions"],
                "without_usable_prediction": only["without_usable_prediction"],
                "dead_letters": shared["dead_letters"],
                "non_adjacent_steps": only["non_adjacent_steps"],
                "trajectories_with_jumps": only["trajectories_with_jumps"],
                "repeats_collapsed": only["repeats_collapsed"],
                "by_language": only["by_language"],
            }
        )
    summary.update(shared)
    summary["agents"] = blocks
    summary["leaderboard"] = leaderboard(blocks)
    if bootstrap_options is not None:
        summary["bootstrap"] = bootstrap_options
    if bootstrap is not None and not unscorable:
        add_bootstrap(summary, bootstrap, bootstrap_options or {})
    if unscorable:
        summary["unscorable"] = unscorable
    return summary


TIE_METRIC = "spl"  # ties are judged on the leaderboard's first ranking metric


def add_bootstrap(summary: dict, sums: dict, options: dict) -> None:
    """Intervals on the leaderboard rows, "comparisons" (Holm per metric), tie marks and "breakdowns"."""
    from vlnkit.comparison.accumulate import agent_intervals, breakdowns, comparisons, pairs_of
    from vlnkit.comparison.paired import ties
    from vlnkit.evaluation.common import METRICS

    confidence = float(options.get("confidence", 0.95))
    agents = list(summary["agents"])
    pairs = pairs_of(agents, options.get("baseline"))
    rows = comparisons(sums, METRICS, confidence, pairs)
    ranking = [r["agent"] for r in summary["leaderboard"]]
    tied = ties(ranking, rows, TIE_METRIC)
    for r in summary["leaderboard"]:
        r.update(agent_intervals(sums, r["agent"], METRICS, confidence))
        r["tied_with_above"] = tied.get(r["agent"])
    summary["comparisons"] = rows
    summary["breakdowns"] = breakdowns(sums, confidence)


LEADERBOARD_METRICS = ("sr", "spl", "ndtw", "sdtw", "cls", "ne", "pl", "osr")
LANGUAGE_METRICS = ("sr", "spl", "ndtw", "sdtw")  # the headline metrics shown per language


def language_column(metric: str, language: str) -> str:
    """A leaderboard column of one metric in one language.

    >>> language_column("ndtw", "hi-IN")
    'ndtw_hi-IN'
    """
    return f"{metric}_{language}"


def leaderboard(blocks: dict[str, dict]) -> list[dict]:
    """Agents ranked by SPL, then SR (higher first; agents without scores last), then name. With
    languages (RxR), each row also holds `language_column(metric, language)` for LANGUAGE_METRICS."""
    languages = sorted({language for b in blocks.values() for language in b.get("by_language", {})})

    def key(item):
        name, b = item
        spl, sr = b["metrics"].get("spl"), b["metrics"].get("sr")
        return (spl is None, -(spl or 0.0), -(sr or 0.0), name)

    rows = []
    for rank, (name, b) in enumerate(sorted(blocks.items(), key=key), start=1):
        rows.append(
            {
                "rank": rank,
                "agent": name,
                "episodes": b["count"],
                "without_usable_prediction": b["without_usable_prediction"],
                **{m: b["metrics"].get(m) for m in LEADERBOARD_METRICS},
                **{
                    language_column(m, language): b["by_language"].get(language, {}).get("metrics", {}).get(m)
                    for language in languages
                    for m in LANGUAGE_METRICS
                },
            }
        )
    return rows


HEADLINE_CI = HEADLINE  # metrics whose intervals leaderboard.md shows


def _cell(metric: str, value, interval=None) -> str:
    if value is None:
        return "n/a"
    scale = 1.0 if metric in ("ne", "pl") else 100.0
    text = f"{scale * value:.2f}"
    if interval:
        text += f" [{scale * interval[0]:.2f}, {scale * interval[1]:.2f}]"
    return text


def success_line(options: dict) -> str:
    """The leaderboard's header: the success rule the rates were computed with (ties differ between rules).

    >>> success_line({"success_distance": 3.0, "success_rule": "le"})
    "Success: NE <= 3.0 m (success_rule=le, as the R4R/nDTW papers' code; R2R eval.py uses NE < d_th)."
    """
    d, rule = options["success_distance"], options.get("success_rule", DEFAULT_SUCCESS_RULE)
    if rule == "lt":
        return f"Success: NE < {d} m (success_rule=lt, as R2R eval.py; the R4R/nDTW papers' code uses NE <= d_th)."
    return f"Success: NE <= {d} m (success_rule=le, as the R4R/nDTW papers' code; R2R eval.py uses NE < d_th)."


def leaderboard_text(rows: list[dict], options: dict) -> tuple[str, str]:
    """(CSV text with full-precision values, Markdown table with rates in %, distances in m, under a
    header line stating the success rule)."""
    import csv
    import io

    head = ["rank", "agent", "episodes", "without_usable_prediction", *LEADERBOARD_METRICS]
    first = rows[0] if rows else {}
    with_ci = any(f"{m}_ci" in first for m in LEADERBOARD_METRICS)
    cis = [f"{m}_ci" for m in LEADERBOARD_METRICS] if with_ci else []
    bootstrap_keys = {*(k for k in first if k.endswith("_ci")), "tied_with_above"}
    # Per-language columns, language by language (rows may come back from JSON with sorted keys).
    languages = sorted({k.split("_", 1)[1] for k in first if k not in head and k not in bootstrap_keys})
    extra = [language_column(m, language) for language in languages for m in LANGUAGE_METRICS]
    head += extra
    csv_head = head + cis + (["tied_with_above"] if with_ci else [])
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=csv_head, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: _csv_value(r.get(k)) for k in csv_head})
    labels = [m.upper() + (" (m)" if m in ("ne", "pl") else " (%)") for m in LEADERBOARD_METRICS]
    labels += [c.split("_", 1)[0].upper() + " " + c.split("_", 1)[1] + " (%)" for c in extra]
    md = [success_line(options), ""]
    if with_ci:
        md += [
            f"Brackets: {100 * options.get('confidence', 0.95):g}% bootstrap intervals ({options.get('bootstrap')} "
            f"replicates, unit: {options.get('bootstrap_unit', 'episode')}). \u2248 before a rank: its "
            f"{TIE_METRIC.upper()} does not differ significantly from the agent ranked above (paired, Holm-corrected).",
            "",
        ]
    md.append("| rank | agent | episodes | without usable prediction | " + " | ".join(labels) + " |")
    md.append("|" + " --- |" * (4 + len(labels)))
    for r in rows:
        agent = str(r["agent"]).replace("|", "\\|")
        cells = [_cell(m, r[m], r.get(f"{m}_ci") if m in HEADLINE_CI else None) for m in LEADERBOARD_METRICS]
        cells += [_cell(c, r.get(c)) for c in extra]
        mark = "\u2248" if r.get("tied_with_above") else ""
        md.append(
            f"| {mark}{r['rank']} | {agent} | {r['episodes']} | {r['without_usable_prediction']} | "
            + " | ".join(cells)
            + " |"
        )
    return buf.getvalue(), "\n".join(md) + "\n"


def _csv_value(value):
    """A CSV cell: empty for None, an interval as "low;high" (full precision)."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ";".join(repr(float(v)) for v in value)
    return value


def write_leaderboard(output_dir: str, summary: dict) -> None:
    csv_text, md_text = leaderboard_text(summary["leaderboard"], {**summary["options"], **summary.get("bootstrap", {})})
    for name, text in zip(LEADERBOARD, (csv_text, md_text)):
        with fileio.open_write(fileio.join(output_dir, name)) as f:
            f.write(text.encode("utf-8"))


def summary_rows(summary: dict) -> list[tuple[str, object]]:
    """Metric rows of a summary table: rates as percentages, distances in metres."""
    from vlnkit.evaluation.common import METRICS
    from vlnkit.evaluation.scoring_config import metric_rows

    return metric_rows({m: summary["metrics"].get(m) for m in METRICS})


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.job import format_table, print_outputs

    output_dir = ctx.output_dir
    o = summary["options"]
    title = (
        f"Scores (d_th={o['success_distance']} m, success_rule={o.get('success_rule', DEFAULT_SUCCESS_RULE)}, "
        f"keep_repeats={o['keep_repeats']}, spl_reference={o['spl_reference']})"
    )
    agents = summary.get("agents") or {}
    if "count" in summary:
        rows = [("episodes scored", summary["count"]), *summary_rows(summary)]
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
        print(leaderboard_text(summary["leaderboard"], o)[1], end="")
    print_outputs(output_dir, summary["dead_letters"])
    if any(b["missing_predictions"] for b in agents.values()):
        print(f"Reference episodes without a prediction: see {output_dir}/{MISSING_FILE}")
    if any(b["without_usable_prediction"] for b in agents.values()):
        print(f"Reference episodes without a usable prediction: see {output_dir}/{UNUSABLE_FILE}")


def outcome(summary: dict) -> Outcome:
    """Scoring reads predictions: the run counts when enough of them could be scored, and never when the
    references cannot be scored at all (e.g. the R2R test split, where success would be trivially 100%)."""
    from pipelines.job import Outcome

    read = sum(int(b.get("predictions_read", 0)) for b in summary.get("agents", {}).values())
    return Outcome(read, int(summary.get("dead_letters", 0)), summary.get("unscorable"))


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
        extra_outputs=tuple(fileio.join(ctx.output_dir, name) for name in (*LEADERBOARD, COMPARISON_FILE)),
        outcome=outcome,
    )


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
