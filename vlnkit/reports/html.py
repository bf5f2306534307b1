"""One self-contained `index.html`: every figure embedded (and linked to its PNG), every table inline.

The page must open anywhere (a laptop, a bucket's web view, an e-mail attachment), so it has no
scripts, no external styles and no external images; each figure is also a link to its PNG file.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1250px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; padding-top: 0.6em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; } th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
.caption { font-weight: bold; margin-top: 1em; } .paths { display: flex; flex-wrap: wrap; gap: 8px; }
.paths figure { width: 400px; }
svg text { font-family: sans-serif; font-size: 11px; }
.beside { display: flex; gap: 16px; align-items: flex-start; } .beside figure { width: 340px; flex: none; }
.beside > div { overflow-x: auto; } .beside td:nth-child(2) { text-align: left; min-width: 280px; }
"""


@dataclass
class Figure:
    file: str  # path relative to index.html
    caption: str
    png: bytes


@dataclass
class Table:
    id: str
    caption: str
    columns: list[str]
    rows: list[list]


@dataclass
class Section:
    id: str
    title: str
    text: str = ""
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    gallery: bool = False  # small figures side by side (path drawings)
    markup: str = ""  # trusted HTML made here (inline SVG plots), after the text
    beside: bool = False  # figures beside tables (a path's drawing beside its instructions)


def _cell(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.0f}"
    return html.escape(str(value))


def _table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in t.rows)
    return (
        f'<p class="caption" id="{html.escape(t.id)}">{html.escape(t.caption)}</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _figure(f: Figure) -> str:
    data = base64.b64encode(f.png).decode("ascii")
    src = html.escape(f.file)
    return (
        f'<figure><a href="{src}"><img src="data:image/png;base64,{data}" alt="{html.escape(f.caption)}"></a>'
        f'<figcaption>{html.escape(f.caption)} (<a href="{src}">{src}</a>)</figcaption></figure>'
    )


def render_page(title: str, intro: str, sections: list[Section], links: list[tuple[str, str]] = ()) -> str:
    """The whole page: links to other pages of the report (`links`: (file, text) pairs), a contents list
    linking every section, figure file and table, then the sections."""
    toc = []
    for s in sections:
        items = [f'<li><a href="{html.escape(f.file)}">{html.escape(f.caption)}</a></li>' for f in s.figures]
        items += [f'<li><a href="#{html.escape(t.id)}">{html.escape(t.caption)}</a></li>' for t in s.tables]
        toc.append(f'<li><a href="#{html.escape(s.id)}">{html.escape(s.title)}</a><ul>{"".join(items)}</ul></li>')
    body = []
    for s in sections:
        figures = "".join(_figure(f) for f in s.figures)
        if s.gallery:
            figures = f'<div class="paths">{figures}</div>'
        text = f"<p>{html.escape(s.text)}</p>" if s.text else ""
        tables = "".join(_table(t) for t in s.tables)
        content = f'<div class="beside">{figures}<div>{tables}</div></div>' if s.beside else figures + tables
        body.append(
            f'<section><h2 id="{html.escape(s.id)}">{html.escape(s.title)}</h2>{text}{s.markup}{content}</section>'
        )
    pages = "".join(
        f'<p class="page-link"><a href="{html.escape(file)}"><b>{html.escape(text)}</b></a></p>' for file, text in links
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(intro)}</p>{pages}"
        f"<nav><ul>{''.join(toc)}</ul></nav>{''.join(body)}</body></html>\n"
    )


# --------------------------------------------------------------------------- the report
FIGURES_DIR = "figures"


def _fig_path(name: str) -> str:
    return f"{FIGURES_DIR}/{name}.png"


def languages(counts: dict) -> str:
    """A dataset's instructions per language tag, from its `instructions.<tag>` counts ("en-IN 3, hi-IN 1").

    >>> languages({"instructions": 4, "instructions.hi-IN": 1, "instructions.en-IN": 3, "paths": 2})
    'en-IN 3, hi-IN 1'
    """
    prefix = "instructions."
    return ", ".join(f"{k[len(prefix) :]} {n}" for k, n in sorted(counts.items()) if k.startswith(prefix))


