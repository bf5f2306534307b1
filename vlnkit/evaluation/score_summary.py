"""The score job's `summary.json`, assembled from the job's summed totals and bootstrap sums.

The job adds exact integer totals per agent (and per agent and language) across workers under the keys
`agent_key` and `language_key` make; this module turns them into the summary: one block per agent
(`agent_summary`), the leaderboard, and with `--bootstrap` the intervals, comparisons, tie marks and
breakdowns (`add_bootstrap`). It is Beam-free so that the same summary can be rebuilt, and tested,
from plain dicts; the job only wires it (`pipelines.score`).

>>> import numpy as np
>>> from vlnkit.evaluation.batch import totals
>>> summed = {agent_key("a", k): v for k, v in totals({"sr": np.array([1.0, 0.0])}).items()}
>>> summary = score_summary({"dataset": ["d.json"]}, summed, ["a"])
>>> summary["count"], summary["metrics"]["sr"], summary["leaderboard"][0]["agent"]
(2, 0.5, 'a')
"""

from __future__ import annotations

from vlnkit.comparison.episodes import length_labels
from vlnkit.evaluation.common import METRICS
from vlnkit.evaluation.leaderboard import TIE_METRIC, leaderboard, own_metrics

__all__ = [
    "SEP",
    "BY_LANGUAGE",
    "AGENT_COUNTS",
    "agent_key",
    "language_key",
    "agent_summary",
    "score_summary",
    "add_bootstrap",
    "bootstrap_pairs",
    "tie_marks",
    "ordered_breakdowns",
]

SEP = "\x1f"  # agent / counter separator in totals keys (never printed, never in an agent name or tag)
BY_LANGUAGE = "by_language"  # totals of one language's pairs (RxR), summed like an agent's own
AGENT_COUNTS = (
    "predictions_read",
    "missing_predictions",
    "without_usable_prediction",
    "dead_letters",
    "file_dead_letters",
    "non_adjacent_steps",
    "trajectories_with_jumps",
    "repeats_collapsed",
)


def agent_key(agent: str, name: str) -> str:
    """The totals key of one agent's counter.

    >>> agent_key("dagger", "count").split(SEP)
    ['dagger', 'count']
    """
    return f"{agent}{SEP}{name}"


def language_key(language: str, name: str) -> str:
    """The totals name of one language's counter (under an agent's key, see `agent_key`).

    >>> agent_key("a", language_key("hi-IN", "count")).split(SEP)
    ['a', 'by_language', 'hi-IN', 'count']
    """
    return f"{BY_LANGUAGE}{SEP}{language}{SEP}{name}"


def agent_summary(totals: dict, agent: str, metrics=METRICS, counters=()) -> dict:
    """One agent's block of the summary from the summed totals, with `by_language` (RxR: each language's
    count and metric means from its own exact sums; empty for a dataset without languages).

    >>> totals = {agent_key("a", "count"): 1, agent_key("a", language_key("te-IN", "count")): 1}
    >>> block = agent_summary(totals, "a")
    >>> block["count"], block["by_language"]["te-IN"]["count"], block["predictions_read"]
    (1, 1, 0)
    """
    from vlnkit.evaluation.batch import means

    prefix = agent + SEP
    own = {k[len(prefix) :]: v for k, v in totals.items() if k.startswith(prefix)}
    mean, nulls = means(own, metrics)
    per_language: dict[str, dict] = {}
    for key, value in own.items():
        if key.startswith(BY_LANGUAGE + SEP):
            language, name = key[len(BY_LANGUAGE) + 1 :].split(SEP)
            per_language.setdefault(language, {})[name] = value
    by_language = {
        language: {"count": int(sums.get("count", 0)), "metrics": means(sums, metrics)[0]}
        for language, sums in sorted(per_language.items())
    }
    return {
        "count": int(own.get("count", 0)),
        "metrics": mean,
        "null_counts": nulls,
        **{name: int(own.get(name, 0)) for name in (*AGENT_COUNTS, *counters)},
        "by_language": by_language,
    }


def score_summary(
    static: dict,
    totals: dict,
    agents: list[str] | None = None,
    bootstrap: dict | None = None,
    bootstrap_options: dict | None = None,
    metrics=METRICS,
    counters=(),
) -> dict:
    """The summary: shared counts, per-agent blocks under "agents" and, for one agent, its block at the top.

    `metrics` are the metric names the totals hold (`METRICS`; a continuous dataset's job has more,
    `vlnkit.continuous.schemas.CE_METRICS`, and so has a task with its own rule, REVERIE's): means,
    null counts, intervals and comparisons cover them. `counters` are a task's own per-agent counts.

    With `bootstrap` (the merged `vlnkit.comparison.accumulate` sums of the job), every leaderboard row
    gains "<metric>_ci" and "tied_with_above", and the summary gains "comparisons" and "breakdowns".

    A dataset whose every reference path is a single viewpoint (the R2R test split) gets
    "unscorable" (the reason) and no metrics: success would be trivially 100%.

    >>> totals = {"reference_episodes": 2, "single_viewpoint_episodes": 2}
    >>> summary = score_summary({"dataset": ["test.json"]}, totals, ["a"])
    >>> summary["metrics"]["sr"], summary["unscorable"].startswith("every one of the 2 reference episodes")
    (None, True)
    """
    agents = list(agents) if agents is not None else [""]
    blocks = {a: agent_summary(totals, a, metrics, counters) for a in agents}
    references = int(totals.get("reference_episodes", 0))
    single = int(totals.get("single_viewpoint_episodes", 0))
    unscorable = None
    if references and single == references:
        unscorable = (
            f"every one of the {references} reference episodes of --dataset={','.join(static.get('dataset', []))} "
            "holds only its start viewpoint (like the R2R test split): there is no goal to score against"
        )
        for b in blocks.values():
            b["metrics"] = {m: None for m in metrics}
            for per_language in b["by_language"].values():
                per_language["metrics"] = {m: None for m in metrics}
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
                "file_dead_letters": only["file_dead_letters"],
                "non_adjacent_steps": only["non_adjacent_steps"],
                "trajectories_with_jumps": only["trajectories_with_jumps"],
                "repeats_collapsed": only["repeats_collapsed"],
                "by_language": only["by_language"],
            }
        )
    summary.update(shared)
    summary["agents"] = blocks
    summary["leaderboard"] = leaderboard(blocks, own_metrics(static))  # with the task's own columns
    if bootstrap_options is not None:
        summary["bootstrap"] = bootstrap_options
    if bootstrap is not None and not unscorable:
        add_bootstrap(summary, bootstrap, bootstrap_options or {}, metrics)
    if unscorable:
        summary["unscorable"] = unscorable
    return summary


