"""What scoring one shuffle bucket gives a score step, for a graph dataset (`vlnkit.scoring.score`) and a
continuous one (`vlnkit.continuous.buckets`, which adds the differences from an agent's own results):
the episode rows, the summable totals, the two episode lists, the dead letters and each row's
reference path length. One declaration, so the score steps (`transforms.score`) treat both alike.

    >>> empty = BucketScores(None, {"a|predictions_read": 0}, [], [])
    >>> empty.dead, empty.reference_length.shape
    ([], (0,))
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from vlnkit.io.dead_letters import RecordError

__all__ = ["BucketScores"]


@dataclass
class BucketScores:
    table: pa.Table | None  # the episode rows of every agent, in the job's schema (None when nothing was scored)
    totals: dict[str, int]
    missing: list[str]  # "<instr_id>", or "<agent>\t<instr_id>" when several agents are scored
    unusable: list[str]
    dead: list[RecordError] = field(default_factory=list)
    reference_length: np.ndarray = field(default_factory=lambda: np.zeros(0))  # metres, per table row