def _dataset_section(datasets: dict) -> Section:
    from vlnkit.reports.plots import dataset_figure

    rows = []
    for label, d in datasets.items():
        q, c = d["quantities"], d["counts"]

        def mean(name, key="mean", q=q):
            return (q.get(name) or {}).get(key)

        rows.append(
            [
                label,
                c.get("paths", 0),
                c.get("instructions", 0),
                mean("steps"),
                mean("steps", "median"),
                mean("steps", "max"),
                mean("length_m"),
                mean("shortest_m"),
                mean("words"),
                mean("words", "max"),
                languages(c),
            ]
        )
    table = Table(
        "table-dataset",
        "Dataset statistics (means unless stated)",
        [
            "dataset",
            "paths",
            "instructions",
            "steps",
            "median steps",
            "max steps",
            "length (m)",
            "start-goal distance (m)",
            "words",
            "max words",
            "instructions per language",
        ],
        rows,
    )
    caption = "Steps, path length, start-to-goal shortest distance and instruction length, as fractions per dataset"
    return Section(
        "datasets",
        "Dataset statistics",
        "Histograms share their bins across data sets, so shapes compare directly (e.g. original against extended).",
        [Figure(_fig_path("dataset_statistics"), caption, dataset_figure(datasets))],
        [table],
    )


def _score_section(score_sets: dict, summaries: dict) -> Section:
    from vlnkit.reports.plots import score_histograms, score_means_figure
    from vlnkit.reports.stats import METRIC_WIDTHS, RATE_METRICS

    columns_of = {
        **{k: v["quantities"] for k, v in score_sets.items()},
        **{k: {m: {"mean": v} for m, v in s.get("metrics", {}).items()} for k, s in summaries.items()},
    }
    labels = list(columns_of)
    rows = []
    for m in METRIC_WIDTHS:
        scale = 100.0 if m in RATE_METRICS else 1.0
        means = [(columns_of[lab].get(m) or {}).get("mean") for lab in labels]
        row = [f"{m.upper()} ({'%' if m in RATE_METRICS else 'm'})", *[None if v is None else scale * v for v in means]]
        if len(labels) == 2:
            row.append(None if None in means else scale * (means[1] - means[0]))
        rows.append(row)
    counts = ["episodes"]
    for lab in labels:
        counts.append(score_sets[lab]["counts"].get("episodes") if lab in score_sets else summaries[lab].get("count"))
    rows.insert(0, counts + ([None] if len(labels) == 2 else []))
    columns = ["metric", *labels] + ([f"{labels[1]} - {labels[0]}"] if len(labels) == 2 else [])
    tables = [Table("table-scores", "Mean scores per score set", columns, rows)]
    nulls = [
        [lab, *[(score_sets[lab]["quantities"].get(m) or {}).get("nulls", 0) for m in METRIC_WIDTHS]]
        for lab in score_sets
    ]
    if nulls:
        tables.append(
            Table(
                "table-score-nulls",
                "Null (unreachable) scores per metric",
                ["score set", *[m.upper() for m in METRIC_WIDTHS]],
                nulls,
            )
        )
    figures = []
    if score_sets:
        figures.append(
            Figure(
                _fig_path("score_distributions"),
                "Per-episode distribution of every metric, one series per score set",
                score_histograms(score_sets),
            )
        )
    if len(labels) > 1:
        means = {lab: {"quantities": columns_of[lab]} for lab in labels}
        figures.append(
            Figure(
                _fig_path("score_comparison"),
                "Mean of every metric, score sets side by side",
                score_means_figure(means),
            )
        )
    return Section("scores", "Score distributions", "", figures, tables)


def _perturbation_section(sets: dict) -> Section:
    from vlnkit.reports.plots import perturbations_figure

    counts = {lab: s["counts"] for lab, s in sets.items()}
    names = sorted({n for c in counts.values() for n in c})
    rows = [[n, *[counts[lab].get(n, 0) for lab in counts]] for n in names]
    rows.append(["total", *[sum(c.values()) for c in counts.values()]])
    table = Table("table-perturbations", "Perturbations per family/method", ["family/method", *counts], rows)
    fig = Figure(_fig_path("perturbations"), "Perturbed records per family and method", perturbations_figure(counts))
    return Section("perturbations", "Perturbations", "", [fig], [table])


def _paraphrase_section(sets: dict, keep_band) -> Section:
    from vlnkit.reports.plots import paraphrases_figure

    rows = []
    for lab, s in sets.items():
        langs = sorted({n.split("/")[0] for n in s["counts"]})
        for lang in langs:
            n, k = s["counts"].get(f"{lang}/rows", 0), s["counts"].get(f"{lang}/kept", 0)
            rows.append([lab, lang, n, k, 100.0 * k / n if n else None])
        bleu = s["quantities"].get("bleu") or {}
        total = sum(s["counts"].get(f"{lang}/rows", 0) for lang in langs)
        kept = sum(s["counts"].get(f"{lang}/kept", 0) for lang in langs)
        rows.append([lab, "all", total, kept, 100.0 * kept / total if total else None])
        rows.append([lab, "BLEU mean / median", bleu.get("mean"), bleu.get("median"), None])
    table = Table(
        "table-paraphrases", "Paraphrases per pivot language", ["output", "language", "rows", "kept", "kept (%)"], rows
    )
    fig = Figure(
        _fig_path("paraphrases"),
        f"Paraphrases per pivot language; BLEU against the original, keep band [{keep_band[0]:g}, "
        f"{keep_band[1]:g}] shaded",
        paraphrases_figure(sets, keep_band),
    )
    return Section("paraphrases", "Paraphrases", "", [fig], [table])


