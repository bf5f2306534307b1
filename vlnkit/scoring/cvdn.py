"""CVDN's NDH rule for the score job: success within 3 m (strictly) of the target path's goal, oracle path
success against the planner's goal, goal progress towards the dialog's end panos.

The reader (`vlnkit.datasets.reference_batches`, format "cvdn") makes each NDH instance one episode keyed by
its inst_idx, with the target path (`--target_path`: planner, player or trusted, `vlnkit.datasets.ndh`) as
its reference path and the planner's goal and the end panos as extras. So the join checks the trajectory's
start against the target path's, as the evaluator does (eval.py:62), and the compiled kernel scores every
path metric against the target path; this rule decides success as the evaluator does and adds what only
NDH has (`vlnkit.evaluation.ndh`, where each rule is cited: mmurray/cvdn `tasks/NDH/eval.py`):

- `sr`, `osr`: NE < 3 m and ONE < 3 m against the target's goal (eval.py:110-111), given to the kernel,
  which gates SPL with them (SPL's reference: the shortest distance from the start, eval.py:95, 114-122);
- `ops`: oracle path success against the planner's goal; `gp`: goal progress (dist_to_end_reduction);
  `sgp`: gp where successful (the PREVALENT_R2R copy's sc_dr).

Where the evaluator stops, the pair is refused (a "rule" dead letter naming the instance, and the episode
is without a usable prediction): a move between viewpoints that share no edge (eval.py:83-91, naming
both), a planner goal or end pano outside the scan's graph, or a goal or end pano out of reach of the start
(its distance table holds reachable pairs only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from vlnkit.datasets.columns import Paths, Vocabulary
from vlnkit.datasets.ndh import CVDN_FORMAT, DEFAULT_TARGET_PATH, END_PANOS, PLANNER_GOAL
from vlnkit.evaluation.common import METRIC_MEANINGS, METRICS
from vlnkit.evaluation.ndh import first_non_edges, ndh_extras, ndh_success, nearest
from vlnkit.evaluation.schemas import benchmark_episode_scores
from vlnkit.scoring.benchmark import Benchmark, BenchmarkOptions, RuleOutput, RulePairs
from vlnkit.scoring.join import to_scan_nodes

NDH_OWN = ("ops", "gp", "sgp")
CVDN_METRICS = (*METRICS, *NDH_OWN)
TARGET_PATH = "target_path"  # the benchmark option (`BenchmarkOptions.get`)

# The rows of every graph dataset, with NDH's own metrics after the shared ones.
CVDN_EPISODE_SCORES = benchmark_episode_scores(
    "cvdn_episode_scores",
    1,
    [pa.field(m, pa.float64(), nullable=True) for m in NDH_OWN],
    {
        "instr_id": "the NDH instance (its inst_idx)",
        "language": "the instruction's language tag; null for CVDN",
        **{m: METRIC_MEANINGS[m] + " (against the --target_path path)" for m in METRICS},
        "sr": "success: 1 if the agent stopped less than 3 m from the target path's goal, else 0",
        "osr": "oracle success: 1 if the agent came less than 3 m from the target path's goal, else 0",
        "ops": "oracle path success: 1 if the agent came less than 3 m from the planner's goal, else 0",
        "gp": "goal progress: metres by which the agent closed its distance to the nearest of the dialog's end panos",
        "sgp": "goal progress where the episode succeeded, else 0",
        "path": "the agent's trajectory as scored: viewpoint ids",
    },
)


@dataclass
class NDHContext:
    """What the rule needs beyond the pairs: the worker's vocabulary and graphs (to place the extras' viewpoints
    in their scans) and the target path the references were read with."""

    vocab: Vocabulary
    graphs: object
    target_path: str = DEFAULT_TARGET_PATH


def load_ndh(options: BenchmarkOptions, vocab, graphs) -> NDHContext:
    return NDHContext(vocab, graphs, options.get(TARGET_PATH, DEFAULT_TARGET_PATH))


def _scan_nodes(pairs: RulePairs, ctx: NDHContext, paths: Paths) -> tuple[Paths, dict[int, str]]:
    """An extra's viewpoints as node indices of each pair's scan (a node 0 where one is not in it), and
    {pair: the first viewpoint that is not}."""
    names = np.asarray(pairs.scans.scans, dtype=object)
    scan_ids = np.asarray([ctx.vocab.scan_ids.get(s, -1) for s in pairs.scans.scans], np.int64)
    nodes, bad = to_scan_nodes(paths, scan_ids[pairs.slot], names[pairs.slot], ctx.vocab, ctx.graphs)
    values = nodes.values.copy()
    for row in bad:
        values[nodes.offsets[row] : nodes.offsets[row + 1]] = 0
    return Paths(nodes.offsets, values), bad


def ndh_rule(pairs: RulePairs, ctx: NDHContext, config) -> RuleOutput:
    """NDH's metrics of a bucket's pairs (see the module docstring)."""
    scans, slot = pairs.scans, pairs.slot
    base, size = scans.starts[slot], scans.sizes[slot]

    def distance(episode, a, b):
        return scans.distances[base[episode] + a * size[episode] + b]

    def adjacent(episode, a, b):
        return scans.adjacent[base[episode] + a * size[episode] + b]

    refs, queries = pairs.reference_nodes, pairs.queries
    every = np.arange(len(pairs))
    starts, goals = refs.values[refs.offsets[:-1]], refs.values[refs.offsets[1:] - 1]
    planner, bad_goal = _scan_nodes(pairs, ctx, pairs.ref_extra[PLANNER_GOAL])
    ends, bad_end = _scan_nodes(pairs, ctx, pairs.ref_extra[END_PANOS])
    planner_goals = planner.values[planner.offsets[1:] - 1]
    finals = pairs.last_nodes()

    reasons: dict[int, str] = {}
    names = lambda p, nodes: scans.names(slot[p], np.asarray(nodes)).to_pylist()  # noqa: E731
    for what, bad in (("planner goal", bad_goal), ("end pano", bad_end)):
        for p, v in bad.items():
            reasons.setdefault(p, f"{what} {v!r} is not an included viewpoint of scan {scans.scans[slot[p]]!r}")
    # The evaluator looks up d(start, goal), d(., planner goal) and d(start, e) for every end pano (eval.py:66-76).
    end_owner = np.repeat(np.arange(len(ends)), ends.lengths)
    reach = np.isfinite(distance(end_owner, starts[end_owner], ends.values))
    for what, ok, nodes in (
        ("goal", np.isfinite(distance(every, starts, goals)), goals),
        ("planner goal", np.isfinite(distance(every, starts, planner_goals)), planner_goals),
        ("end pano", np.bincount(end_owner[~reach], minlength=len(pairs)) == 0, None),
    ):
        for p in np.flatnonzero(~ok).tolist():
            node = nodes[p] if nodes is not None else ends.values[np.flatnonzero(~reach & (end_owner == p))[0]]
            where = f"scan {scans.scans[slot[p]]!r}"
            v, start = names(p, [node, starts[p]])
            reasons.setdefault(p, f"{what} {v!r} is unreachable from the start {start!r} on {where}")
    step = first_non_edges(adjacent, queries.offsets, queries.values)
    for p in np.flatnonzero(step >= 0).tolist():
        at = queries.offsets[p] + step[p]
        u, v = names(p, queries.values[at : at + 2])
        reasons.setdefault(
            p,
            f"trajectory moves from {u!r} to {v!r} (step {int(step[p])}), but the navigation graph of scan "
            f"{scans.scans[slot[p]]!r} has no edge between them",
        )
    refused = np.zeros(len(pairs), bool)
    refused[list(reasons)] = True
    safe = np.where(refused, starts, goals), np.where(refused, starts, planner_goals)  # no inf for refused pairs
    success = ndh_success(distance(every, finals, safe[0]))
    oracle = ndh_success(nearest(distance, queries.offsets, queries.values, safe[0]))
    columns = dict(pairs.score(success, oracle).scores)
    q = (queries.offsets, queries.values)
    with np.errstate(invalid="ignore"):
        columns.update(ndh_extras(distance, starts, finals, safe[1], success, q, (ends.offsets, ends.values)))
    return RuleOutput(columns, refused=refused, reasons=reasons)


CVDN = Benchmark(
    "cvdn",
    (CVDN_FORMAT,),
    CVDN_EPISODE_SCORES,
    CVDN_METRICS,
    rule=ndh_rule,
    load=load_ndh,
    leaderboard_extra=("ops", "gp"),
)
