"""CVDN's rule for the score job: success within 3 m (strictly) of the target path's goal, oracle path
success against the planner's goal, goal progress towards the dialog's end panos.

The reader (`vlnkit.datasets.reference_batches`, format "cvdn") makes each CVDN instance one episode keyed by
its inst_idx, with the target path (`--target_path`: planner, player or trusted, `vlnkit.datasets.cvdn`) as
its reference path and the planner's goal and the end panos as extras. So the join checks the trajectory's
start against the target path's, as the evaluator does (eval.py:62), and the compiled kernel scores every
path metric against the target path; this rule decides success as the evaluator does and adds what only
CVDN has (`vlnkit.evaluation.cvdn`, where each rule is cited: mmurray/cvdn `tasks/NDH/eval.py`):

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

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from vlnkit.datasets.columns import Paths, Vocabulary
from vlnkit.datasets.cvdn import CVDN_FORMAT, DEFAULT_TARGET_PATH, END_PANOS, PLANNER_GOAL, TARGET_PATH, TARGET_PATHS
from vlnkit.evaluation.common import METRES, METRIC_MEANINGS, METRICS, RATE
from vlnkit.evaluation.leaderboard import OwnMetric
from vlnkit.evaluation.schemas import task_episode_scores
from vlnkit.scoring.task import Decision, RulePairs, Task, TaskOptions

# Oracle path success and goal progress on the leaderboard, with their intervals; goal progress where successful.
OWN_METRICS = (
    OwnMetric("ops", "OPS", RATE, leaderboard=True),
    OwnMetric("gp", "GP", METRES, leaderboard=True),
    OwnMetric("sgp", "SGP", METRES),
)
CVDN_OWN = tuple(o.metric for o in OWN_METRICS)
CVDN_METRICS = (*METRICS, *CVDN_OWN)

# The rows of every graph dataset, with CVDN's own metrics after the shared ones.
CVDN_EPISODE_SCORES = task_episode_scores(
    "cvdn_episode_scores",
    1,
    [pa.field(m, pa.float64(), nullable=True) for m in CVDN_OWN],
    {
        "instr_id": "the CVDN instance (its inst_idx)",
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


@dataclass(frozen=True)
class CVDNOptions(TaskOptions):
    """`target_path`: the path SR, OSR, SPL and NE are measured against (`vlnkit.datasets.cvdn.TARGET_PATHS`)."""

    target_path: str = DEFAULT_TARGET_PATH

    def reading(self) -> dict:
        return {TARGET_PATH: self.target_path}


def add_flags(parser) -> None:
    parser.add_argument(
        f"--{TARGET_PATH}",
        choices=TARGET_PATHS,
        default=DEFAULT_TARGET_PATH,
        help="CVDN: the path SR, OSR, SPL and NE are measured against: the planner's (the official evaluator's "
        "default), the player's, or trusted (the player's when it reaches the planner's goal, else the planner's; "
        "tasks/NDH/eval.py path_type)",
    )


def options_of(args, dataset_files: list[str]) -> CVDNOptions:
    """CVDN's option from the flags; ValueError (one line) for a flag that does not apply."""
    if args.spl_reference != "shortest":
        raise ValueError("--spl_reference does not apply to CVDN: its SPL's reference is d(start, goal) (eval.py)")
    if args.success_distance != 3.0:
        raise ValueError("--success_distance does not apply to CVDN: CVDN's success is NE < 3 m (eval.py)")
    return CVDNOptions(args.target_path)


def strict_success(config):
    """CVDN's success is NE < 3 m (eval.py): its rule decides it, and the summary says so."""
    return dataclasses.replace(config, success_rule="lt")


def success_line(options: dict) -> str:
    return (
        f"Success: NE < 3 m to the goal of the {options['target_path']} path (CVDN, "
        "tasks/NDH/eval.py); OPS: oracle success against the planner's goal; GP: goal progress (m) towards "
        "the dialog's end panos."
    )


def title(options: dict) -> str:
    return (
        f"Scores (CVDN: success NE < {options['success_distance']} m to the {options['target_path']} path's goal, "
        f"keep_repeats={options['keep_repeats']})"
    )


@dataclass
class CVDNContext:
    """What the rule needs beyond the pairs: the worker's vocabulary and graphs (to place the extras' viewpoints
    in their scans) and the target path the references were read with."""

    vocab: Vocabulary
    graphs: object
    target_path: str = DEFAULT_TARGET_PATH


def load_cvdn(options: CVDNOptions, vocab, graphs) -> CVDNContext:
    return CVDNContext(vocab, graphs, options.target_path)


def _scan_nodes(pairs: RulePairs, ctx: CVDNContext, paths: Paths) -> tuple[Paths, dict[int, str]]:
    """An extra's viewpoints as node indices of each pair's scan (a node 0 where one is not in it), and
    {pair: the first viewpoint that is not}."""
    from vlnkit.scoring.join import to_scan_nodes  # compiled: loaded where the job scores, not for --help

    names = np.asarray(pairs.scans.scans, dtype=object)
    scan_ids = np.asarray([ctx.vocab.scan_ids.get(s, -1) for s in pairs.scans.scans], np.int64)
    nodes, bad = to_scan_nodes(paths, scan_ids[pairs.slot], names[pairs.slot], ctx.vocab, ctx.graphs)
    values = nodes.values.copy()
    for row in bad:
        values[nodes.offsets[row] : nodes.offsets[row + 1]] = 0
    return Paths(nodes.offsets, values), bad


def cvdn_rule(pairs: RulePairs, ctx: CVDNContext) -> Decision:
    """What CVDN decides of a bucket's pairs: success, oracle success, its own metrics and the pairs it
    refuses (see the module docstring)."""
    from vlnkit.evaluation.cvdn import cvdn_extras, cvdn_success, first_non_edges, nearest  # compiled

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
    success = cvdn_success(distance(every, finals, safe[0]))
    oracle = cvdn_success(nearest(distance, queries.offsets, queries.values, safe[0]))
    q = (queries.offsets, queries.values)
    with np.errstate(invalid="ignore"):
        columns = cvdn_extras(distance, starts, finals, safe[1], success, q, (ends.offsets, ends.values))
    return Decision(success, oracle, refused, reasons, columns=columns)


CVDN = Task(
    "cvdn",
    (CVDN_FORMAT,),
    CVDN_EPISODE_SCORES,
    CVDN_METRICS,
    decide=cvdn_rule,
    load=load_cvdn,
    own_metrics=OWN_METRICS,
    add_flags=add_flags,
    options_of=options_of,
    configure=strict_success,
    success=success_line,
    title=title,
    license=("CVDN", "MIT (mmurray/cvdn code and dialogs; not verified here); Matterport3D terms"),
)
