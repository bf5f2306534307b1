"""Evaluation of VLN agents: path metrics, batch scoring, rewards for training loops, the random baseline.

- `metrics`: one (reference, query) pair at a time, each metric a function with its formula
  (`ndtw(reference, query, graph)`, ...), viewpoint ids with a NavGraph or indices with a matrix.
- `batch`: `score_batch` scores many pairs of one scan in one compiled call; `totals` / `means`
  give exact, order-independent summaries.
- `rewards`: the metrics as incremental RL rewards (`RewardBatch` for B environments at once,
  `RewardEpisode` for one), each step O(|R|).
- `random_baseline`: the published random-walk baseline, generated in vectorized batches.
- `kernels` (compiled, cached on disk) and `reference` (the numpy implementation the kernels are
  tested against) are internals.

>>> from vlnkit.evaluation import ndtw
>>> ndtw([0, 1], [0, 1], [[0.0, 1.0], [1.0, 0.0]])
1.0
"""

from vlnkit.evaluation.batch import means, score_batch, totals
from vlnkit.evaluation.common import DEFAULT_THRESHOLD, EXTRA, METRICS, SPL_REFERENCES, pack, pack_viewpoints
from vlnkit.evaluation.metrics import (
    ad,
    cls,
    dtw,
    ls,
    md,
    ndtw,
    ne,
    one,
    osr,
    pc,
    pl,
    score,
    sdtw,
    sed,
    spl,
    sr,
)
from vlnkit.evaluation.random_baseline import allocate, draw, episode_rng, neighbour_table, step_pool, walk
from vlnkit.evaluation.rewards import RewardBatch, RewardEpisode

__all__ = [
    # single-pair metrics
    "pl", "ne", "one", "sr", "osr", "spl", "sed", "pc", "ls", "cls", "dtw", "ndtw", "sdtw", "ad", "md", "score",
    # batches and summaries
    "score_batch", "pack", "pack_viewpoints", "totals", "means",
    "METRICS", "EXTRA", "SPL_REFERENCES", "DEFAULT_THRESHOLD",
    # rewards
    "RewardBatch", "RewardEpisode",
    # random baseline
    "step_pool", "allocate", "episode_rng", "neighbour_table", "draw", "walk",
]  # fmt: skip