def _paths_section(episodes: list, graphs) -> tuple[Section, list[dict]]:
    from vlnkit.reports.plots import path_figure
    from vlnkit.reports.stats import drawing_spec

    figures, failed = [], []
    for k, episode in enumerate(episodes):
        ref = episode["reference"]
        try:
            graph = graphs.get(ref["scan"])
            spec = drawing_spec(episode, graph)
            png = path_figure(graph, spec)
        except ValueError as exc:  # GraphError: unknown scan or viewpoint
            failed.append({"scan": ref["scan"], "path_id": ref["path_id"], "reason": str(exc)})
            continue
        what = "reference (blue), agent (orange), shared part (green)" if spec.get("agent") else "reference path"
        connected = len(spec.get("connector") or ()) > 1
        if spec.get("first"):
            what = "source paths (blue, purple)" + (
                " and connecting segment (red, dashed)" if connected else ", meeting"
            )
        elif connected:
            what = "joined path with its connecting segment (red, dashed)"
        figures.append(Figure(_fig_path(f"path_{k:02d}"), f"{spec['title'].splitlines()[0]}: {what}", png))
    text = (
        "Sampled episodes on their scan's navigation graph seen from above (pale); start circle, goal star. "
        "The sample depends only on --seed and the episodes' ids."
    )
    return Section("paths", "Path drawings", text, figures, [], gallery=True), failed


def assemble(
    tables: dict,
    episodes: list,
    graphs,
    *,
    summaries: dict | None = None,
    keep_band=(0.25, 0.7),
    inputs: list[list] | None = None,
    title: str = "vlnkit report",
    order: list[str] | None = None,
    links: list[tuple[str, str]] = (),
):
    """Figures and page of a report. Returns ({relative file: PNG bytes}, index.html text, notes).

    `tables` is `report_stats.finalize` output; `episodes` the sampled drawings; `graphs.get(scan)`
    gives NavGraphs; `summaries` maps score-set labels to summary.json contents given without
    episode shards; `inputs` rows (file, kind, label, group) are listed in the page; `order` lists
    labels in the order their series are drawn (others follow by name); `links` (file, text) name other
    pages of the report (the comparison page), linked at the top.
    """
    summaries = summaries or {}
    rank = {label: k for k, label in enumerate(order or [])}

    def ordered(d: dict) -> dict:  # series in input order, so colours and legends never depend on run order
        return {k: d[k] for k in sorted(d, key=lambda k: (rank.get(k, len(rank)), k))}

    tables = {section: ordered(labels) for section, labels in tables.items()}
    summaries = ordered(summaries)
    sections, notes = [], {}
    if tables.get("dataset"):
        sections.append(_dataset_section(tables["dataset"]))
    if tables.get("scores") or summaries:
        sections.append(_score_section(tables.get("scores", {}), summaries))
    if tables.get("perturbations"):
        sections.append(_perturbation_section(tables["perturbations"]))
    if tables.get("paraphrases"):
        sections.append(_paraphrase_section(tables["paraphrases"], keep_band))
    if episodes:
        section, failed = _paths_section(episodes, graphs)
        sections.append(section)
        notes["drawings_failed"] = failed
    dead = tables.get("dead_letters", {})
    rows = [[stage, d["counts"].get("records", 0)] for stage, d in sorted(dead.items())]
    extra = [
        Table(
            "table-dead-letters",
            "Records that could not be used (see dead_letter-*.jsonl)",
            ["stage", "records"],
            rows or [["(none)", 0]],
        )
    ]
    if inputs:
        extra.insert(0, Table("table-inputs", "Inputs", ["file", "kind", "label", "group"], inputs))
    sections.append(Section("inputs", "Inputs and dead letters", "", [], extra))
    files = {f.file: f.png for s in sections for f in s.figures}
    page = render_page(
        title,
        "Figures and tables made by `python -m pipelines.report` from the outputs listed at "
        "the end. Click a figure for its PNG file.",
        sections,
        links,
    )
    return files, page, notes
