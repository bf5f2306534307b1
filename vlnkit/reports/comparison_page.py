"""The agent comparison page: one self-contained HTML file (inline CSS, SVG and script; no network).

What it shows, from per-episode scores of several agents on one dataset:
- the leaderboard, ranked as the score job ranks it (SPL, then SR), with bootstrap intervals
  (`vlnkit.comparison`) and tie marks ("≈" before a rank, as in the score job's leaderboard.md: not
  significantly different on SPL from the agent ranked just above);
- a forest plot of every agent's difference from the baseline agent, one panel per headline metric;
- breakdowns (language, scan, reference path length) of the first metric shown (SR), with intervals;
- a per-episode table, sortable and filterable by agent, scan and outcome; choosing a row draws the
  reference path and every agent's path of that episode on the scan's graph seen from above.

Static parts (tables, plots) are rendered here in Python as HTML and SVG; only the episode table and
its drawing run in the browser, from one JSON block. The page reuses `vlnkit.reports.html`'s style.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

import numpy as np

from vlnkit.comparison import HEADLINE, LOWER_IS_BETTER, RANK_BY, agent_sums, breakdown, compare, rank
from vlnkit.comparison.config import BootstrapConfig
from vlnkit.comparison.episodes import LENGTH_EDGES, columns, length_buckets, length_labels
from vlnkit.comparison.paired import adjacent_ties
from vlnkit.evaluation import pack_viewpoints
from vlnkit.evaluation.common import RATE
from vlnkit.evaluation.leaderboard import OwnMetric, shown_as
from vlnkit.hashing import stable_hash
from vlnkit.reports.comparison_inputs import page_metrics
from vlnkit.reports.html import STYLE

__all__ = ["comparison_page", "continuous_comparison_page", "PALETTE"]

PALETTE = ("#d95f02", "#7570b3", "#1b9e77", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")
REFERENCE_COLOUR = "#1f5fbf"
LENGTH_LABELS = length_labels(LENGTH_EDGES)
MAX_TABLE_EPISODES = 3000  # episodes (of all agents) embedded for the table; more are sampled by hash
EUCLIDEAN = "_euclidean"  # a continuous episode's straight-line bound of a geodesic metric (`sr_euclidean`, ...)
CONTINUOUS_METRICS = (*HEADLINE, *(m + EUCLIDEAN for m in ("sr", "spl", "sdtw", "ne")))
CONTINUOUS_RANK_BY = (*RANK_BY, *(m + EUCLIDEAN for m in RANK_BY))  # geodesic first, then the bounds

PAGE_STYLE = """
.lb td.tie { color: #b00; font-weight: bold; } .muted { color: #666; font-size: 0.85em; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
#controls label { margin-right: 1em; } #episodes { max-height: 420px; overflow-y: auto; display: inline-block; }
#episodes table { margin: 0; } #episodes th { cursor: pointer; position: sticky; top: 0; }
#episodes tr.sel td { background: #ffe9a8; } #episodes tbody tr:hover td { background: #f5f5f5; cursor: pointer; }
#viewer { display: flex; gap: 16px; align-items: flex-start; flex-wrap: wrap; }
#drawing { border: 1px solid #ccc; background: #fff; } .legend span { display: inline-block; margin-right: 1em; }
"""


def _base(metric: str) -> str:
    """A straight-line bound's metric (`sr_euclidean` -> `sr`): its unit and direction are the metric's."""
    return metric.removesuffix(EUCLIDEAN)


def _fmt(unit: str, value) -> str:
    """A value of a metric shown in `unit` (`vlnkit.evaluation.leaderboard.shown_as`): a rate in %."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "n/a"
    return f"{100 * value:.1f}" if unit == RATE else f"{value:.2f}"


def _scale(unit: str) -> float:
    return 100.0 if unit == RATE else 1.0


def _round_ticks(low: float, high: float, most: int = 5) -> np.ndarray:
    """Round axis values (multiples of 1, 2 or 5 times a power of ten) inside [low, high], `most` + 1 at most.

    >>> _round_ticks(-3.2, 61.0).tolist(), _round_ticks(0.42, 0.47).tolist()
    ([0.0, 20.0, 40.0, 60.0], [0.42, 0.43, 0.44, 0.45, 0.46, 0.47])
    """
    span = high - low
    if not span > 0:
        return np.array([low])
    power = 10.0 ** np.floor(np.log10(span / most))
    step = next(f * power for f in (1, 2, 5, 10) if span / (f * power) <= most)
    return np.round(np.arange(np.ceil(low / step - 1e-9), np.floor(high / step + 1e-9) + 1) * step, 10) + 0.0


@dataclass
class _Series:
    label: str
    colour: str
    value: float
    interval: list | None
    filled: bool = True


def _interval_plot(title: str, groups: list[tuple[str, list[_Series]]], unit: str, zero: bool = False) -> str:
    """A horizontal dot-and-whisker SVG: one block of rows per group, one row per series."""
    values = [v for _, series in groups for s in series for v in [s.value, *(s.interval or [])] if v is not None]
    if zero:
        values.append(0.0)
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (high - low) * 0.08 or 1.0
    low, high = low - pad, high + pad
    longest = max((len(s.label) for _, series in groups for s in series), default=0)
    left, width, row_h = max(150, 24 + 6 * longest), 300, 14  # room for the longest label at 11px
    n_rows = sum(len(s) for _, s in groups) + len(groups)
    height = 40 + n_rows * row_h

    def x(v: float) -> float:
        return left + (v - low) / (high - low) * width

    parts = [f'<text x="4" y="14" font-weight="bold">{html.escape(title)}</text>']
    ticks = _round_ticks(low, high)
    for t in ticks:
        parts.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="22" y2="{height - 14}" stroke="#eee"/>')
        parts.append(f'<text x="{x(t):.1f}" y="{height - 2}" text-anchor="middle">{t:.3g} {unit}</text>')
    if zero:
        parts.append(f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="22" y2="{height - 14}" stroke="#444"/>')
    y = 28
    for label, series in groups:
        parts.append(f'<text x="4" y="{y + 9}" font-weight="bold">{html.escape(label)}</text>')
        y += row_h
        for s in series:
            cy = y + 5
            parts.append(f'<text x="14" y="{cy + 4}">{html.escape(s.label)}</text>')
            if s.interval:
                lo, hi = x(s.interval[0]), x(s.interval[1])
                parts.append(
                    f'<line x1="{lo:.1f}" x2="{hi:.1f}" y1="{cy}" y2="{cy}" stroke="{s.colour}" stroke-width="2"/>'
                )
            fill = s.colour if s.filled else "#fff"
            parts.append(
                f'<circle cx="{x(s.value):.1f}" cy="{cy}" r="4" fill="{fill}" stroke="{s.colour}" stroke-width="1.5">'
                f"<title>{html.escape(s.label)}: {s.value:.4g} {unit}"
                + (f" [{s.interval[0]:.4g}, {s.interval[1]:.4g}]" if s.interval else "")
                + "</title></circle>"
            )
            y += row_h
    return f'<svg width="{left + width + 20}" height="{height}" role="img">{"".join(parts)}</svg>'


def _leaderboard(sums, order, tie, metrics, confidence, shown) -> str:
    head = "".join(f"<th>{shown[m][0]} ({shown[m][1]})</th>" for m in metrics)
    body = []
    for k, agent in enumerate(order):
        cells = []
        for m in metrics:
            ci = sums[agent].interval(m, confidence)
            unit = shown[m][1]
            span = f' <span class="muted">[{_fmt(unit, ci[0])}, {_fmt(unit, ci[1])}]</span>' if ci else ""
            cells.append(f"<td>{_fmt(unit, sums[agent].mean(m))}{span}</td>")
        rank_cell = (
            f'<td class="tie" title="not significantly different from the agent above">\u2248{k + 1}</td>'
            if tie.get(agent)
            else f"<td>{k + 1}</td>"
        )
        body.append(
            f"<tr>{rank_cell}<td>{html.escape(agent)}</td>"
            f"<td>{max(sums[agent].counts.values(), default=0)}</td>{''.join(cells)}</tr>"
        )
    return (
        f'<table class="lb"><thead><tr><th>rank</th><th>agent</th><th>episodes</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _episode_data(cols, references, graphs, metrics, colours, max_episodes) -> dict:
    """The JSON the table and drawings read: compact rows, node-index paths and per-scan graphs."""
    ids = cols["instr_id"].astype(str)
    distinct = sorted(set(ids.tolist()), key=lambda i: stable_hash(i))[:max_episodes]
    keep = np.isin(ids, distinct)
    scans = sorted(set(cols["scan"][keep].tolist()))
    agents = list(colours)
    out = {"metrics": list(metrics), "agents": agents, "colours": [colours[a] for a in agents], "scans": scans}
    out["graphs"], out["refs"], out["rows"] = {}, {}, []
    for scan in scans:
        graph = graphs[scan]
        xy = np.round(graph.positions[:, :2], 2)
        out["graphs"][scan] = {"x": xy[:, 0].tolist(), "y": xy[:, 1].tolist(), "edges": graph.edges.ravel().tolist()}
        rows = np.flatnonzero(keep & (cols["scan"] == scan))
        paths, lengths = pack_viewpoints(graph.index, [list(p) for p in cols["path"][rows]])
        flat = [p[:n].tolist() for p, n in zip(paths, lengths)]
        ref_ids = sorted(set(ids[rows].tolist()))
        ref_paths, ref_len = pack_viewpoints(graph.index, [references[i] for i in ref_ids])
        out["refs"].update({i: p[:n].tolist() for i, p, n in zip(ref_ids, ref_paths, ref_len)})
        sr = cols["sr"][rows] if "sr" in cols else np.full(len(rows), np.nan)
        for r, path, success in zip(rows.tolist(), flat, sr.tolist()):
            values = [None if not np.isfinite(cols[m][r]) else round(float(cols[m][r]), 4) for m in metrics]
            outcome = "unscored" if not np.isfinite(success) else ("success" if success > 0 else "failure")
            out["rows"].append([ids[r], scans.index(scan), agents.index(cols["agent"][r]), outcome, *values, path])
    return out


def _top_down(points) -> list[list[float]]:
    """Habitat positions [x, y, z] (y up) seen from above as [x, -z], which is Matterport's (x, y): the plane
    the graph's nodes are drawn in (Habitat (x, y, z) = Matterport (x, z, -y))."""
    xyz = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    return np.round(np.stack([xyz[:, 0], -xyz[:, 2]], axis=1), 2).tolist()


def _continuous_episode_data(cols, references, graphs, metrics, colours, max_episodes) -> dict:
    """The JSON the table and drawings read for continuous episodes: rows with each agent's positions seen
    from above (null for an agent given as simulator results only), each episode's reference points and
    ground-truth path, and the graph of each scan that has one."""
    ids = cols["instr_id"].astype(str)
    distinct = sorted(set(ids.tolist()), key=lambda i: stable_hash(i))[:max_episodes]
    keep = np.isin(ids, distinct)
    scans = sorted(set(cols["scan"][keep].tolist()))
    agents = list(colours)
    out = {"continuous": True, "metrics": list(metrics), "agents": agents, "colours": [colours[a] for a in agents]}
    out.update({"scans": scans, "graphs": {}, "refs": {}, "rows": []})
    for scan in scans:
        graph = graphs.get(scan)
        if graph is not None:
            xy = np.round(graph.positions[:, :2], 2)
            out["graphs"][scan] = {
                "x": xy[:, 0].tolist(),
                "y": xy[:, 1].tolist(),
                "edges": graph.edges.ravel().tolist(),
            }
    success = cols["sr"] if "sr" in cols else np.full(len(ids), np.nan)
    if "sr" + EUCLIDEAN in cols:
        success = np.where(np.isfinite(success), success, cols["sr" + EUCLIDEAN])
    for r in np.flatnonzero(keep).tolist():
        ref = references[ids[r]]
        if ids[r] not in out["refs"]:
            gt = ref.get("gt")
            out["refs"][ids[r]] = {"r": _top_down(ref["reference"]), "g": _top_down(gt) if gt is not None else None}
        values = [None if not np.isfinite(cols[m][r]) else round(float(cols[m][r]), 4) for m in metrics]
        outcome = "unscored" if not np.isfinite(success[r]) else ("success" if success[r] > 0 else "failure")
        positions = cols["positions"][r]
        path = _top_down(positions) if positions is not None and len(positions) else None
        row = [ids[r], scans.index(cols["scan"][r]), agents.index(cols["agent"][r]), outcome, *values, path]
        out["rows"].append(row)
    return out


def _geodesic_first(means: dict, ranking) -> list[str]:
    """The score job's leaderboard order for a continuous dataset: agents with the first ranking metric
    (a geodesic SPL) by `ranking`, then the others by the straight-line bounds in it (SPL_euclidean,
    SR_euclidean), so a bound is never ranked against a geodesic number."""
    first = [a for a, v in means.items() if v.get(ranking[0]) is not None]
    rest = [a for a in means if a not in first]
    bounds = tuple(m for m in ranking if m.endswith(EUCLIDEAN))
    ranked = rank({a: means[a] for a in first}, ranking) if first else []
    return ranked + (rank({a: means[a] for a in rest}, bounds) if rest and bounds else sorted(rest))


def continuous_comparison_page(
    episodes,
    references: dict[str, dict],
    graphs,
    *,
    metrics=CONTINUOUS_METRICS,
    rank_by=CONTINUOUS_RANK_BY,
    bootstrap: BootstrapConfig | None = None,
    title: str = "Agent comparison",
    max_episodes: int = MAX_TABLE_EPISODES,
) -> str:
    """The page of a continuous (VLN-CE) dataset's scored episodes: the same leaderboard, differences and
    breakdowns as `comparison_page`, and each episode drawn from above (Habitat x, -z): its reference
    points, its ground-truth path and every agent's positions, over the scan's navigation graph.

    `episodes`: the score job's `continuous_episode_scores` rows (agent, instr_id, scan, positions, the
    metric columns, optionally language); `references`: {instr_id: {"reference": reference points,
    "gt": ground-truth locations or None, "length": the reference path's length in metres}};
    `graphs`: {scan: NavGraph or None} (or anything with `.get(scan)`): a scan without a graph is drawn
    without one. A metric no agent has is left out (a result file has no CLS, positions alone no SR);
    `*_euclidean` metrics keep their names. Agents with a geodesic SPL are ranked first (SPL, then SR),
    the others after them by their straight-line bounds, as the score job's leaderboard ranks them.

    >>> table = {"agent": ["x", "y"], "instr_id": ["1_0", "1_0"], "scan": ["s", "s"], "sr": [1.0, 0.0],
    ...          "positions": [[[0.0, 0, 0], [2.0, 0, 0]], None]}
    >>> refs = {"1_0": {"reference": [[0.0, 0, 0], [2.0, 0, 0]], "gt": [[0.0, 0, 0], [2.0, 0, 0]], "length": 2.0}}
    >>> page = continuous_comparison_page(table, refs, {}, bootstrap=BootstrapConfig(replicates=40))
    >>> page.startswith("<!DOCTYPE html>"), '"continuous":true' in page, '"failure",0.0,null]' in page  # y: no positions
    (True, True, True)
    """
    cols = columns(episodes)
    metrics = [m for m in metrics if m in cols and np.isfinite(np.asarray(cols[m], dtype=np.float64)).any()]
    if not metrics:
        raise ValueError(f"the episode table has none of the metrics {tuple(CONTINUOUS_METRICS)}")
    for m in metrics:
        cols[m] = np.asarray(cols[m], dtype=np.float64)
    graphs = {scan: graphs.get(scan) for scan in sorted(set(cols["scan"].tolist()))}
    length = np.array([references[i]["length"] for i in cols["instr_id"].astype(str)], dtype=np.float64)
    drawn = [s for s, g in graphs.items() if g is not None]
    note = (
        "Continuous episodes (VLN-CE), drawn from above: Habitat (x, -z), which is Matterport (x, y), the plane of "
        "the scan's navigation graph (grey; "
        + (f"{len(drawn)} of {len(graphs)} scans have one" if len(drawn) < len(graphs) else "every scan has one")
        + "). Blue dots: the episode's reference points; blue line: its ground-truth path; one line per agent: "
        "its positions as scored. An agent given as simulator results only has no positions to draw (its "
        "metrics are the simulator's). "
    )
    if any(m.endswith(EUCLIDEAN) for m in metrics):
        note += (
            "*_EUCLIDEAN: straight-line bounds of the geodesic metrics (NE a lower bound, SR, SPL, SDTW upper "
            "bounds), not comparable with geodesic numbers; agents without a geodesic SPL are ranked after the others."
        )

    def data(colours):
        return _continuous_episode_data(cols, references, graphs, metrics, colours, max_episodes)

    return _render(
        cols, length, metrics, rank_by, bootstrap or BootstrapConfig(), title, data, note.strip(), _geodesic_first
    )


def comparison_page(
    episodes,
    references: dict[str, list[str]],
    graphs,
    *,
    metrics=None,
    own: dict[str, OwnMetric] | None = None,
    rank_by=RANK_BY,
    bootstrap: BootstrapConfig | None = None,
    title: str = "Agent comparison",
    max_episodes: int = MAX_TABLE_EPISODES,
) -> str:
    """The page's HTML text.

    `episodes`: the score job's episode table (pyarrow Table or dict of columns) with `agent`,
    `instr_id`, `scan`, `path` (viewpoint ids as scored), the metric columns and optionally
    `language`; `references`: {instr_id: reference viewpoint ids}; `graphs`: {scan: NavGraph} (or
    anything with `.get(scan)`), whose poses place the nodes. `metrics` default to the headline ones and
    the task's own that its leaderboard shows (`own`, as its score summary declares them: their labels and
    units, `vlnkit.evaluation.leaderboard.own_metrics`). Agents are ranked as the score job's
    leaderboard ranks them (`rank_by`: SPL, then SR); tie marks and the breakdown plots use the first
    of those. `baseline` defaults to the agent ranked last. The table holds at most `max_episodes` episodes (a fixed sample by
    stable hash of their ids); every statistic uses all episodes.

    >>> import numpy as np
    >>> from vlnkit.navigation.graph import NavGraph
    >>> line = NavGraph("s", ("a", "b", "c"), np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]), np.array([[0, 1], [1, 2]]))
    >>> table = {"agent": ["x", "y"], "instr_id": ["1_0", "1_0"], "scan": ["s", "s"],
    ...          "path": [["a", "b", "c"], ["a"]], "sr": [1.0, 0.0]}
    >>> page = comparison_page(table, {"1_0": ["a", "b", "c"]}, {"s": line}, metrics=("sr",),
    ...                        bootstrap=BootstrapConfig(replicates=40))
    >>> page.startswith("<!DOCTYPE html>"), page.count("<svg")  # forest, length and scan breakdowns, drawing
    (True, 4)
    """
    cols = columns(episodes)
    metrics = [m for m in (page_metrics(own) if metrics is None else metrics) if m in cols]
    if not metrics:
        raise ValueError(f"the episode table has none of the metrics {tuple(HEADLINE)}")
    graphs = {scan: (graphs.get(scan)) for scan in sorted(set(cols["scan"].tolist()))}
    length = np.empty(len(cols["instr_id"]))
    for scan, graph in graphs.items():  # reference path lengths (metres), one numpy pass per scan
        rows = np.flatnonzero(cols["scan"] == scan)
        paths, n = pack_viewpoints(graph.index, [references[i] for i in cols["instr_id"][rows].astype(str)])
        steps = graph.distances[paths[:, :-1], paths[:, 1:]] * (np.arange(1, paths.shape[1]) < n[:, None])
        length[rows] = steps.sum(axis=1)

    def data(colours):
        return _episode_data(cols, references, graphs, metrics, colours, max_episodes)

    return _render(cols, length, metrics, rank_by, bootstrap or BootstrapConfig(), title, data, own=own)


def _render(
    cols, length, metrics, rank_by, bootstrap, title, episode_data, note: str = "", ranked=None, own=None
) -> str:
    """The page from the episode columns, each row's reference length (metres) and `episode_data(colours)`,
    the JSON the table and drawing read; `ranked(sums, ranking)` orders the agents (default `rank`); `own`
    labels the task's own metrics and gives their units."""
    confidence, baseline = bootstrap.confidence, bootstrap.baseline
    shown = {m: shown_as(m, own) for m in metrics}  # (label, unit) of each metric
    cols["length_bucket"] = length_buckets(length)
    options = {"replicates": bootstrap.replicates, "seed": bootstrap.seed, "unit": bootstrap.unit}
    sums = agent_sums(cols, metrics, **options)
    ranking = tuple(m for m in rank_by if m in metrics) or (metrics[0],)
    means = {a: {m: s.mean(m) for m in metrics} for a, s in sums.items()}
    order = (
        ranked(means, ranking) if ranked else rank({a: {m: v[m] for m in ranking} for a, v in means.items()}, ranking)
    )
    headline = metrics[0]  # the breakdowns' metric
    colours = {a: PALETTE[k % len(PALETTE)] for k, a in enumerate(sums)}
    rows = compare(cols, metrics, confidence=confidence, **options) if len(sums) > 1 else []
    tie = adjacent_ties(order, rows, ranking[0], confidence)  # the score job's rule: Holm over adjacent pairs
    baseline = baseline or order[-1]
    against = compare(cols, metrics, baseline=baseline, confidence=confidence, **options) if len(sums) > 1 else []

    forest = []
    for m in metrics:
        series = [
            _Series(
                r["a"],
                colours[r["a"]],
                _scale(shown[m][1]) * r["difference"],
                r["interval"] and [_scale(shown[m][1]) * v for v in r["interval"]],
                r["significant"],
            )
            for r in against
            if r["metric"] == m and r["difference"] is not None
        ]
        better = "lower" if _base(m) in LOWER_IS_BETTER else "higher"
        forest.append(
            _interval_plot(
                f"{shown[m][0]}: agent - {baseline} ({better} is better)", [("", series)], shown[m][1], zero=True
            )
        )
    breakdowns = []
    for by, label in (("language", "language"), ("length_bucket", "reference length"), ("scan", "scan")):
        if by not in cols:
            continue
        found = breakdown(cols, by, [headline], confidence=confidence, **options)
        if by == "length_bucket":
            found.sort(key=lambda r: LENGTH_LABELS.index(r["group"]))
        groups: dict[str, list[_Series]] = {}
        for r in found:
            scale = _scale(shown[headline][1])
            interval = r[f"{headline}_ci"] and [scale * v for v in r[f"{headline}_ci"]]
            value = r[headline]
            if value is not None:
                groups.setdefault(f"{r['group']}", []).append(
                    _Series(f"{r['agent']} (n={r['episodes']})", colours[r["agent"]], scale * value, interval)
                )
        headline_label = shown[headline][0]
        breakdowns.append(_interval_plot(f"{headline_label} by {label}", list(groups.items()), shown[headline][1]))

    data = {**episode_data(colours), "labels": [shown[m][0] for m in metrics], "units": [shown[m][1] for m in metrics]}
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    n_ids = len(set(cols["instr_id"].astype(str).tolist()))
    level = f"{100 * confidence:g}%"
    intro = (
        f"{len(sums)} agents, {n_ids} episodes. Intervals are {level} percentile intervals of a Poisson bootstrap "
        f"({bootstrap.replicates} replicates, seed {bootstrap.seed}, resampling unit: {bootstrap.unit}); every agent's episode gets the same "
        f"weights, so differences are paired. \u2248 before a rank: not significantly different on "
        f"{ranking[0].upper()} from the agent ranked just above (bootstrap p-value, Holm-corrected over the adjacent pairs of the ranking, "
        f"at {1 - confidence:.2g}). Intervals assume independent episodes: instructions of one path share a "
        f"target (use the path unit), and on small subsets (tens of episodes) intervals are too narrow and "
        f"unstable."
        if bootstrap.replicates
        else f"{len(sums)} agents, {n_ids} episodes. No intervals, differences or tie marks: bootstrap turned off "
        "(0 replicates)."
    )
    legend_rows = "".join(f'<span style="color:{c}">&#9632; {html.escape(a)}</span>' for a, c in colours.items())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}{PAGE_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(intro)}</p>"
        + (f'<p id="note">{html.escape(note)}</p>' if note else "")
        + '<nav><ul><li><a href="#leaderboard">Leaderboard</a></li><li><a href="#forest">Differences against '
        f'{html.escape(baseline)}</a></li><li><a href="#breakdowns">Breakdowns</a></li>'
        '<li><a href="#episode-table">Episodes</a></li></ul></nav>'
        f'<section><h2 id="leaderboard">Leaderboard</h2>{_leaderboard(sums, order, tie, metrics, confidence, shown)}</section>'
        f'<section><h2 id="forest">Differences against {html.escape(baseline)}</h2>'
        f'<p class="muted">Filled: significant after Holm\'s correction; hollow: not. Whiskers: {level} intervals '
        f'of the paired difference.</p><div class="plots">{"".join(forest)}</div></section>'
        f'<section><h2 id="breakdowns">Breakdowns</h2><p class="legend">{legend_rows}</p>'
        f'<div class="plots">{"".join(breakdowns)}</div></section>'
        '<section><h2 id="episode-table">Episodes</h2><div id="controls"></div><div id="viewer">'
        '<div id="episodes"></div><div><svg id="drawing" width="520" height="440"></svg>'
        '<div id="caption" class="legend"></div></div></div></section>'
        f'<script type="application/json" id="data">{payload}</script><script>{SCRIPT}</script></body></html>\n'
    )


SCRIPT = r"""
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const M = D.metrics.length;
const state = {agent: "", scan: "", outcome: "", sort: 0, dir: 1, selected: null, limit: 500};
const cols = ["episode", "scan", "agent", "outcome"].concat(D.labels);
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmt(k, v) {  // the k-th metric's value in its unit: a rate in %
  return v === null ? "n/a" : D.units[k] === "%" ? (100 * v).toFixed(1) : v.toFixed(2);
}
function cell(r, c) { return c === 1 ? D.scans[r[1]] : c === 2 ? D.agents[r[2]] : r[c]; }
function select(name, label, options) {
  const s = el("select", {id: "filter-" + name});
  s.appendChild(el("option", {value: ""}, "all"));
  for (const o of options) s.appendChild(el("option", {value: o}, o));
  s.addEventListener("change", () => { state[name] = s.value; render(); });
  const l = el("label", {}, label + " ");
  l.appendChild(s);
  return l;
}
function filtered() {
  const rows = D.rows.filter(r => (!state.agent || D.agents[r[2]] === state.agent) &&
    (!state.scan || D.scans[r[1]] === state.scan) && (!state.outcome || r[3] === state.outcome));
  const c = state.sort, d = state.dir;
  rows.sort((a, b) => {
    const x = cell(a, c), y = cell(b, c);
    if (x === y) return 0;
    if (x === null) return 1;
    if (y === null) return -1;
    return (x < y ? -1 : 1) * d;
  });
  return rows;
}
function render() {
  const rows = filtered(), box = document.getElementById("episodes");
  box.textContent = "";
  const table = el("table", {id: "episode-rows"}), head = el("tr");
  cols.forEach((name, c) => {
    const th = el("th", {"data-col": c}, name + (state.sort === c ? (state.dir > 0 ? " \u25B2" : " \u25BC") : ""));
    th.addEventListener("click", () => { state.dir = state.sort === c ? -state.dir : 1; state.sort = c; render(); });
    head.appendChild(th);
  });
  table.appendChild(el("thead")).appendChild(head);
  const body = table.appendChild(el("tbody"));
  for (const r of rows.slice(0, state.limit)) {
    const tr = el("tr", {"data-episode": r[0], "data-agent": D.agents[r[2]]});
    if (r[0] === state.selected) tr.className = "sel";
    [r[0], D.scans[r[1]], D.agents[r[2]], r[3]].forEach(v => tr.appendChild(el("td", {}, v)));
    D.metrics.forEach((m, k) => tr.appendChild(el("td", {}, fmt(k, r[4 + k]))));
    tr.addEventListener("click", () => draw(r[0]));
    body.appendChild(tr);
  }
  box.appendChild(el("p", {id: "row-count", class: "muted"},
    rows.length + " rows" + (rows.length > state.limit ? " (first " + state.limit + " shown)" : "")));
  box.appendChild(table);
}
function draw(episode) {
  state.selected = episode;
  document.querySelectorAll("#episode-rows tbody tr").forEach(
    tr => tr.className = tr.getAttribute("data-episode") === episode ? "sel" : "");
  const rows = D.rows.filter(r => r[0] === episode), g = D.graphs[D.scans[rows[0][1]]];
  const svg = document.getElementById("drawing"), NS = "http://www.w3.org/2000/svg", W = 520, H = 440, P = 20;
  svg.textContent = "";
  // every path as [x, y] points seen from above: viewpoints are node indices of the scan's graph; the
  // positions of a continuous episode are points already (Habitat x, -z), and an agent given as simulator
  // results only has none (null)
  const xy = path => path === null ? null : D.continuous ? path : path.map(i => [g.x[i], g.y[i]]);
  const ref = D.continuous ? D.refs[episode].r : xy(D.refs[episode]), gt = D.continuous ? D.refs[episode].g : null;
  const paths = rows.map(r => xy(r[4 + M]));
  // zoom on the episode: the reference and every agent's path, with a margin of context
  const pts = ref.concat(gt || [], ...paths.filter(p => p !== null)), xs = pts.map(p => p[0]), ys = pts.map(p => p[1]);
  const margin = Math.max(4, 0.3 * Math.max(Math.max(...xs) - Math.min(...xs), Math.max(...ys) - Math.min(...ys)));
  const x0 = Math.min(...xs) - margin, x1 = Math.max(...xs) + margin, y0 = Math.min(...ys) - margin, y1 = Math.max(...ys) + margin;
  const s = Math.min((W - 2 * P) / (x1 - x0), (H - 2 * P) / (y1 - y0));
  const X = p => P + (p[0] - x0) * s + ((W - 2 * P) - (x1 - x0) * s) / 2, Y = p => H - P - (p[1] - y0) * s - ((H - 2 * P) - (y1 - y0) * s) / 2;
  function add(tag, attrs) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return svg.appendChild(e);
  }
  if (g) {
    const node = i => [g.x[i], g.y[i]];
    for (let k = 0; k < g.edges.length; k += 2)
      add("line", {x1: X(node(g.edges[k])), y1: Y(node(g.edges[k])), x2: X(node(g.edges[k + 1])), y2: Y(node(g.edges[k + 1])), stroke: "#ddd"});
    g.x.forEach((_, i) => add("circle", {cx: X(node(i)), cy: Y(node(i)), r: 1.8, fill: "#ccc"}));
  }
  function line(path, colour, width, offset, cls) {
    const pts = path.map(p => (X(p) + offset).toFixed(1) + "," + (Y(p) + offset).toFixed(1)).join(" ");
    add("polyline", {points: pts, fill: "none", stroke: colour, "stroke-width": width, "stroke-opacity": 0.85,
      "stroke-linejoin": "round", class: cls});
  }
  line(gt || ref, "#1f5fbf", 6, 0, "reference");
  if (D.continuous) ref.forEach(p => add("circle", {cx: X(p), cy: Y(p), r: 4, fill: "#1f5fbf", class: "reference-point"}));
  rows.forEach((r, k) => {
    const path = paths[k], o = 2.5 * (k + 1);
    if (path === null) return;
    line(path, D.colours[r[2]], 2.2, o, "agent-path");
    add("circle", {cx: X(path[path.length - 1]) + o, cy: Y(path[path.length - 1]) + o, r: 3.5, fill: D.colours[r[2]]});
  });
  const start = (gt || ref)[0];
  add("circle", {cx: X(start), cy: Y(start), r: 6, fill: "#fff", stroke: "#000", "stroke-width": 2});
  const gx = X(ref[ref.length - 1]), gy = Y(ref[ref.length - 1]);
  add("path", {d: `M${gx},${gy - 8}L${gx + 3},${gy - 2}L${gx + 8},${gy - 2}L${gx + 4},${gy + 2}L${gx + 6},${gy + 8}` +
    `L${gx},${gy + 4}L${gx - 6},${gy + 8}L${gx - 4},${gy + 2}L${gx - 8},${gy - 2}L${gx - 3},${gy - 2}Z`, fill: "#000"});
  add("line", {x1: W - P - 2 * s, x2: W - P, y1: H - 8, y2: H - 8, stroke: "#000", "stroke-width": 2});
  add("text", {x: W - P - s, y: H - 12, "text-anchor": "middle"}).textContent = "2 m";
  const cap = document.getElementById("caption");
  cap.textContent = "";
  cap.appendChild(el("div", {}, episode + " (" + D.scans[rows[0][1]] + "): " + (D.continuous ?
    "ground-truth path (blue line, start circle), reference points (blue dots, goal star)" + (g ? "" : "; no graph of this scan") :
    "reference (blue, start circle, goal star)")));
  rows.forEach((r, k) => cap.appendChild(el("div", {style: "color:" + D.colours[r[2]]}, "\u25A0 " + D.agents[r[2]] + ": " +
    D.labels.map((label, j) => label + " " + fmt(j, r[4 + j])).join(", ") +
    (paths[k] === null ? " (simulator results only: no positions to draw)" : ""))));
}
const controls = document.getElementById("controls");
controls.appendChild(select("agent", "agent", D.agents));
controls.appendChild(select("scan", "scan", D.scans));
controls.appendChild(select("outcome", "outcome", ["success", "failure", "unscored"]));
render();
const wanted = new URLSearchParams(location.search).get("episode");
const first = filtered()[0];  // the episode drawn at first: the one asked for in the URL, or the table's first row
if (first) draw(wanted && D.refs[wanted] ? wanted : first[0]);
"""
