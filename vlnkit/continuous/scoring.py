"""Path metrics of continuous episodes from 3-D positions: many episodes in one compiled call.

`score_paths(reference, query)` scores pair p = (reference.path(p), query.path(p)) for every p and
returns numpy columns; `score_episodes` joins an `Episodes` table with a `Positions` table by
episode id first and returns a pyarrow Table. Definitions (d(a, b) the 3-D euclidean distance,
d_th = `threshold`, 3 m; R the reference, Q the agent's positions):

- Q's consecutive repeated positions are dropped first (VLN-CE's rule: a position repeats the one
  before when all three coordinates are equal numbers), unless `keep_repeats`; R is used as given.
  The reference is the gt `locations` (VLN-CE) or the episode's `reference_path` (`Episodes.reference`).
- `pl`: sum of d(q_i, q_i+1) (euclidean, as VLN-CE's PathLength); repeats add nothing.
- `dtw`: `dtw="exact"`, the smallest sum of d(r_i, q_j) over monotone alignments (steps (1, 0),
  (0, 1), (1, 1), both ends aligned); `dtw="fastdtw"`, the `fastdtw` package's approximation at
  `radius` (VLN-CE's: radius 1, `fastdtw(Q, R)`), under the rules of its compiled implementation
  (`fastdtw_rules="compiled"`, default) or of its pure-Python one (`"python"`); see `kernels`.
- `ndtw` = exp(-dtw / (d_th x |R|)); `sdtw` = success x ndtw, given `success` (0/1 per episode,
  e.g. from a simulator result file).
- `pc` = mean over r in R of exp(-d(r, Q) / d_th), d(r, Q) the distance to Q's nearest position;
  `ls` = EPL / (EPL + |EPL - pl|), EPL = pc x PL(R) (1 when both are 0); `cls` = pc x ls (the CLS
  paper's definition with point distances).
- `steps`: the number of positions given, minus one (VLN-CE's inference output writes one position
  per action, so this is its steps_taken; repeats count).

Success, NE, OSR and SPL need the geodesic distance on the scene's navigation mesh, which positions do
not give. With `goal_distance="euclidean"` (and `goal`) they are computed from straight-line distances
instead and named so: `ne_euclidean` = d(q_last, goal) and `one_euclidean` = min d(q, goal) are lower
bounds of NE and ONE (a straight line is never longer than a walk around walls); therefore
`sr_euclidean` (STOP called, `stopped`, and ne_euclidean within d_th) and `osr_euclidean` are upper
bounds of SR and OSR, and so is `spl_euclidean` = sr_euclidean x L / max(L, pl) with L the
episode's geodesic start-goal distance (`shortest`, as VLN-CE's SPL; d(q_1, goal) where it is NaN or
not given); `sdtw_euclidean` = sr_euclidean x ndtw. They are not comparable with the numbers papers report.
`success_rule` ("le": within means <= d_th, the toolkit's default; "lt": < d_th, VLN-CE's) decides
the ties.

>>> line = PointPaths.from_lists([[[0, 0, 0], [1, 0, 0], [2, 0, 0]]])
>>> out = score_paths(line, line)
>>> float(out["ndtw"][0]), float(out["pl"][0]), float(out["cls"][0])
(1.0, 2.0, 1.0)
"""

from __future__ import annotations

import numpy as np

from vlnkit.continuous import kernels
from vlnkit.continuous.points import PointPaths
from vlnkit.evaluation.common import DEFAULT_SUCCESS_RULE, DEFAULT_THRESHOLD, check_options
from vlnkit.parallel import parts, run_in_parallel, thread_count

DTW_MODES = ("exact", "fastdtw")
FASTDTW_RULES = {"compiled": kernels.RULES_COMPILED, "python": kernels.RULES_PYTHON}
GOAL_DISTANCES = (None, "euclidean")
REFERENCES = ("gt", "reference_path")
METRICS = ("pl", "dtw", "ndtw", "pc", "ls", "cls", "steps")  # always; `sdtw` with success


