"""Report figures with matplotlib (Agg backend): the same tables always give the same PNG bytes.

Every function takes the small finalized tables of `vlnkit.reports.stats` (or one sampled episode
and its graph), draws one figure and returns the PNG bytes; nothing here reads big data.
Figure sizes are fixed (`FIGSIZES`, at `DPI`) so pages lay out predictably and tests can check them.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from vlnkit.reports.stats import (  # noqa: E402
    DATASET_QUANTITIES,
    DEFAULT_KEEP_BAND,
    INTEGER_QUANTITIES,
    METRIC_WIDTHS,
    QUANTITY_LABELS,
    RATE_METRICS,
    display_bins,
)

DPI = 100
FIGSIZES = {  # inches; pixels are these times DPI
    "dataset": (10.0, 7.0),
    "scores": (12.0, 10.0),
    "score_means": (10.0, 4.5),
    "path": (6.0, 6.0),
    "perturbations": (8.0, 4.5),
    "paraphrases": (11.0, 4.5),
    "agreement": (12.0, 7.0),
}
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")
PATH_COLORS = {
    "graph": "#c8c8c8",
    "reference": "#1f77b4",
    "agent": "#ff7f0e",
    "shared": "#2ca02c",
    "first": "#1f77b4",
    "second": "#9467bd",
    "connector": "#d62728",
}


def expected_pixels(kind: str) -> tuple[int, int]:
    """(width, height) in pixels of a figure of this kind."""
    w, h = FIGSIZES[kind]
    return round(w * DPI), round(h * DPI)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    # No software/date metadata, so the bytes depend only on the data and the matplotlib version.
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _figure(kind: str):
    return plt.figure(figsize=FIGSIZES[kind], dpi=DPI)


def _overlaid_histogram(ax, series: list[tuple[str, dict | None]], width: float, integer: bool, title: str) -> None:
    """Step-outlined histograms of several labelled series on shared display bins, as fractions."""
    hists = [q["hist"] if q else [] for _, q in series]
    edges, counts = display_bins(hists, width, integer=integer)
    for k, ((label, q), c) in enumerate(zip(series, counts)):
        total = c.sum()
        frac = c / total if total else c.astype(float)
        mean = q.get("mean") if q else None
        text = f"{label} (n={int(total)}" + (f", mean={mean:.2f})" if mean is not None else ")")
        color = COLORS[k % len(COLORS)]
        ax.stairs(frac, edges, color=color, linewidth=1.6, label=text)
        ax.stairs(frac, edges, color=color, alpha=0.12, fill=True)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel("fraction")
    ax.legend(fontsize=7, loc="upper right")


def dataset_figure(datasets: dict[str, dict]) -> bytes:
    """2x2 histograms (steps, length, start-to-goal distance, instruction words), one series per dataset."""
    fig = _figure("dataset")
    axes = fig.subplots(2, 2).ravel()
    for ax, quantity in zip(axes, DATASET_QUANTITIES):
        series = [(label, d["quantities"].get(quantity)) for label, d in datasets.items()]
        _overlaid_histogram(
            ax, series, DATASET_QUANTITIES[quantity], quantity in INTEGER_QUANTITIES, QUANTITY_LABELS[quantity]
        )
    fig.suptitle("Dataset statistics", fontsize=12)
    fig.tight_layout()
    return _png(fig)


def score_histograms(score_sets: dict[str, dict]) -> bytes:
    """One histogram per metric (4x4 grid), one series per score set (agent)."""
    fig = _figure("scores")
    axes = fig.subplots(4, 4).ravel()
    metrics = list(METRIC_WIDTHS)
    for ax, metric in zip(axes, metrics):
        series = [(label, s["quantities"].get(metric)) for label, s in score_sets.items()]
        unit = "" if metric in RATE_METRICS else " (m)"
        _overlaid_histogram(ax, series, METRIC_WIDTHS[metric], False, metric.upper() + unit)
        ax.get_legend().remove()
    for ax in axes[len(metrics) :]:
        ax.axis("off")
    handles, _ = axes[0].get_legend_handles_labels()
    axes[len(metrics)].legend(handles, list(score_sets), loc="center", fontsize=9, title="score set")
    fig.suptitle("Per-episode score distributions", fontsize=12)
    fig.tight_layout()
    return _png(fig)


def score_means_figure(score_sets: dict[str, dict]) -> bytes:
    """Side-by-side bars of each metric's mean: rates (%) on the left, distances (m) on the right."""
    fig = _figure("score_means")
    ax_rate, ax_dist = fig.subplots(1, 2, gridspec_kw={"width_ratios": [7, 6]})
    rates = [m for m in METRIC_WIDTHS if m in RATE_METRICS]
    dists = [m for m in METRIC_WIDTHS if m not in RATE_METRICS]
    labels = list(score_sets)
    bar = 0.8 / max(1, len(labels))
    for ax, metrics, scale, unit in ((ax_rate, rates, 100.0, "%"), (ax_dist, dists, 1.0, "m")):
        x = np.arange(len(metrics))
        for k, label in enumerate(labels):
            q = score_sets[label]["quantities"]
            means = [(q.get(m) or {}).get("mean") for m in metrics]
            values = [scale * v if v is not None else 0.0 for v in means]
            ax.bar(x + (k - (len(labels) - 1) / 2) * bar, values, bar, color=COLORS[k % len(COLORS)], label=label)
        ax.set_xticks(x, [m.upper() for m in metrics], fontsize=8)
        ax.set_ylabel(f"mean ({unit})")
        ax.margins(y=0.25)  # headroom, so the legend never covers a bar
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("Mean scores" + (" side by side" if len(labels) > 1 else ""), fontsize=12)
    fig.tight_layout()
    return _png(fig)


