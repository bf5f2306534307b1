"""Comparing agents with confidence: Poisson bootstrap intervals, paired comparisons, breakdowns.

- `config`: `BootstrapConfig`, how a job resamples (replicates, seed, unit, confidence, baseline), checked
  once and passed whole.
- `resampling`: `episode_keys` (which episodes are resampled together) and `poisson_weights`
  (Poisson(1) weights that are a pure function of seed, key and replicate: Chamandy et al. 2012).
- `replicates`: `ReplicateSums`, exact per-replicate weighted sums (of values on a 2**-26 grid) that
  merge across workers in any order, `cell_sums` (every agent and breakdown group in one pass), and
  `percentile_interval`.
- `kernels`: the compiled passes behind the weights and the sums (they share a worker's cores with the
  same bits through `vlnkit.parallel`).
- `paired`: paired differences between agents with intervals, bootstrap p-values, Holm's
  correction (`holm`) and the leaderboard's tie marks (`adjacent_ties`: Holm over the adjacent pairs).
- `episodes`: all of it from a per-episode score table in one process: `agent_sums`, `compare`
  (every pair, or every agent against a baseline) and `breakdown` (per scan, reference path-length
  bucket or language).
- `accumulate`: the same from slices of the table (the score job's buckets), merged exactly: `slice_sums`,
  `merge_sums`, then `agent_intervals`, `comparisons`, `breakdowns`.

Beam-free: the score job's transforms only compute `ReplicateSums` per bundle and add them. Each public
name is declared here, once (the modules declare no `__all__` of their own).
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "config": ("BootstrapConfig", "min_replicates", "MAX_REPLICATES"),
        "resampling": ("UNITS", "episode_keys", "poisson_weights"),
        "replicates": ("ReplicateSums", "cell_sums", "percentile_interval", "DEFAULT_CONFIDENCE", "DEFAULT_REPLICATES"),
        "paired": (
            "HEADLINE",
            "RANK_BY",
            "LOWER_IS_BETTER",
            "PairedSums",
            "holm",
            "comparison_rows",
            "rank",
            "ties",
            "adjacent_ties",
        ),
        "accumulate": (
            "slice_sums",
            "merge_sums",
            "paired_sums",
            "agent_intervals",
            "comparisons",
            "breakdowns",
            "pairs_of",
        ),
        "episodes": ("columns", "episode_weights", "agent_sums", "compare", "breakdown", "length_buckets"),
    },
)
