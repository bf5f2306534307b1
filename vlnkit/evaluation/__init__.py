"""Evaluation of VLN agents: path metrics, batch scoring, rewards for training loops, the random baseline.

- `metrics`: one (reference, query) pair at a time, each metric a function with its formula
  (`ndtw(reference, query, graph)`, ...), viewpoint ids with a NavGraph or indices with a matrix.
- `batch`: `score_batch` scores many pairs of one scan in one compiled call; `totals` / `means`
  give exact, order-independent summaries.
- `rewards`: the metrics as incremental RL rewards (`RewardBatch` for B environments at once,
  `RewardEpisode` for one), each step O(|R|).
- `cvdn`: CVDN's metrics as its official evaluator defines them (`score_cvdn`: oracle path success and
  goal progress besides the standard metrics under its conventions).
- `random_baseline`: the R2R paper's random-walk baseline, generated in vectorized batches.
- `score_summary`: the score job's `summary.json` from its summed totals and bootstrap sums
  (`score_summary`: agent blocks, intervals, comparisons, tie marks, breakdowns in natural order).
- `leaderboard`: agents ranked (SPL, then SR) and the same rows as `leaderboard.csv`/`.md` and the
  console's tables (`leaderboard`, `leaderboard_text`, `write_leaderboard`, `language_rows`).
- `schemas`: the Parquet schemas of scored episodes (`EPISODE_SCORES`, `RANDOM_EPISODE_SCORES`).
- `bucket_scores`: what scoring one shuffle bucket gives a score step (`BucketScores`), graph or continuous.
- Internals: `kernels` and `reward_kernels` (compiled, cached on disk), `common` (names, options,
  packing; the success rule, `SUCCESS_RULES`). The numpy implementation the kernels are tested
  against is a test oracle (`tests/oracles/numpy_metrics.py`), not part of the package.

>>> from vlnkit.evaluation import ndtw
>>> ndtw([0, 1], [0, 1], [[0.0, 1.0], [1.0, 0.0]])
1.0
"""

from __future__ import annotations

from vlnkit._exports import lazy_exports

# Names resolve on first use, so importing one submodule does not import the others (the random
# baseline pulls in scipy through the graph module; the metrics do not need it).
__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "metrics": (
            "pl",
            "ne",
            "one",
            "sr",
            "osr",
            "spl",
            "sed",
            "pc",
            "ls",
            "cls",
            "dtw",
            "ndtw",
            "sdtw",
            "ad",
            "md",
            "score",
        ),
        "batch": ("score_batch", "totals", "means"),
        "common": (
            "pack",
            "pack_viewpoints",
            "METRICS",
            "EXTRA",
            "SPL_REFERENCES",
            "DEFAULT_THRESHOLD",
            "SUCCESS_RULES",
            "DEFAULT_SUCCESS_RULE",
            "check_distances",
        ),
        "rewards": ("RewardBatch", "RewardEpisode"),
        "random_baseline": ("step_pool", "allocate", "neighbour_table", "draw", "walk"),
        "score_summary": ("score_summary", "agent_summary", "tie_marks", "ordered_breakdowns"),
        "leaderboard": ("leaderboard", "leaderboard_text", "write_leaderboard", "language_rows"),
        "schemas": ("EPISODE_SCORES", "RANDOM_EPISODE_SCORES"),
        "bucket_scores": ("BucketScores",),
        "cvdn": ("score_cvdn", "first_non_edges", "CVDN_EVAL_METRICS"),
    },
)