def score_paths(
    reference: PointPaths,
    query: PointPaths,
    *,
    dtw: str = "exact",
    fastdtw_rules: str = "compiled",
    radius: int = 1,
    threshold: float = DEFAULT_THRESHOLD,
    keep_repeats: bool = False,
    success=None,
    goal_distance: str | None = None,
    goal=None,
    shortest=None,
    stopped=None,
    success_rule: str = DEFAULT_SUCCESS_RULE,
) -> dict[str, np.ndarray]:
    """The metrics of the module docstring for every pair (reference.path(p), query.path(p)).

    Raises ValueError for mismatched lengths, an empty path, or an unknown option.
    """
    check_options(threshold, success_rule=success_rule)
    if dtw not in DTW_MODES:
        raise ValueError(f"dtw must be one of {DTW_MODES}, got {dtw!r}")
    if fastdtw_rules not in FASTDTW_RULES:
        raise ValueError(f"fastdtw_rules must be one of {tuple(FASTDTW_RULES)}, got {fastdtw_rules!r}")
    if goal_distance not in GOAL_DISTANCES:
        raise ValueError(f"goal_distance must be None or 'euclidean', got {goal_distance!r}")
    if not (isinstance(radius, int | np.integer) and radius >= 1):
        raise ValueError(f"radius must be an integer >= 1, got {radius!r}")
    n = len(reference)
    if len(query) != n:
        raise ValueError(f"{n} reference paths but {len(query)} query paths")
    for what, paths in (("reference", reference), ("query", query)):
        empty = np.flatnonzero(paths.lengths() == 0)
        if len(empty):
            raise ValueError(f"{what} path #{int(empty[0])} is empty; metrics need at least one position")
    raw_lengths = query.lengths()
    if not keep_repeats:
        query = query.collapse_repeats()
    pairs = np.repeat(np.arange(n, dtype=np.int64), 2).reshape(n, 2)
    pl = np.empty(n)
    pl_ref = np.empty(n)
    kernels.path_lengths(query.points, query.offsets, pl)
    kernels.path_lengths(reference.points, reference.offsets, pl_ref)
    dist = np.empty(n)
    pc = np.empty(n)
    exact = dtw == "exact"
    rules = FASTDTW_RULES[fastdtw_rules]
    ref, qry = reference, query

    def score_range(first: int, stop: int) -> None:  # the kernels release the GIL: ranges run on threads
        part = pairs[first:stop]
        kernels.dtw_and_coverage(
            ref.points,
            ref.offsets,
            qry.points,
            qry.offsets,
            part,
            exact,
            float(threshold),
            dist[first:stop],
            pc[first:stop],
        )
        if not exact:
            kernels.fastdtw_many(
                ref.points, ref.offsets, qry.points, qry.offsets, part, int(radius), rules, dist[first:stop]
            )

    cells = int(np.dot(reference.lengths(), query.lengths()))
    run_in_parallel(score_range, parts(n, thread_count(cells), step=64))
    ndtw = np.exp(-dist / (reference.lengths() * float(threshold)))
    epl = pc * pl_ref
    denom = epl + np.abs(epl - pl)
    with np.errstate(invalid="ignore", divide="ignore"):
        ls = np.where(denom == 0, 1.0, epl / np.where(denom == 0, 1.0, denom))
    out = {
        "pl": pl,
        "dtw": dist,
        "ndtw": ndtw,
        "pc": pc,
        "ls": ls,
        "cls": pc * ls,
        "steps": (raw_lengths - 1).astype(np.float64),
    }
    if success is not None:
        out["sdtw"] = _flags(success, n, "success") * ndtw
    if goal_distance == "euclidean":
        out.update(_euclidean(query, goal, shortest, stopped, pl, ndtw, float(threshold), success_rule))
    return out


def score_episodes(episodes, positions, *, reference: str = "gt", stage: str = "score", **options):
    """Join `positions` to `episodes` (by episode id, or RxR instruction id) and score the pairs.

    Returns (pyarrow Table: episode_id, instr_id, trajectory_id, scan, language, then the metric
    columns of `score_paths`; the Join; RecordErrors of trajectories without an episode). With
    `goal_distance="euclidean"` the episodes' goals and geodesic start-goal distances are used, and
    `positions.stopped` (VLN-CE inference output) says whether STOP was called.
    """
    import pyarrow as pa

    from vlnkit.continuous.positions import join

    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}")
    matched, errors = join(episodes, positions, stage)
    rows, prow = matched.episode_rows, matched.position_rows
    if options.get("goal_distance") == "euclidean":
        options.setdefault("goal", episodes.goal[rows])
        options.setdefault("shortest", episodes.geodesic_distance[rows])
        if positions.stopped is not None:
            options.setdefault("stopped", positions.stopped[prow])
    scores = score_paths(episodes.reference(reference).take(rows), positions.paths.take(prow), **options)
    table = pa.table(
        {
            "episode_id": pa.array(episodes.episode_id[rows]),
            "instr_id": pa.array(episodes.instr_id[rows].tolist(), pa.string()),
            "trajectory_id": pa.array(episodes.trajectory_id[rows]),
            "scan": pa.array(episodes.scan[rows].tolist(), pa.string()),
            "language": pa.array(episodes.language[rows].tolist(), pa.string()),
            **{name: pa.array(col) for name, col in scores.items()},
        }
    )
    return table, matched, errors


def _flags(values, n: int, what: str) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(values) != n:
        raise ValueError(f"{what} has {len(values)} values for {n} episodes")
    if not np.isin(values, (0.0, 1.0)).all():
        raise ValueError(f"{what} must be 0 or 1 per episode")
    return values


def _euclidean(query: PointPaths, goal, shortest, stopped, pl, ndtw, th: float, rule: str) -> dict[str, np.ndarray]:
    n = len(query)
    if goal is None:
        raise ValueError("goal_distance='euclidean' needs the goal positions (goal)")
    goal = np.asarray(goal, dtype=np.float64).reshape(-1, 3)
    if len(goal) != n:
        raise ValueError(f"goal has {len(goal)} positions for {n} episodes")
    lengths = query.lengths()
    to_goal = np.sqrt(((query.points - np.repeat(goal, lengths, axis=0)) ** 2).sum(axis=1))
    ne = to_goal[query.offsets[1:] - 1]
    one = np.minimum.reduceat(to_goal, query.offsets[:-1]) if n else np.zeros(0)
    within = np.less if rule == "lt" else np.less_equal
    stop = np.ones(n, dtype=bool) if stopped is None else np.asarray(stopped, dtype=bool).reshape(-1)
    if len(stop) != n:
        raise ValueError(f"stopped has {len(stop)} values for {n} episodes")
    sr = (stop & within(ne, th)).astype(np.float64)
    start = np.sqrt(((query.firsts() - goal) ** 2).sum(axis=1))
    best = start if shortest is None else np.asarray(shortest, dtype=np.float64).reshape(-1)
    best = np.where(np.isfinite(best), best, start)
    longest = np.maximum(best, pl)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(longest > 0, best / np.where(longest > 0, longest, 1.0), 1.0)
    return {
        "ne_euclidean": ne,
        "one_euclidean": one,
        "sr_euclidean": sr,
        "osr_euclidean": within(one, th).astype(np.float64),
        "spl_euclidean": sr * ratio,
        "sdtw_euclidean": sr * ndtw,
    }