def perturbations_figure(count_sets: dict[str, dict]) -> bytes:
    """Horizontal bars: perturbations per family/method, one bar group per output."""
    fig = _figure("perturbations")
    ax = fig.subplots()
    names = sorted({n for counts in count_sets.values() for n in counts})
    y = np.arange(len(names))
    bar = 0.8 / max(1, len(count_sets))
    for k, (label, counts) in enumerate(count_sets.items()):
        ax.barh(
            y + (k - (len(count_sets) - 1) / 2) * bar,
            [counts.get(n, 0) for n in names],
            bar,
            color=COLORS[k % len(COLORS)],
            label=label,
        )
    ax.set_yticks(y, names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("perturbed records")
    ax.set_title("Perturbations per family / method", fontsize=11)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def paraphrases_figure(sets: dict[str, dict], keep_band: tuple[float, float] = DEFAULT_KEEP_BAND) -> bytes:
    """Left: rows and kept paraphrases per pivot language; right: BLEU histogram, keep band shaded."""
    fig = _figure("paraphrases")
    ax_lang, ax_bleu = fig.subplots(1, 2)
    languages = sorted({n.split("/")[0] for s in sets.values() for n in s["counts"]})
    x = np.arange(len(languages))
    bar = 0.8 / max(1, len(sets))
    for k, (label, s) in enumerate(sets.items()):
        offset = (k - (len(sets) - 1) / 2) * bar
        color = COLORS[k % len(COLORS)]
        rows = [s["counts"].get(f"{lang}/rows", 0) for lang in languages]
        kept = [s["counts"].get(f"{lang}/kept", 0) for lang in languages]
        ax_lang.bar(x + offset, rows, bar, color=color, alpha=0.3, label=f"{label}: all")
        ax_lang.bar(x + offset, kept, bar, color=color, label=f"{label}: kept")
    ax_lang.set_xticks(x, languages)
    ax_lang.set_xlabel("pivot language")
    ax_lang.set_ylabel("paraphrases")
    ax_lang.set_title("Paraphrases per pivot language", fontsize=11)
    ax_lang.legend(fontsize=7)
    series = [(label, s["quantities"].get("bleu")) for label, s in sets.items()]
    _overlaid_histogram(ax_bleu, series, 0.01, False, QUANTITY_LABELS["bleu"])
    ax_bleu.axvspan(*keep_band, color="#2ca02c", alpha=0.12, label="keep band")
    for edge in keep_band:
        ax_bleu.axvline(edge, color="#2ca02c", linestyle="--", linewidth=1)
    ax_bleu.set_title(f"{QUANTITY_LABELS['bleu']}; kept in [{keep_band[0]:g}, {keep_band[1]:g}]", fontsize=10)
    fig.tight_layout()
    return _png(fig)


def agreement_figure(outcome: str, scores: dict[str, dict], means: dict[str, float], taus: dict, human) -> bytes:
    """The study's Figure 3 for one wayfinding outcome: one panel per metric, one point per system, its
    corpus score (x100, whisker: its bootstrap interval) against the mean `outcome` of the people who followed
    its instructions; human rows (`human`, a set of system names) drawn as stars. A panel's title gives
    the system-level tau-b and its interval (`taus[metric]["system"]`).

    `scores` {system: {metric: {"score", "interval"}}} (the score_instructions summary's `by_system`);
    `means` {system: mean outcome}: only systems with a mean are drawn."""
    fig = _figure("agreement")
    metrics = list(taus)
    cols = min(4, max(1, len(metrics)))
    axes = np.atleast_1d(fig.subplots(max(1, -(-len(metrics) // cols)), cols, sharey=True)).ravel()
    systems = [s for s in scores if means.get(s) is not None]
    y = np.array([means[s] for s in systems], np.float64)
    is_human = np.array([s in human for s in systems], bool)
    colors = [PATH_COLORS["reference"] if h else COLORS[1] for h in is_human]
    from matplotlib.collections import LineCollection

    for ax, metric in zip(axes, metrics):
        # one artist per kind (whiskers, generated, human): a dozen figures stay fast to draw
        x = np.array([100 * scores[s][metric]["score"] for s in systems], np.float64)
        cis = [scores[s][metric].get("interval") for s in systems]
        whiskers = [[(100 * c[0], v), (100 * c[1], v)] for c, v in zip(cis, y) if c]
        ax.add_collection(LineCollection(whiskers, colors=[c for c, ci in zip(colors, cis) if ci], alpha=0.45))
        ax.scatter(x[~is_human], y[~is_human], s=22, color=COLORS[1], zorder=3)
        ax.scatter(x[is_human], y[is_human], s=70, marker="*", color=PATH_COLORS["reference"], zorder=3)
        ax.autoscale_view()
        tau = (taus[metric] or {}).get("system")
        title = metric.upper()
        if tau:
            lo, hi = tau["interval"] or (float("nan"), float("nan"))
            title += f": tau-b {tau['tau_b']:+.2f} [{lo:+.2f}, {hi:+.2f}]"
        ax.set_title(title, fontsize=9)
        ax.tick_params(labelsize=7)
    for k, ax in enumerate(axes):
        if k >= len(metrics):
            ax.axis("off")
        elif k % cols == 0:
            ax.set_ylabel(f"mean {outcome}", fontsize=8)
    fig.suptitle(
        f"Each system's corpus score x100 (x) against its followers' mean {outcome} (y); stars: human rows", fontsize=11
    )
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.08, top=0.9, wspace=0.3, hspace=0.45)  # not tight_layout: slow
    return _png(fig)


# --------------------------------------------------------------------------- path drawings
def shared_edges(a: list[str], b: list[str]) -> set[frozenset]:
    """Undirected edges (consecutive viewpoint pairs) that both paths traverse."""
    edges_a = {frozenset(p) for p in zip(a, a[1:]) if p[0] != p[1]}
    return edges_a & {frozenset(p) for p in zip(b, b[1:]) if p[0] != p[1]}


def _xy(graph, path: list[str]) -> np.ndarray:
    return graph.positions[graph.indices(path)][:, :2]


def _line(ax, graph, path, color, label, width, z, style="-"):
    xy = _xy(graph, path)
    ax.plot(xy[:, 0], xy[:, 1], style, color=color, linewidth=width, label=label, zorder=z, solid_capstyle="round")
    ax.scatter(xy[:, 0], xy[:, 1], s=12, color=color, zorder=z + 0.5)


def path_figure(graph, episode: dict) -> bytes:
    """One episode on its scan's graph seen from above (x, y).

    `episode`: scan, path (reference), title, and optionally `agent` (trajectory), `metrics`
    ({name: value}), and for R4R `first` / `second` (source paths) and `connector` (the shortest
    path from the first path's end to the second path's start).
    """
    fig = _figure("path")
    ax = fig.subplots()
    pos = graph.positions[:, :2]
    e = graph.edges
    if len(e):
        segments = np.stack([pos[e[:, 0]], pos[e[:, 1]]], axis=1)
        from matplotlib.collections import LineCollection

        ax.add_collection(LineCollection(segments, colors=PATH_COLORS["graph"], linewidths=0.6, zorder=1))
    ax.scatter(pos[:, 0], pos[:, 1], s=4, color=PATH_COLORS["graph"], zorder=1.5)
    ref = list(episode["path"])
    if episode.get("first") and episode.get("second"):
        # The first path wide and under, the second narrow and over: both stay visible where they overlap.
        _line(ax, graph, episode["first"], PATH_COLORS["first"], "first source path", 4.5, 3)
        _line(ax, graph, episode["second"], PATH_COLORS["second"], "second source path", 1.8, 3.6)
    else:
        _line(ax, graph, ref, PATH_COLORS["reference"], "reference path", 2.2, 3)
    if episode.get("connector") and len(episode["connector"]) > 1:
        _line(ax, graph, episode["connector"], PATH_COLORS["connector"], "connecting segment", 2.6, 4, "--")
    agent = episode.get("agent")
    if agent:
        _line(ax, graph, agent, PATH_COLORS["agent"], "agent path", 1.6, 5)
        shared = sorted(tuple(sorted(s)) for s in shared_edges(ref, agent))
        for k, (u, v) in enumerate(shared):
            xy = _xy(graph, [u, v])
            ax.plot(
                xy[:, 0],
                xy[:, 1],
                color=PATH_COLORS["shared"],
                linewidth=4,
                alpha=0.8,
                zorder=4.5,
                label="shared part" if k == 0 else None,
            )
    start, goal = _xy(graph, [ref[0]])[0], _xy(graph, [ref[-1]])[0]
    ax.scatter(*start, s=90, marker="o", facecolor="white", edgecolor="black", zorder=7, label="start")
    ax.scatter(*goal, s=160, marker="*", color="gold", edgecolor="black", zorder=7, label="goal")
    ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale_view()
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    title = episode.get("title", "")
    metrics = episode.get("metrics") or {}
    if metrics:
        parts = [f"{m.upper()} {v:.2f}" for m, v in metrics.items() if v is not None]
        title += "\n" + ", ".join(parts[:7]) + ("\n" + ", ".join(parts[7:]) if len(parts) > 7 else "")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    return _png(fig)