def add_bootstrap(summary: dict, sums: dict, options: dict, metrics=METRICS) -> None:
    """Intervals on the leaderboard rows, "comparisons", tie marks and "breakdowns".

    `sums` must hold the sums of every pair of agents (`bootstrap_pairs`): "comparisons" reports only
    the pairs the user asked for (each agent against `options["baseline"]`, or every pair), with Holm's
    correction over that family per metric, while the tie marks need the pairs adjacent in the
    ranking, whichever they are (`tie_marks`).
    """
    from vlnkit.comparison.accumulate import agent_intervals, breakdowns, comparisons, pairs_of

    confidence = float(options.get("confidence", 0.95))
    reported = pairs_of(list(summary["agents"]), options.get("baseline"))
    ranking = [r["agent"] for r in summary["leaderboard"]]
    tied = tie_marks(sums, ranking, confidence)
    for r in summary["leaderboard"]:
        r.update(agent_intervals(sums, r["agent"], metrics, confidence))
        r["tied_with_above"] = tied.get(r["agent"])
    summary["comparisons"] = comparisons(sums, metrics, confidence, reported)
    summary["breakdowns"] = ordered_breakdowns(breakdowns(sums, confidence))


def bootstrap_pairs(agents, baseline: str | None = None) -> list[tuple[str, str]]:
    """The pairs the job sums: those "comparisons" reports (`pairs_of(agents, baseline)`, oriented as
    asked: a = agent, b = baseline) and then every other pair, since the tie marks compare whichever
    agents end up adjacent in the ranking, which is known only once the job is done. Pair sums derive
    from the agents' own sums, so the other pairs cost little.

    >>> bootstrap_pairs(["x", "y", "z"], baseline="x")
    [('y', 'x'), ('z', 'x'), ('y', 'z')]
    """
    from vlnkit.comparison.accumulate import pairs_of

    asked = pairs_of(agents, baseline)
    covered = {frozenset(p) for p in asked}
    return asked + [p for p in pairs_of(agents) if frozenset(p) not in covered]


def _stored(sums: dict, pairs) -> list[tuple[str, str]]:
    """Each pair in the orientation its sums are stored under (either agent may be first)."""
    return [(a, b) if ("pair", a, b) in sums else (b, a) for a, b in pairs]


def tie_marks(sums: dict, ranking: list[str], confidence: float = 0.95) -> dict[str, bool | None]:
    """Per agent: True if its TIE_METRIC (SPL) does not differ significantly from the agent ranked just
    above it, False if it does (and for the first agent), None when unknown (no common episodes).

    The question a tie mark answers is "is this step of the ranking real?", asked once per adjacent
    pair, so the family Holm's correction runs over is the k - 1 adjacent pairs of k agents
    (`adjacent_ties`): not every pair, and not the pairs against a baseline (those answer other
    questions, in "comparisons").

    >>> from vlnkit.comparison.accumulate import slice_sums
    >>> table = {"agent": ["a"] * 4 + ["b"] * 4 + ["c"] * 4, "instr_id": ["1_0", "2_0", "3_0", "4_0"] * 3,
    ...          "scan": ["s"] * 12, "spl": [1.0, 1.0, 1.0, 1.0] * 2 + [0.0, 0.0, 0.0, 0.0]}
    >>> sums = slice_sums(table, ["spl"], replicates=100, pairs=[("a", "b"), ("a", "c"), ("b", "c")])
    >>> tie_marks(sums, ["a", "b", "c"])
    {'a': False, 'b': True, 'c': False}
    """
    from vlnkit.comparison.accumulate import comparisons
    from vlnkit.comparison.paired import adjacent_ties

    adjacent = _stored(sums, zip(ranking, ranking[1:]))
    return adjacent_ties(ranking, comparisons(sums, [TIE_METRIC], confidence, adjacent), TIE_METRIC, confidence)


def _group_order(groups: set[str]):
    """A sort key for one breakdown column's groups: reference-length buckets shortest first (as text,
    "10-12 m" would come before "8-10 m"), anything else (scans, languages) alphabetically."""
    labels = length_labels()
    if groups and groups <= set(labels):
        return labels.index
    return str


def ordered_breakdowns(by_column: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """The breakdown rows of each column in a natural order: groups (length buckets by length, scans and
    languages alphabetically), then agents by name within a group.

    >>> rows = [{"group": g, "agent": "a"} for g in ("10-12 m", "<8 m", "8-10 m")]
    >>> [r["group"] for r in ordered_breakdowns({"reference_length": rows})["reference_length"]]
    ['<8 m', '8-10 m', '10-12 m']
    """
    out = {}
    for column, rows in by_column.items():
        order = _group_order({r["group"] for r in rows})
        out[column] = sorted(rows, key=lambda r: (order(r["group"]), r["agent"]))
    return out
