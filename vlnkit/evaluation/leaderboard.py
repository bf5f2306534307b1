"""The score job's leaderboard: agents ranked, and the same rows as CSV, Markdown and console tables.

Kept apart from the job (and from Beam) because the leaderboard is a pure function of the summary's
per-agent blocks: a script that holds a `summary.json` can rebuild `leaderboard.csv` and
`leaderboard.md` byte for byte (`leaderboard_text`), and every agent is ranked by one rule (SPL, then
SR: `leaderboard`). The CSV keeps full precision for programs; the Markdown shows rates in % and
distances in m for people, under a line stating the success rule (ties at exactly d_th differ
between the rules, so a number without its rule is ambiguous).

>>> blocks = {"a": {"count": 2, "without_usable_prediction": 0, "metrics": {"spl": 0.5, "sr": 0.5}},
...           "b": {"count": 2, "without_usable_prediction": 0, "metrics": {"spl": 0.75, "sr": 1.0}}}
>>> [(r["rank"], r["agent"]) for r in leaderboard(blocks)]
[(1, 'b'), (2, 'a')]
"""

from __future__ import annotations

import csv
import dataclasses
import io
from dataclasses import dataclass

from vlnkit.comparison.paired import HEADLINE, RANK_BY
from vlnkit.evaluation.common import COUNT, DEFAULT_SUCCESS_RULE, METRES, RATE, UNITS
from vlnkit.io import fileio

__all__ = [
    "LEADERBOARD_FILES",
    "LEADERBOARD_METRICS",
    "LANGUAGE_METRICS",
    "TIE_METRIC",
    "language_column",
    "leaderboard",
    "success_line",
    "leaderboard_text",
    "write_leaderboard",
    "language_rows",
    "metric_label",
    "metric_rows",
    "cell",
    "OwnMetric",
    "own_metrics",
    "on_leaderboard",
    "shown_as",
]

LEADERBOARD_FILES = ("leaderboard.csv", "leaderboard.md")
TASK_SUCCESS = "task_success"  # the success line a task with its own rule gives (the summary's task block)
LEADERBOARD_METRICS = ("sr", "spl", "ndtw", "sdtw", "cls", "ne", "pl", "osr")
LANGUAGE_METRICS = ("sr", "spl", "ndtw", "sdtw")  # the headline metrics shown per language
# Straight-line bounds of a continuous dataset's geodesic metrics (`--goal_distance=euclidean`): columns of
# their own, shown only when some agent has them, and never ranked against the geodesic ones.
EUCLIDEAN = "_euclidean"
EUCLIDEAN_METRICS = tuple(m + EUCLIDEAN for m in ("sr", "spl", "sdtw", "ne", "osr"))
OWN = "own_metrics"  # the summary's task block: how the task's own metrics are shown (`OwnMetric.to_dict` each)


