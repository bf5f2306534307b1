"""The conventions a score depends on, shared by every job that scores trajectories.

Kept apart from the jobs (and from Beam) so that any job, and plain scripts, can build one:

    >>> from vlnkit.evaluation.scoring_config import ScoringConfig
    >>> ScoringConfig(success_distance=3.0).to_dict()
    {'success_distance': 3.0, 'keep_repeats': False, 'spl_reference': 'shortest', 'success_rule': 'le'}
"""

from __future__ import annotations

from dataclasses import dataclass

from vlnkit.evaluation.common import DEFAULT_SUCCESS_RULE, check_options


@dataclass(frozen=True)
class ScoringConfig:
    """The conventions a score depends on (recorded in every summary).

    success_distance: d_th in metres (success threshold and the CLS/nDTW scale); keep_repeats:
    score trajectories as given instead of collapsing consecutive repeated viewpoints;
    spl_reference: "shortest" (d(q_1, r_last)) or "path" (the reference path's length);
    success_rule: "le" (success is NE <= d_th, the R4R/nDTW papers' code, the default) or "lt"
    (NE < d_th, R2R's eval.py, HAMT, DUET, BabyWalk, VLN-CE); only exact ties differ.
    """

    success_distance: float = 3.0
    keep_repeats: bool = False
    spl_reference: str = "shortest"
    success_rule: str = DEFAULT_SUCCESS_RULE

    def __post_init__(self) -> None:
        check_options(self.success_distance, self.spl_reference, (), self.success_rule, name="success_distance")

    def to_dict(self) -> dict:
        return {
            "success_distance": self.success_distance,
            "keep_repeats": self.keep_repeats,
            "spl_reference": self.spl_reference,
            "success_rule": self.success_rule,
        }


def scoring_config(opts) -> ScoringConfig:
    """The config from parsed flags `success_distance`, `keep_repeats`, `spl_reference` and, where the
    job has it, `success_rule` (jobs without the flag score with the default rule).

    Raises ValueError for values no score can use (jobs turn it into a one-line error).
    """
    rule = getattr(opts, "success_rule", DEFAULT_SUCCESS_RULE)
    return ScoringConfig(opts.success_distance, opts.keep_repeats, opts.spl_reference, rule)
