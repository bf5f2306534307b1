"""REVERIE's rule: success is seeing the target object from where the agent stops; grounding is naming it.

As the official evaluator (`tasks/REVERIE/eval_release.py` of YuankaiQi/REVERIE, `_score_item` and `score`)
computes them, per episode:

- `sr`: the target is visible (`vlnkit.datasets.reverie`: non-empty `visible_pos`) from the trajectory's last
  viewpoint; no distance test (the visibility files hold objects within 3 m).
- `osr`: visible from any viewpoint of the trajectory.
- `spl`: `sr * s / max(l, s)`, l the trajectory's length, s the shortest distance from the start to the
  reference path's last viewpoint (`--reverie_evaluator=official`); DUET (`map_nav_src/reverie/env.py`,
  `_eval_item`) takes s as the reference path's own length and floors the denominator at 0.01
  (`--reverie_evaluator=duet`).
- `rgs`: the predicted object id equals the target (`str(pred) == str(objId)`), whatever the navigation;
  `rgspl`: `rgs * s / max(l, s)` (same s and floor).
- `pl`, `ne` (distance from the stop to the reference path's last viewpoint: R2R's, not in either
  evaluator), `steps` (moves of the trajectory as given, DUET's `steps`), and the path-fidelity metrics of
  R2R (nDTW, CLS, DTW, AD, MD against the reference path; SED and SDTW gated by this success).

Every difference between the two evaluators, with file and line, is in docs/jobs/score.md ("REVERIE").
A prediction without a usable object id (`predicted_object`) is a grounding failure, counted per agent
(`object_id_unusable`); an episode whose target no viewpoint sees is counted (`targets_never_visible`:
DUET's evaluator stops on an assertion there, the official one scores it as a failure).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from vlnkit.datasets.reverie import (
    INSTRUCTION_SETS,
    NO_OBJECT,
    PREDICTED_OBJECT,
    REVERIE_FORMAT,
    TARGET_OBJECT,
    read_visibility,
    unpack_keys,
)
from vlnkit.evaluation.common import COUNT, METRIC_MEANINGS, METRICS, RATE
from vlnkit.evaluation.leaderboard import OwnMetric
from vlnkit.evaluation.schemas import task_episode_scores
from vlnkit.io import fileio
from vlnkit.io.dead_letters import UnusableInput
from vlnkit.scoring.task import Decision, RulePairs, Task, TaskOptions

EVALUATORS = ("official", "duet")  # whose conventions: eval_release.py's or DUET's env.py
# Object grounding (the predicted object is the target; RGSPL weighs it by path efficiency) on the leaderboard,
# with its intervals, and the trajectory's moves.
OWN_METRICS = (
    OwnMetric("rgs", "RGS", RATE, leaderboard=True),
    OwnMetric("rgspl", "RGSPL", RATE, leaderboard=True),
    OwnMetric("steps", "STEPS", COUNT),
)
OBJECT_METRICS = tuple(o.metric for o in OWN_METRICS)
REVERIE_METRICS = (*METRICS, *OBJECT_METRICS)
DUET_FLOOR = 0.01  # env.py: max(trajectory_lengths, gt_lengths, 0.01)
TARGET, PREDICTED = TARGET_OBJECT, PREDICTED_OBJECT

# The rows of every graph dataset, with the object metrics and ids after the shared metrics.
REVERIE_EPISODE_SCORES = task_episode_scores(
    "reverie_episode_scores",
    1,
    [
        *[pa.field(m, pa.float64(), nullable=True) for m in OBJECT_METRICS],
        pa.field(TARGET, pa.int64(), nullable=False),
        pa.field(PREDICTED, pa.int64(), nullable=True),
    ],
    {
        "instr_id": "the episode: '<path_id>_<objId>_<k>'",
        "language": "the instruction's language tag; null for REVERIE",
        **{m: METRIC_MEANINGS[m] for m in METRICS},
        "sr": "success: 1 if the target object is visible from where the agent stopped, else 0",
        "osr": "oracle success: 1 if the target object is visible from some viewpoint of the trajectory",
        "spl": "success weighted by path length (--reverie_evaluator decides the shortest length)",
        "rgs": "remote grounding success: 1 if the predicted object is the target, else 0",
        "rgspl": "grounding success weighted by path length",
        "steps": "moves of the trajectory as given",
        TARGET: "the target object's id",
        PREDICTED: "the object id the agent predicted; null when it gave none usable",
        "path": "the agent's trajectory as scored: viewpoint ids",
    },
)


@dataclass(frozen=True)
class ReverieOptions(TaskOptions):
    """`visibility`: the object-visibility source (the release's BBox folder or DUET's BBoxes.json);
    `evaluator`: whose conventions (`EVALUATORS`); `instruction_set`: the records' `instructions` or
    `instructions_l` (eval_release.py's instrType)."""

    visibility: str | None = None
    evaluator: str = "official"
    instruction_set: str = "instructions"

    def reading(self) -> dict:
        return {"instruction_set": self.instruction_set}

    def inputs(self) -> dict[str, str]:  # it decides success: an input of the run, with its checksum
        if not self.visibility:
            return {}
        folder = not self.visibility.endswith(".json")
        return {"visibility": fileio.join(self.visibility, "*.json") if folder else self.visibility}


def add_flags(parser) -> None:
    parser.add_argument(
        "--visibility",
        default=None,
        help="REVERIE: object visibility, the release's BBox folder (<scan>_<viewpoint>.json files) or DUET's merged "
        "BBoxes.json (default: BBox beside the first --dataset file)",
    )
    parser.add_argument(
        "--reverie_evaluator",
        choices=EVALUATORS,
        default="official",
        help="REVERIE: whose conventions, the official evaluator's (eval_release.py: SPL's shortest length is "
        "d(start, goal)) or DUET's (its env.py: the reference path's length, denominator floored at 0.01)",
    )
    parser.add_argument(
        "--instruction_set",
        choices=INSTRUCTION_SETS,
        default="instructions",
        help="REVERIE: the episodes are the records' instructions or their instructions_l (eval_release.py's instrType)",
    )


def options_of(args, dataset_files: list[str]) -> ReverieOptions:
    """REVERIE's options from the flags; ValueError (one line) for a flag that does not apply, visibility
    files that are not there (a folder without `<scan>_<viewpoint>.json` files: every episode would fail),
    or an instruction set a dataset file's records do not hold."""
    from vlnkit.datasets.formats import file_record  # the first record of each file, as the job tells formats

    if args.spl_reference != "shortest":
        raise ValueError("--spl_reference does not apply to REVERIE: its SPL follows --reverie_evaluator")
    visibility = args.visibility or fileio.join(os.path.dirname(dataset_files[0]), "BBox")
    found = (
        fileio.exists(visibility)
        if visibility.endswith(".json")
        else fileio.any_match(fileio.join(visibility, "*.json"))
    )
    if not found:
        raise ValueError(
            f"--visibility={visibility}: no visibility files found; REVERIE needs its object-visibility files (the "
            "release's BBox folder of <scan>_<viewpoint>.json files, or DUET's BBoxes.json)"
        )
    for path in dataset_files:
        record = file_record(path)
        if record is not None and args.instruction_set not in record:
            raise ValueError(
                f"--instruction_set={args.instruction_set}: {path} has no {args.instruction_set!r} in its records "
                "(REVERIE v1 has only 'instructions')"
            )
    return ReverieOptions(visibility, args.reverie_evaluator, args.instruction_set)


def success_line(options: dict) -> str:
    return (
        "Success: the target object is visible from the stop (REVERIE, no distance test); RGS: the predicted "
        f"object is the target; SPL and RGSPL by the {options.get('evaluator', 'official')} evaluator's rule."
    )


@dataclass
class Visibility:
    """A worker's object visibility: a bit per (global viewpoint, object id) seen (`bits`, row `stride` wide;
    3 MB for REVERIE v1; `vlnkit.datasets.ragged.bits_along` looks it up along trajectories), whether each
    (scan number, object id) is seen from somewhere (`objects`, scans x `stride`), the vocabulary that
    numbers viewpoints, and the task's options."""

    bits: np.ndarray
    stride: int
    objects: np.ndarray
    vocab: object
    options: ReverieOptions

    def seen_somewhere(self, scan: np.ndarray, obj: np.ndarray) -> np.ndarray:
        """Whether object obj[i] of scan number scan[i] (-1: a scan the vocabulary lacks) is visible from any
        viewpoint."""
        ok = (scan >= 0) & (obj >= 0) & (obj < self.stride)
        return ok & self.objects[np.where(ok, scan, 0), np.where(ok, obj, 0)]


def load_visibility(options: ReverieOptions, vocab, graphs=None) -> Visibility:
    """The worker's object visibility. A visibility file that cannot be read makes the run's results
    untrustworthy (its viewpoint's objects would count as unseen): `UnusableInput`, the run fails in one
    line naming the file."""
    if not options.visibility:
        raise ValueError("REVERIE needs its object-visibility files: --visibility=<BBox folder or BBoxes.json>")
    try:
        seen, objects = read_visibility(options.visibility, vocab)
    except ValueError as exc:
        raise UnusableInput(str(exc)) from None
    viewpoint, obj = unpack_keys(seen)
    stride = int(obj.max()) + 1 if len(obj) else 1
    flags = np.zeros(len(vocab.strings) * stride, bool)
    flags[viewpoint * stride + obj] = True
    scan, scan_obj = unpack_keys(objects)  # the same objects as `seen`'s, so each is below `stride`
    somewhere = np.zeros((len(vocab.scan_ids), stride), bool)
    somewhere[scan, scan_obj] = True
    return Visibility(np.packbits(flags, bitorder="little"), stride, somewhere, vocab, options)


def visible(pairs: RulePairs, vis: Visibility, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(target visible from the last viewpoint, from any viewpoint of the trajectory), per pair."""
    from vlnkit.datasets.ragged import bits_along  # compiled: loaded where the job scores, not for --help

    q = pairs.queries
    return bits_along(q.offsets, q.values, pairs.vocabulary_bases(vis.vocab), target, vis.bits, vis.stride)


def reverie_rule(pairs: RulePairs, vis: Visibility) -> Decision:
    """What REVERIE decides of a bucket's pairs: success and oracle success by visibility, grounding, the
    ids, and the counts of unusable object ids and of targets no viewpoint sees (see the module docstring)."""
    target = pairs.ref_extra[TARGET]
    predicted = pairs.pred_extra.get(PREDICTED, np.full(len(pairs), NO_OBJECT, np.int64))
    success, oracle = visible(pairs, vis, target)
    rgs = (predicted == target) & (predicted != NO_OBJECT)
    scan_ids = np.asarray([vis.vocab.scan_ids.get(s, -1) for s in pairs.scans.scans], np.int64)[pairs.slot]
    never = ~vis.seen_somewhere(scan_ids, target)
    return Decision(
        success.astype(np.float64),
        oracle.astype(np.float64),
        counts={
            "object_id_unusable": pairs.agent[predicted == NO_OBJECT],
            "targets_never_visible": pairs.agent[never],
        },
        columns={
            "rgs": rgs.astype(np.float64),
            "steps": (pairs.queries.lengths - 1).astype(np.float64),
            TARGET: target,
            PREDICTED: predicted,
        },
    )


def reverie_lengths(pairs: RulePairs, vis: Visibility, decision: Decision, scores) -> dict:
    """SPL and RGSPL by the chosen evaluator's shortest length, from the path metrics' PL (`scores`, the
    core's `PairScores`)."""
    pl = scores.scores["pl"]
    if vis.options.evaluator == "duet":
        shortest = scores.reference_length
        ratio = shortest / np.maximum(np.maximum(pl, shortest), DUET_FLOOR)
    else:
        starts = pairs.queries.values[pairs.queries.offsets[:-1]]
        goals = pairs.reference_nodes.values[pairs.reference_nodes.offsets[1:] - 1]
        shortest = pairs.distance(starts, goals)
        longest = np.maximum(pl, shortest)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(longest > 0, shortest / longest, 1.0)  # R2R's SPL: 1 where both are 0
    return {"spl": decision.success * ratio, "rgspl": decision.columns["rgs"] * ratio}


def reverie_ids(keys: np.ndarray, k: np.ndarray) -> pa.Array:
    """REVERIE instr_ids "<path_id>_<objId>_<k>" of packed record keys."""
    from vlnkit.scoring.join import instr_ids  # compiled: loaded where the job scores, not for --help

    path_id, obj = unpack_keys(keys)
    return instr_ids(path_id, k, obj)


REVERIE = Task(
    "reverie",
    (REVERIE_FORMAT,),
    REVERIE_EPISODE_SCORES,
    REVERIE_METRICS,
    decide=reverie_rule,
    finish=reverie_lengths,
    load=load_visibility,
    id_parts=3,
    counters=("object_id_unusable", "targets_never_visible"),
    own_metrics=OWN_METRICS,
    format_ids=reverie_ids,
    add_flags=add_flags,
    options_of=options_of,
    success=success_line,
)