@dataclass(frozen=True)
class OwnMetric:
    """A metric a task adds beside the shared ones, as the leaderboard, the console and the report show it:
    its column label (without its unit), its unit (`RATE`: a share in [0, 1] shown in %, `METRES`, or `COUNT`:
    shown as given) and whether the leaderboard shows it, with its interval (the console shows every one).

    A task declares them (`vlnkit.scoring.task.Task.own_metrics`) and the summary's task block carries them
    (`OWN`), so that what reads a summary (this module, the report) keeps no table of any task's metrics.
    """

    metric: str
    label: str
    unit: str
    leaderboard: bool = False

    def __post_init__(self):
        if self.unit not in (RATE, METRES, COUNT):
            raise ValueError(f"metric {self.metric!r}: unit must be one of {(RATE, METRES, COUNT)}, got {self.unit!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def own_metrics(summary: dict) -> dict[str, OwnMetric]:
    """{metric: OwnMetric} of the task's own metrics, in their declared order, as a summary (or the score job's
    static part of one) carries them in its task block; {} for a task without (R2R's).

    >>> own = own_metrics({"task": {OWN: [{"metric": "gp", "label": "GP", "unit": "m", "leaderboard": True}]}})
    >>> own["gp"].label, own["gp"].unit
    ('GP', 'm')
    """
    return {d["metric"]: OwnMetric(**d) for d in (summary.get("task") or {}).get(OWN, [])}


def on_leaderboard(own: dict[str, OwnMetric] | None) -> list[str]:
    """The task's own metrics the leaderboard shows, in their declared order."""
    return [m for m, o in (own or {}).items() if o.leaderboard]


def shown_as(metric: str, own: dict[str, OwnMetric] | None = None) -> tuple[str, str]:
    """(label, unit) of a metric: a task's own as it declares them; a shared metric's, its straight-line
    bound's or a per-language column's (`language_column`) unit the shared metric's (`UNITS`); any other
    name in metres.

    >>> shown_as("sr_hi-IN"), shown_as("ne_euclidean"), shown_as("x", {"x": OwnMetric("x", "X", "")})
    (('SR_HI-IN', '%'), ('NE_EUCLIDEAN', 'm'), ('X', ''))
    """
    if own and metric in own:
        return own[metric].label, own[metric].unit
    base = metric.removesuffix(EUCLIDEAN)
    unit = UNITS.get(base) or UNITS.get(base.split("_", 1)[0], METRES)
    return metric.upper(), unit


def _is_rate(metric: str, own: dict[str, OwnMetric] | None = None) -> bool:
    return shown_as(metric, own)[1] == RATE


HEADLINE_CI = HEADLINE  # metrics whose intervals leaderboard.md shows
TIE_METRIC = RANK_BY[0]  # ties are judged on the leaderboard's first ranking metric (SPL)


def language_column(metric: str, language: str) -> str:
    """A leaderboard column of one metric in one language.

    >>> language_column("ndtw", "hi-IN")
    'ndtw_hi-IN'
    """
    return f"{metric}_{language}"


def leaderboard(blocks: dict[str, dict], own: dict[str, OwnMetric] | None = None) -> list[dict]:
    """Agents ranked by SPL, then SR (higher first; agents without scores last), then name. With
    languages (RxR), each row also holds `language_column(metric, language)` for LANGUAGE_METRICS.

    When some agent has straight-line bounds (`EUCLIDEAN_METRICS`, a continuous dataset scored with
    `--goal_distance=euclidean`), every row holds them too; agents without a geodesic SPL then come
    after every agent with one, ranked among themselves by SPL_euclidean, then SR_euclidean: a bound is
    never ranked against a geodesic number.

    `blocks` are the summary's per-agent blocks (`count`, `without_usable_prediction`, `metrics` and,
    for RxR, `by_language`); `own` the task's own metrics (`own_metrics`): those the leaderboard shows are
    columns of every row when some agent has them.

    >>> blocks = {"x": {"count": 1, "without_usable_prediction": 0, "metrics": {"spl": None, "sr": None}},
    ...           "y": {"count": 1, "without_usable_prediction": 0, "metrics": {"spl": 0.0, "sr": 0.0},
    ...                 "by_language": {"te-IN": {"count": 1, "metrics": {"sr": 0.0}}}}}
    >>> rows = leaderboard(blocks)
    >>> [r["agent"] for r in rows], rows[0]["sr_te-IN"], rows[1]["sr_te-IN"]
    (['y', 'x'], 0.0, None)
    """
    languages = sorted({language for b in blocks.values() for language in b.get("by_language", {})})
    optional = (*on_leaderboard(own), *EUCLIDEAN_METRICS)
    bounds = [m for m in optional if any(b["metrics"].get(m) is not None for b in blocks.values())]

    def key(item):
        name, b = item
        spl, sr = b["metrics"].get("spl"), b["metrics"].get("sr")
        spl_e, sr_e = b["metrics"].get("spl" + EUCLIDEAN), b["metrics"].get("sr" + EUCLIDEAN)
        return (spl is None, -(spl or 0.0), -(sr or 0.0), spl_e is None, -(spl_e or 0.0), -(sr_e or 0.0), name)

    rows = []
    for rank, (name, b) in enumerate(sorted(blocks.items(), key=key), start=1):
        by_language = b.get("by_language", {})
        rows.append(
            {
                "rank": rank,
                "agent": name,
                "episodes": b["count"],
                "without_usable_prediction": b["without_usable_prediction"],
                **{m: b["metrics"].get(m) for m in LEADERBOARD_METRICS},
                **{m: b["metrics"].get(m) for m in bounds},
                **{
                    language_column(m, language): by_language.get(language, {}).get("metrics", {}).get(m)
                    for language in languages
                    for m in LANGUAGE_METRICS
                },
            }
        )
    return rows


def cell(metric: str, value, interval=None, own: dict[str, OwnMetric] | None = None) -> str:
    """A Markdown or console cell: rates in % and distances in m with two decimals, "n/a" for no value.

    A per-language column (`language_column`) is shown as its metric; a task's own metric by its unit (`own`).

    >>> cell("sr", 0.25, [0.125, 0.5]), cell("ne", 1.5), cell("spl", None), cell("sr_hi-IN", 0.25)
    ('25.00 [12.50, 50.00]', '1.50', 'n/a', '25.00')
    """
    if value is None:
        return "n/a"
    scale = 100.0 if _is_rate(metric, own) else 1.0
    text = f"{scale * value:.2f}"
    if interval:
        text += f" [{scale * interval[0]:.2f}, {scale * interval[1]:.2f}]"
    return text


def metric_label(metric: str, own: dict[str, OwnMetric] | None = None) -> str:
    """A metric's column label with its unit (a count has none).

    >>> metric_label("spl"), metric_label("ne"), metric_label("sr_euclidean"), metric_label("n", {"n": OwnMetric("n", "N", "")})
    ('SPL (%)', 'NE (m)', 'SR_EUCLIDEAN (%)', 'N')
    """
    label, unit = shown_as(metric, own)
    return f"{label} ({unit})" if unit else label


def metric_rows(
    metrics: dict, intervals: dict | None = None, own: dict[str, OwnMetric] | None = None
) -> list[tuple[str, object]]:
    """Rows of a console summary table from {metric: mean or None}: rates as percentages, distances in metres,
    with the metric's interval in brackets where `intervals` ({metric: [low, high]}) has one; a task's own
    metrics as it declares them (`own`).

    >>> metric_rows({"pl": 9.5, "sr": 0.25})
    [('PL (m)', 9.5), ('SR (%)', 25.0)]
    >>> metric_rows({"sr": 0.25}, {"sr": [0.125, 0.5]})
    [('SR (%)', '25.00 [12.50, 50.00]')]
    """
    rows = []
    for m, v in metrics.items():
        interval = (intervals or {}).get(m)
        if v is None or interval:
            rows.append((metric_label(m, own), cell(m, v, interval, own)))
        else:
            rows.append((metric_label(m, own), round(100 * v, 2) if _is_rate(m, own) else v))
    return rows


def success_line(options: dict) -> str:
    """The leaderboard's header: the success rule the rates were computed with (ties differ between rules).

    >>> success_line({"success_distance": 3.0, "success_rule": "le"})
    "Success: NE <= 3.0 m (success_rule=le, as the R4R/nDTW papers' code; R2R eval.py uses NE < d_th)."
    """
    d, rule = options["success_distance"], options.get("success_rule", DEFAULT_SUCCESS_RULE)
    if options.get(TASK_SUCCESS):  # a task with its own rule says its success line (`vlnkit.scoring.task`)
        return options[TASK_SUCCESS]
    if "ce_reference" in options:  # a continuous dataset: the geodesic rates are the simulator's own
        line = (
            "Success: SR, OSR and SPL are each agent's own simulator results (geodesic NE, under its codebase's "
            "rule: VLN-CE < 3 m, CWP and ETPNav <= 3 m)"
        )
        if options.get("goal_distance"):
            within = "<" if rule == "lt" else "<="
            line += f"; *_euclidean: straight-line NE {within} {d} m (success_rule={rule}), bounds, not comparable"
        return line + "."
    if rule == "lt":
        return f"Success: NE < {d} m (success_rule=lt, as R2R eval.py; the R4R/nDTW papers' code uses NE <= d_th)."
    return f"Success: NE <= {d} m (success_rule=le, as the R4R/nDTW papers' code; R2R eval.py uses NE < d_th)."


def leaderboard_text(rows: list[dict], options: dict) -> tuple[str, str]:
    """(CSV text with full-precision values, Markdown table with rates in %, distances in m, under a
    header line stating the success rule).

    `options` are the summary's scoring options and, with intervals, its `bootstrap` settings (the
    Markdown's note says how many replicates the brackets come from), with its task's own metrics (`OWN`)
    when it has some: `leaderboard_options`.

    >>> rows = [{"rank": 1, "agent": "a", "episodes": 4, "without_usable_prediction": 0, "sr": 0.5, "ne": 2.0}]
    >>> csv_text, md = leaderboard_text(rows, {"success_distance": 3.0})
    >>> csv_text.splitlines()[1]
    '1,a,4,0,0.5,,,,,2.0,,'
    >>> md.splitlines()[-1]
    '| 1 | a | 4 | 0 | 50.00 | n/a | n/a | n/a | n/a | 2.00 | n/a | n/a |'
    """
    first = rows[0] if rows else {}
    own = {d["metric"]: OwnMetric(**d) for d in options.get(OWN, [])}
    on_board = on_leaderboard(own)
    bounds = [m for m in (*on_board, *EUCLIDEAN_METRICS) if m in first]
    head = ["rank", "agent", "episodes", "without_usable_prediction", *LEADERBOARD_METRICS, *bounds]
    with_ci = any(f"{m}_ci" in first for m in LEADERBOARD_METRICS)
    cis = [f"{m}_ci" for m in (*LEADERBOARD_METRICS, *bounds)] if with_ci else []
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
    labels = [metric_label(m, own) for m in (*LEADERBOARD_METRICS, *bounds)]
    labels += [c.split("_", 1)[0].upper() + " " + c.split("_", 1)[1] + " (%)" for c in extra]
    md = [success_line(options), ""]
    if with_ci:
        md += [
            f"Brackets: {100 * options.get('confidence', 0.95):g}% bootstrap intervals ({options.get('bootstrap')} "
            f"replicates, unit: {options.get('bootstrap_unit', 'episode')}). \u2248 before a rank: its "
            f"{TIE_METRIC.upper()} does not differ significantly from the agent ranked above (paired, Holm-corrected).",
            "",
        ]
    if any(m in EUCLIDEAN_METRICS for m in bounds):
        md += [
            "*_EUCLIDEAN: straight-line bounds (--goal_distance=euclidean): NE a lower bound, SR, OSR, SPL and SDTW "
            "upper bounds, not comparable with geodesic numbers; agents without a geodesic SPL are ranked after "
            "every agent with one, by SPL_EUCLIDEAN.",
            "",
        ]
    md.append("| rank | agent | episodes | without usable prediction | " + " | ".join(labels) + " |")
    md.append("|" + " --- |" * (4 + len(labels)))
    for r in rows:
        agent = str(r["agent"]).replace("|", "\\|")
        cells = [
            cell(
                m,
                r.get(m),
                r.get(f"{m}_ci") if m.removesuffix(EUCLIDEAN) in (*HEADLINE_CI, *on_board) else None,
                own,
            )
            for m in (*LEADERBOARD_METRICS, *bounds)
        ]
        cells += [cell(c, r.get(c)) for c in extra]
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


def leaderboard_options(summary: dict) -> dict:
    """What the leaderboard's header lines and columns need from a summary: its scoring options, bootstrap
    settings, and the success line and own metrics of its task, when the task has its own rule or metrics.

    >>> leaderboard_options({"options": {"success_distance": 3.0}, "bootstrap": {"bootstrap": 100}})
    {'success_distance': 3.0, 'bootstrap': 100}
    """
    task = summary.get("task") or {}
    said = {k: v for k, v in ((TASK_SUCCESS, task.get("success")), (OWN, task.get(OWN))) if v}
    return {**summary["options"], **summary.get("bootstrap", {}), **said}


def write_leaderboard(output_dir: str, summary: dict) -> None:
    """Write `leaderboard.csv` and `leaderboard.md` of a summary into `output_dir` (local or gs://)."""
    csv_text, md_text = leaderboard_text(summary["leaderboard"], leaderboard_options(summary))
    for name, text in zip(LEADERBOARD_FILES, (csv_text, md_text)):
        with fileio.open_write(fileio.join(output_dir, name)) as f:
            f.write(text.encode("utf-8"))


def language_rows(summary: dict) -> list[list[str]]:
    """The console's per-language table (RxR): a header row, then one row per language (and per agent
    when there are several, agents in leaderboard order) with its episode count and LANGUAGE_METRICS.

    Empty when no agent has languages (R2R, R4R), so callers print nothing.

    >>> block = {"by_language": {"hi-IN": {"count": 3, "metrics": {"sr": 0.5, "spl": None}}}}
    >>> language_rows({"agents": {"a": block}, "leaderboard": [{"agent": "a"}]})
    [['language', 'episodes', 'SR (%)', 'SPL (%)', 'NDTW (%)', 'SDTW (%)'], ['hi-IN', '3', '50.00', 'n/a', 'n/a', 'n/a']]
    """
    blocks = summary.get("agents") or {}
    order = [r["agent"] for r in summary.get("leaderboard", [])] or list(blocks)
    languages = sorted({language for b in blocks.values() for language in b.get("by_language", {})})
    if not languages:
        return []
    several = len(blocks) > 1
    head = ["language", *(["agent"] if several else []), "episodes", *(m.upper() + " (%)" for m in LANGUAGE_METRICS)]
    rows = [head]
    for language in languages:
        for agent in order:
            group = blocks[agent].get("by_language", {}).get(language)
            if group is None:
                continue
            metrics = group.get("metrics", {})
            values = [cell(m, metrics.get(m)) for m in LANGUAGE_METRICS]
            rows.append([language, *([str(agent)] if several else []), str(group["count"]), *values])
    return rows


def aligned(rows: list[list[str]]) -> str:
    """Rows as a console table: text columns left-aligned, the others right-aligned, two spaces apart.

    >>> print(aligned([["language", "SR (%)"], ["en-IN", "5.00"]]))
      language  SR (%)
      --------  ------
      en-IN       5.00
    """
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    left = {c for c, name in enumerate(rows[0]) if name in ("language", "agent")}

    def line(r):
        return "  " + "  ".join(v.ljust(w) if c in left else v.rjust(w) for c, (v, w) in enumerate(zip(r, widths)))

    return "\n".join([line(rows[0]), line(["-" * w for w in widths]), *(line(r) for r in rows[1:])])
