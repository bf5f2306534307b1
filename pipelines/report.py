"""Report: figures and one self-contained HTML page from the outputs of the other jobs.

    python -m pipelines.report --runner=DirectRunner --inputs=GLOB[,GLOB...] --connectivity_dir=DIR \
        --output_dir=DIR [--compare=GLOB[,GLOB...]] [--draw=N] [--seed=S] \
        [--dataset=FILES] [--bootstrap=N] [--confidence=C] [--bootstrap_unit=episode|path] [--baseline=AGENT]

An input is a file, a glob or a job's output folder: R2R/R4R JSON datasets, build_r4r
`paths-*.parquet`, score / random_baseline `episodes-*.parquet` (or only their `summary.json`),
perturb `perturbations-*.parquet`, paraphrase `paraphrases-*.parquet`. Writes `index.html`,
`figures/*.png`, `report_tables.json` (every number plotted), `dead_letter-00000-of-00001.jsonl`,
`summary.json`, `manifest.json` and `_SUCCESS` into --output_dir.

When --inputs hold a score job's episodes (`episodes-*.parquet` with agent, instr_id, scan and path),
the report also writes `comparison.html`, linked from `index.html`: the agents' leaderboard with
bootstrap intervals and tie marks, differences against --baseline, breakdowns, and a table of
episodes that draws each one on its scan's graph (docs/jobs/report.md). Its reference paths come from
the dataset the score job's summary.json names, or from --dataset. A score_instructions output folder
gives its own pages, `instructions_systems.html` (forest plots, leaderboard), `instructions_agreement.html`
(Kendall's tau-b against human outcomes, each metric against each outcome per system) and
`instructions_side_by_side.html` (references and every system's instruction beside the path's drawing).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.flags import add_shared
from pipelines.report_plans import comparison_plan, instruction_plan
from pipelines.verdict import JobError, user_error
from vlnkit.io import fileio
from vlnkit.reports.html import FIGURES_DIR, assemble

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.reports.report_inputs import ReportInput
    from vlnkit.runs.verdict import Outcome


INDEX = "index.html"
COMPARISON = "comparison.html"
TABLES = "report_tables.json"


def declare_flags(parser) -> None:
    parser.add_argument(
        "--inputs",
        help="Job outputs to report on: files, globs or output folders, comma-separated (local or gs://)",
    )
    parser.add_argument(
        "--compare", help="A second set of inputs shown side by side with --inputs (another dataset or agent)"
    )
    add_shared(
        parser,
        "connectivity_dir",
        "seed",
        "dataset",
        "bootstrap",
        "confidence",
        "bootstrap_unit",
        "baseline",
        seed={"help": "Seeds the choice of drawn episodes and the comparison page's bootstrap (with each record's id)"},
        dataset={
            "help": "Reference dataset(s) of the comparison page: the score job's --dataset (R2R/R4R JSON or JSON "
            "Lines, or build_r4r paths-*.parquet). Default: the files the score job's summary.json names"
        },
    )
    parser.add_argument("--draw", type=int, default=6, help="Episodes to draw on their navigation graph (0: none)")
    parser.add_argument("--title", default="vlnkit report", help="Page title")


JOB = Job("report", __doc__, declare_flags)


# ----------------------------------------------------------------------------- rendering
def render(_, partial, episodes, pages, instruction_pages, *, out, opts, inputs, summaries, band):
    """The single drawing step: small merged tables in, figures, page and summary out."""
    from transforms.graphs import worker_graph_store
    from transforms.write import write_json
    from vlnkit.reports.stats import finalize
    from vlnkit.reports.summary import report_summary

    tables = finalize(partial)
    graphs = worker_graph_store(opts.connectivity_dir)
    made = instruction_pages[0] if instruction_pages else {"files": {}, "info": None}
    files, page, notes = assemble(
        tables,
        episodes or [],
        graphs,
        summaries=summaries,
        keep_band=band,
        inputs=[[i.path, i.kind, i.label, "compare" if i.compare else "inputs"] for i in inputs],
        title=opts.title,
        order=list(dict.fromkeys(i.label for i in inputs)),
        links=[(COMPARISON, _page_link(p)) for p in pages if p["written"]] + _instruction_links(made["info"]),
    )
    files = {**files, **made["files"]}
    fileio.remove_tree(fileio.join(out, FIGURES_DIR))  # figures of an earlier report must not linger
    for name, png in files.items():
        with fileio.open_write(fileio.join(out, *name.split("/"))) as f:
            f.write(png)
    with fileio.open_write(fileio.join(out, INDEX)) as f:
        f.write(page.encode("utf-8"))
    write_json(fileio.join(out, TABLES), {"tables": tables, "score_summaries": summaries, "keep_band": band}, True)
    page = {**pages[0], "file": fileio.join(out, COMPARISON) if pages[0]["written"] else None} if pages else None
    figures = sorted(f for f in files if f.startswith(FIGURES_DIR + "/"))
    summary = report_summary(
        {"job": JOB.name}, tables, inputs, figures, notes, opts.seed, fileio.join(out, INDEX), page
    )
    if made["info"]:
        summary["instructions"] = {**made["info"], "pages": sorted(f for f in made["files"] if f.endswith(".html"))}
    write_json(fileio.join(out, "summary.json"), summary, indent=True)
    return summary


def _page_link(page: dict) -> str:
    return f"Agents compared: {len(page['agents'])} agents, {page['episodes']} episodes, with intervals"


def _instruction_links(info: dict | None) -> list[tuple[str, str]]:
    from vlnkit.reports.instruction_pages import AGREEMENT, SIDE_BY_SIDE, SYSTEMS

    if not info:
        return []
    return [
        (SYSTEMS, f"Instruction generators ({info['run']}): {info['systems']} systems, forest plots and leaderboard"),
        (AGREEMENT, "Which metric predicts wayfinding: Kendall's tau-b and each metric against each outcome"),
        (SIDE_BY_SIDE, f"Instructions side by side: {info['paths_shown']} paths, references and every system"),
    ]


def build(
    pipeline, out: str, inputs: list[ReportInput], opts, summaries: dict, band, plan=None, instructions=None
) -> None:
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER, DEAD_LETTER_FILE, WriteDeadLetters
    from transforms.instruction_report import InstructionPages
    from transforms.report import (
        ComparisonPage,
        ContinuousComparisonPage,
        DatasetStats,
        MergePartials,
        ParquetStats,
        SampleEpisodes,
    )
    from vlnkit.reports.stats import DATASET, INSTRUCTION_SCORES, SCORE_SUMMARY, SCORES

    datasets: dict[str, list[str]] = {}
    for item in inputs:
        if item.kind == DATASET:
            datasets.setdefault(item.label, []).append(item.path)
    parquet = [i for i in inputs if i.kind not in (DATASET, SCORE_SUMMARY, INSTRUCTION_SCORES)]
    sample_from = next((i.label for i in inputs if i.kind == SCORES and not i.compare), None)
    draw_label = next((i.label for i in inputs if i.kind == DATASET and not i.compare), None)
    draw_label = draw_label or next(iter(datasets), None)

    partials, references, dead = [], [], []
    for n, (label, files) in enumerate(datasets.items()):
        stats = pipeline | f"Dataset{n}" >> DatasetStats(label, files, opts.connectivity_dir)
        partials.append(stats["partials"])
        references.append(stats["references"])
        dead.append(stats[DEAD_LETTER])
    outputs = pipeline | "Outputs" >> ParquetStats(parquet, opts.seed, sample_from, max(opts.draw, 0))
    partials.append(outputs["partials"])
    dead.append(outputs[DEAD_LETTER])
    if plan and plan.get("continuous"):
        path = fileio.join(out, COMPARISON)
        page = pipeline | "Comparison" >> ContinuousComparisonPage(
            plan["files"], plan["dataset"], plan["ground_truth"], opts.connectivity_dir, path, plan["options"],
            plan["names"],
        )  # fmt: skip
        dead.append(page[DEAD_LETTER])
        pages = beam.pvalue.AsList(page["page"])
    elif plan:
        path = fileio.join(out, COMPARISON)
        page = pipeline | "Comparison" >> ComparisonPage(
            plan["files"], plan["dataset"], opts.connectivity_dir, path, plan["options"], plan["names"],
            plan["target_path"],
        )  # fmt: skip
        dead.append(page[DEAD_LETTER])
        pages = beam.pvalue.AsList(page["page"])
    else:
        pages = beam.pvalue.AsList(pipeline | "NoPage" >> beam.Create([]))
    made = pipeline | "NoInstructionPages" >> beam.Create([])
    if instructions:
        made = pipeline | "InstructionPages" >> InstructionPages(
            instructions, opts.connectivity_dir, max(opts.draw, 0), opts.seed, opts.title
        )
    dead_all = tuple(dead) | "DeadLetters" >> WriteDeadLetters(fileio.join(out, DEAD_LETTER_FILE))
    partials.append(dead_all | "CountDead" >> beam.Map(lambda d: {("count", "dead_letters", d["stage"], "records"): 1}))
    merged = tuple(partials) | "AllPartials" >> beam.Flatten() | "Merge" >> beam.CombineGlobally(MergePartials())

    if opts.draw > 0 and references:
        refs = tuple(references) | "AllReferences" >> beam.Flatten()
        episodes = {"references": refs, "score_samples": outputs["samples"]} | "Sample" >> SampleEpisodes(
            opts.draw, opts.seed, draw_label, with_scores=sample_from is not None
        )
        episodes_side = beam.pvalue.AsSingleton(episodes)
    else:
        episodes_side = beam.pvalue.AsSingleton(pipeline | "NoEpisodes" >> beam.Create([[]]))
    _ = (
        pipeline
        | "One" >> beam.Create([None])
        | "Render"
        >> beam.Map(
            render,
            beam.pvalue.AsSingleton(merged),
            episodes_side,
            pages,
            beam.pvalue.AsList(made),
            out=out,
            opts=opts,
            inputs=inputs,
            summaries=summaries,
            band=band,
        )
    )


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table

    rows = [(f"{kind} files", n) for kind, n in summary["inputs"].items()]
    rows += [(f"dataset {k}: paths", v.get("paths", 0)) for k, v in summary["datasets"].items()]
    rows += [(f"score set {k}: episodes", v) for k, v in summary["score_sets"].items()]
    rows += [("figures", len(summary["figures"])), ("paths drawn", summary["drawings"])]
    rows += [("dead-lettered records", summary["dead_letters"])]
    print(format_table(rows, "Report"))
    print(f"Open {summary['index']}")
    for name in (summary.get("instructions") or {}).get("pages", []):
        print(f"Instruction generators: open {fileio.join(os.path.dirname(summary['index']), name)}")
    page = summary.get("comparison")
    if page and page["file"]:
        print(f"Agents compared: open {page['file']}")
    elif page:
        print("No comparison page: none of the scored episodes could be used (see the dead letters)")
    for failed in summary["drawings_failed"] + (summary.get("instructions") or {}).get("drawings_failed", []):
        print(f"Could not draw path {failed['path_id']} ({failed['scan']}): {failed['reason']}")


def outcome(summary: dict) -> Outcome:
    """A report counts when its inputs held something to report on: dataset paths, scored episodes, or
    other job outputs; rows it could not use are dead letters, judged as in every job."""
    from vlnkit.reports.stats import DATASET, SCORES
    from vlnkit.runs.verdict import Outcome

    read = sum(int(v.get("paths", 0)) for v in summary.get("datasets", {}).values())
    read += sum(int(n) for n in summary.get("score_sets", {}).values())
    read += sum(int(n) for kind, n in summary.get("inputs", {}).items() if kind not in (DATASET, SCORES))
    read += int((summary.get("instructions") or {}).get("instructions", 0))
    return Outcome(read, int(summary.get("dead_letters", 0)))


def run(ctx: Run) -> dict:
    from vlnkit.reports.report_inputs import classify, keep_band, read_json
    from vlnkit.reports.stats import SCORE_SUMMARY, ReportInputError

    opts = ctx.args
    if not opts.inputs:
        raise JobError("--inputs is required")
    if opts.draw < 0:
        raise JobError("--draw must be 0 or more")
    ctx.graphs(opts.connectivity_dir)
    ctx.check_names("inputs", opts.inputs)
    ctx.check_names("compare", opts.compare)
    taken: set[str] = set()
    with user_error(errors=(ReportInputError,)):
        inputs, skipped = classify(opts.inputs, False, taken)
        more, skipped_more = classify(opts.compare, True, taken)
    inputs += more
    if not inputs:
        raise JobError(f"--inputs={opts.inputs}: none of the matched files is a report input")
    for path in skipped + skipped_more:
        print(f"Not a report input, ignored: {path}")
    with user_error(errors=(ReportInputError,)):
        summaries = {i.label: read_json(i.path) for i in inputs if i.kind == SCORE_SUMMARY}
        band = keep_band(inputs)
    from pipelines.input_checks import refuse_continuous
    from vlnkit.reports.stats import DATASET

    for i in inputs:  # a dataset input must be an R2R-format file: a continuous one is refused with one line
        refuse = refuse_continuous(JOB.name) if i.kind == DATASET else None
        ctx.inputs("inputs" if not i.compare else "compare", i.path, refuse=refuse)
    with user_error(errors=(ReportInputError,)):
        plan = comparison_plan(ctx, opts, inputs)
        instructions = instruction_plan(ctx, opts, inputs)
    return ctx.execute(
        lambda p, out: build(p, out.folder, inputs, opts, summaries, band, plan, instructions),
        [],
        extra_outputs=(
            fileio.join(opts.output_dir, INDEX),
            fileio.join(opts.output_dir, TABLES),
            fileio.join(opts.output_dir, FIGURES_DIR, "*.png"),
            *([fileio.join(opts.output_dir, COMPARISON)] if plan else []),
            *([fileio.join(opts.output_dir, "instructions_*.html")] if instructions else []),
        ),
        outcome=outcome,
        declared=declared_outputs,
    )


def declared_outputs(summary: dict) -> dict[str, None]:
    """The page, its tables, each figure drawn and, when it was made, the comparison page."""
    out = dict.fromkeys([INDEX, TABLES, *summary["figures"], *(summary.get("instructions") or {}).get("pages", [])])
    if (summary.get("comparison") or {}).get("file"):
        out[COMPARISON] = None
    return out


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
