"""The report of a score_instructions run: three self-contained pages, linked from the report's index.

- `instructions_systems.html`: one forest plot per metric (each system's corpus score with its bootstrap
  interval, the human rows marked) and the leaderboard with its tie marks, as the job's summary has them;
- `instructions_agreement.html`: Kendall's tau-b of each metric against each wayfinding outcome (instance
  and system level, with intervals: the study's Table 3) and, per outcome, each system's metric against
  its followers' mean outcome (the study's Figure 3);
- `instructions_side_by_side.html`: for a sample of paths, the references and each system's instruction
  with its scores, beside the path drawn on its scan's graph.

Every number comes from the job's `summary.json` (metrics are whatever its `by_system` holds) or, for the
side by side and the mean outcomes, from rows the caller read (`transforms.instruction_report`). The
forest plots are the comparison page's (`comparison_page._interval_plot`), the drawings `plots.path_figure`,
the pages `html.render_page`.
"""

from __future__ import annotations

import math

from vlnkit.reports.comparison_page import PALETTE, REFERENCE_COLOUR, _interval_plot, _Series
from vlnkit.reports.html import FIGURES_DIR, Figure, Section, Table, render_page

SYSTEMS = "instructions_systems.html"
AGREEMENT = "instructions_agreement.html"
SIDE_BY_SIDE = "instructions_side_by_side.html"
PAGES = (SYSTEMS, AGREEMENT, SIDE_BY_SIDE)
HUMAN = "human"  # the job's --human_baseline row; a file's own human references are `human-...` (zhao2023)


def is_human(system: str) -> bool:
    """A row of human references: the job's leave-one-out row (`human`) or a file's own (`human-reference`).

    >>> is_human("human"), is_human("human-reference"), is_human("speaker-lstm_greedy")
    (True, True, False)
    """
    return system == HUMAN or system.startswith(HUMAN + "-")


def metrics_of(summary: dict) -> list[str]:
    """The metrics the run scored, in the summary's order (whatever they are: BLEU, METEOR, SPICE...).

    >>> metrics_of({"by_system": {"a": {"items": 3, "bleu_4": {"score": 0.1}, "cider_d": {"score": 0.2}}}})
    ['bleu_4', 'cider_d']
    """
    first = next(iter(summary.get("by_system", {}).values()), {})
    return [m for m, v in first.items() if isinstance(v, dict) and "score" in v]


def x100(value) -> str:
    """A metric as the field reports it (x100, one decimal); n/a when undefined."""
    return "n/a" if value is None or not math.isfinite(value) else f"{100 * value:.1f}"


def scored(entry: dict) -> str:
    """`score [low, high]` of one corpus score, x100.

    >>> scored({"score": 0.1234, "interval": [0.1, 0.15]})
    '12.3 [10.0, 15.0]'
    """
    ci = entry.get("interval")
    return x100(entry["score"]) + (f" [{x100(ci[0])}, {x100(ci[1])}]" if ci else "")


