"""The conventions a score depends on, recorded in every summary (shared by scoring and the random baseline)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SPL_REFERENCES = ("shortest", "path")


@dataclass(frozen=True)
class ScoringConfig:
    """Success distance d_th (metres), whether repeated viewpoints are kept, and SPL's reference length.

    >>> ScoringConfig(3.0).to_dict()
    {'success_distance': 3.0, 'keep_repeats': False, 'spl_reference': 'shortest'}
    """

    success_distance: float = 3.0
    keep_repeats: bool = False
    spl_reference: str = "shortest"

    def __post_init__(self) -> None:
        if not (self.success_distance > 0 and np.isfinite(self.success_distance)):
            raise ValueError(f"success_distance must be a finite number > 0, got {self.success_distance}")
        if self.spl_reference not in SPL_REFERENCES:
            raise ValueError(f"spl_reference must be one of {SPL_REFERENCES}, got {self.spl_reference!r}")

    def to_dict(self) -> dict:
        return {
            "success_distance": self.success_distance,
            "keep_repeats": self.keep_repeats,
            "spl_reference": self.spl_reference,
        }


def scoring_config(opts) -> ScoringConfig:
    """The conventions from a job's flags (`--success_distance`, `--keep_repeats`, `--spl_reference`).

    Raises ValueError naming the flag's problem.
    """
    return ScoringConfig(opts.success_distance, opts.keep_repeats, opts.spl_reference)
