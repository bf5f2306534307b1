"""The score job's `summary.json` for a continuous (VLN-CE) dataset: the graph score job's summary over the
continuous metrics, and what only continuous agents have.

`continuous_summary` is `vlnkit.evaluation.score_summary.score_summary` over `CE_METRICS` (means, null
counts, intervals, comparisons, tie marks, breakdowns and the leaderboard, exactly as for a graph
dataset; only the metrics some agent has: a result file has no CLS, positions alone no SR), plus, per agent:

- `inputs`: each of its files and the layout it was read as (positions or simulator results);
- `rows_from`: how many of its scored rows came from positions, from results, or from both;
- `results_vs_positions` (an agent that gave both): per metric both give (nDTW, SDTW, PL, steps), the
  episodes compared, the mean and the largest |file - ours|: the file's value is the one reported,
  and this says how far our computation from the positions is from it (different DTW, sub-step
  positions, repeats kept: docs/design.md, "Continuous environments");
- `file_totals`: per result file that ends with its evaluator's own totals (StreamVLN, InternNav), the
  totals against the means of the file's episode rows and a verdict (`results.totals_check`).

>>> from vlnkit.evaluation.score_summary import agent_key
>>> totals = {agent_key("a", "count"): 1, agent_key("a", "rows_from_results"): 1, agent_key("a", "finite_steps"): 1}
>>> s = continuous_summary({"dataset": ["val_unseen.json.gz"]}, totals, ["a"], inputs={"a": {"s.json": "vlnce_stats"}})
>>> s["agents"]["a"]["rows_from"], s["agents"]["a"]["results_vs_positions"], "steps" in s["metrics"]
({'positions': 0, 'results': 1, 'both': 0}, {}, True)
"""

from __future__ import annotations

from vlnkit.continuous.buckets import SOURCE_COUNTS
from vlnkit.continuous.schemas import CE_METRICS
from vlnkit.evaluation.score_summary import SEP, score_summary
from vlnkit.io.exactsum import exact_mean

RESULTS_VS_POSITIONS = "results_vs_positions"
FILE_TOTALS = "file_totals"


def differences_report(merged: dict) -> dict:
    """{metric: {"count", "sum", "max"}} merged over buckets -> {metric: {"episodes",
    "mean_abs_difference", "max_abs_difference"}} (the mean from the exact sum)."""
    return {
        m: {
            "episodes": d["count"],
            "mean_abs_difference": exact_mean(d["sum"], d["count"]),
            "max_abs_difference": d["max"] if d["count"] else None,
        }
        for m, d in sorted(merged.items())
    }


def continuous_summary(
    static: dict,
    totals: dict,
    agents: list[str],
    bootstrap: dict | None = None,
    bootstrap_options: dict | None = None,
    differences: dict | None = None,
    inputs: dict[str, dict[str, str]] | None = None,
    file_totals: list | None = None,
) -> dict:
    """The summary (see the module docstring). `differences`: {agent: merged differences} of the score
    step; `inputs`: {agent: {file: layout}}; `file_totals`: (agent, `results.totals_check` report) pairs."""
    present = [m for m in CE_METRICS if any(totals.get(f"{a}{SEP}finite_{m}") for a in agents)]
    summary = score_summary(static, totals, agents, bootstrap, bootstrap_options, metrics=present)
    names = {"rows_from_positions": "positions", "rows_from_results": "results", "rows_from_both": "both"}
    for agent, block in summary["agents"].items():
        block["inputs"] = dict((inputs or {}).get(agent, {}))
        block["rows_from"] = {names[k]: int(totals.get(f"{agent}{SEP}{k}", 0)) for k in SOURCE_COUNTS.values()}
        block[RESULTS_VS_POSITIONS] = differences_report((differences or {}).get(agent, {}))
        block[FILE_TOTALS] = sorted((r for a, r in file_totals or () if a == agent), key=lambda r: r["file"])
    if len(agents) == 1:
        only = summary["agents"][agents[0]]
        for key in ("inputs", "rows_from", RESULTS_VS_POSITIONS, FILE_TOTALS):
            summary[key] = only[key]
    return summary