def signed(tau: dict | None) -> tuple[str, str]:
    """(tau-b, its interval) as the page prints them ("+0.256", "[-0.051, +0.385]")."""
    if not tau:
        return "n/a", ""
    ci = tau.get("interval")
    value = "n/a" if tau["tau_b"] is None or not math.isfinite(tau["tau_b"]) else f"{tau['tau_b']:+.3f}"
    return value, (f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")


def rank_cell(row: dict) -> str:
    """A leaderboard rank, "≈" before it when the system is not significantly different from the one above."""
    return ("\u2248" if row.get("tied_with_above") else "") + str(row["rank"])


# ----------------------------------------------------------------------------- the systems page
def systems_page(summary: dict, title: str) -> str:
    """The systems page's HTML: a forest plot per metric (systems in leaderboard order, so a row is the same
    system in every plot; human rows hollow and blue) and the leaderboard with every metric and tie mark."""
    metrics, board = metrics_of(summary), summary.get("leaderboard", [])
    order = [r["system"] for r in board] or sorted(summary["by_system"])
    by_system = summary["by_system"]
    colours = {s: REFERENCE_COLOUR if is_human(s) else PALETTE[0] for s in order}
    level = f"{100 * summary.get('confidence', 0.95):g}%"
    plots = []
    for m in metrics:
        series = [
            _Series(
                s + (" (human)" if is_human(s) else ""),
                colours[s],
                100 * by_system[s][m]["score"],
                by_system[s][m]["interval"] and [100 * v for v in by_system[s][m]["interval"]],
                not is_human(s),
            )
            for s in order
            if by_system[s][m]["score"] is not None and math.isfinite(by_system[s][m]["score"])
        ]
        plots.append(_interval_plot(f"{m.upper()} x100, corpus score and {level} interval", [("", series)], ""))
    rows = [
        [rank_cell(r), r["system"], "human" if is_human(r["system"]) else "generated", by_system[r["system"]]["items"]]
        + [scored(by_system[r["system"]][m]) for m in metrics]
        for r in board
    ]
    rank_by = summary.get("rank_by", "")
    leaderboard = Table(
        "table-leaderboard",
        f"Leaderboard by {rank_by} (x100, {level} intervals; \u2248: not significantly different from the row above)",
        ["rank", "system", "row", "instructions", *metrics],
        rows,
    )
    text = (
        f"{len(order)} systems, {summary.get('instructions', 0)} instructions scored. Corpus scores x100 with "
        f"{level} percentile intervals of a bootstrap over paths ({summary.get('bootstrap', 0)} replicates, seed "
        f"{summary.get('seed', 0)}); blue hollow dots are human rows (references scored against the others). "
        f"\u2248 before a rank: not significantly different on {rank_by} from the system ranked just above "
        "(paired bootstrap, Holm over the adjacent pairs), as in the job's leaderboard."
    )
    sections = [
        Section("forest", "Corpus scores per metric", text, markup=f'<div class="paths">{"".join(plots)}</div>'),
        Section("leaderboard", "Leaderboard", "", tables=[leaderboard]),
    ]
    return render_page(title, "Instruction generators scored by `python -m pipelines.score_instructions`.", sections)


# ----------------------------------------------------------------------------- the agreement page
def mean_outcomes(rows) -> dict[str, dict[str, float]]:
    """{system: {outcome: mean}} over (system, human_scores) pairs; an outcome a row lacks is not counted.

    >>> mean_outcomes([("a", {"ndtw": 0.5}), ("a", {"ndtw": 1.0, "score": 1}), ("b", {"score": 0})])
    {'a': {'ndtw': 0.75, 'score': 1.0}, 'b': {'score': 0.0}}
    """
    sums: dict[str, dict[str, list[float]]] = {}
    for system, scores in rows:
        for outcome, value in (scores or {}).items():
            if isinstance(value, (int, float)) and math.isfinite(value):
                acc = sums.setdefault(system, {}).setdefault(outcome, [0.0, 0])
                acc[0] += value
                acc[1] += 1
    return {s: {o: total / n for o, (total, n) in sorted(v.items())} for s, v in sorted(sums.items())}


def agreement_page(summary: dict, means: dict[str, dict[str, float]], title: str) -> tuple[str, dict[str, bytes]]:
    """The page and its figures ({relative file: PNG}): the tau-b table and one scatter figure per outcome."""
    from vlnkit.reports.plots import agreement_figure

    agreement = summary.get("agreement") or {}
    rows = []
    for outcome, by_metric in agreement.items():
        for metric, entry in by_metric.items():
            s, i = entry.get("system"), entry.get("instance")
            rows.append(
                [outcome, metric, *signed(s), (s or {}).get("n"), *signed(i), (i or {}).get("n")],
            )
    table = Table(
        "table-agreement",
        "Kendall's tau-b between each metric and each outcome (90% bootstrap intervals)",
        ["outcome", "metric", "system tau-b", "interval", "systems", "instance tau-b", "interval", "instructions"],
        rows,
    )
    human = {s for s in summary.get("by_system", {}) if is_human(s)}
    figures = []
    for outcome, by_metric in agreement.items():
        outcome_means = {s: m[outcome] for s, m in means.items() if outcome in m}
        if not outcome_means:
            continue
        png = agreement_figure(outcome, summary["by_system"], outcome_means, by_metric, human)
        caption = f"Each system's corpus score against its followers' mean {outcome}, one panel per metric"
        figures.append(Figure(f"{FIGURES_DIR}/instructions_agreement_{outcome}.png", caption, png))
    if agreement:
        text = (
            "System level: tau-b over the systems' corpus scores and their followers' mean outcomes, interval "
            "from resampling the paths every system shares; instance level: over the instructions, interval "
            "from resampling instructions (as the study's Table 3). The figures draw the system level: one point "
            "per system, whisker its bootstrap interval, stars the human rows (the study's Figure 3)."
        )
    else:
        text = "The run's files carry no human outcomes (`human_scores`): nothing to correlate."
    mean_rows = [[s, *[means[s].get(o) for o in agreement]] for s in sorted(means)]
    sections = [Section("agreement", "Which metric predicts wayfinding", text, tables=[table] if rows else [])]
    if figures:
        sections.append(Section("scatter", "Metrics against outcomes per system", "", figures))
    if mean_rows and agreement:
        sections.append(
            Section(
                "outcomes",
                "Mean outcomes per system",
                "",
                tables=[
                    Table("table-outcomes", "Followers' mean outcome per system", ["system", *agreement], mean_rows)
                ],
            )
        )
    page = render_page(title, "How well each text metric tracks whether people can follow the instructions.", sections)
    return page, {f.file: f.png for f in figures}


# ----------------------------------------------------------------------------- instructions side by side
def side_by_side_page(summary: dict, examples: list[dict], drawings: dict, title: str) -> str:
    """`examples`: per sampled path {"path_id", "scan", "references": [str], "rows": [{"system",
    "instr_id", "instruction", metrics..., "human_scores"}]}; `drawings` {path_id: Figure or a reason
    it could not be drawn}."""
    metrics = metrics_of(summary)
    outcomes = list(summary.get("agreement") or {})
    sections = []
    for k, ex in enumerate(examples):
        rows = [
            [f"reference {j + 1}", text, *[""] * (len(metrics) + len(outcomes))]
            for j, text in enumerate(ex["references"])
        ]
        for r in sorted(ex["rows"], key=lambda r: (not is_human(r["system"]), r["system"], r["instr_id"])):
            scores = r.get("human_scores") or {}
            rows.append(
                [r["system"], r["instruction"], *[x100(r.get(m)) for m in metrics], *[scores.get(o) for o in outcomes]]
            )
        table = Table(
            f"table-path-{k}",
            f"Path {ex['path_id']} ({ex.get('scan') or 'scan unknown'}): references and each system's instruction, "
            "its scores x100 and its follower's outcomes",
            ["system", "instruction", *metrics, *outcomes],
            rows,
        )
        drawing = drawings.get(ex["path_id"])
        figures = [drawing] if isinstance(drawing, Figure) else []
        text = "" if figures else f"Not drawn: {drawing or 'no path to draw'}."
        sections.append(Section(f"path-{k}", f"Path {ex['path_id']}", text, figures, [table], beside=True))
    intro = (
        f"{len(examples)} paths sampled by hash of (--seed, path id); per path the references, then every "
        "system's instruction with its per-instruction scores (x100) and, where the file has them, the "
        "outcome of the person who followed it; beside them, the path on its scan's graph."
    )
    return render_page(title, intro, sections)
