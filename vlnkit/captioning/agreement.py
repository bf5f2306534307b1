"""Which metric predicts whether people can follow the instructions: Kendall's tau-b with bootstrap intervals.

As the study's Table 3 (Zhao et al. 2021): between each text metric and each wayfinding outcome,
- instance level: over the instructions (one value per instruction for both);
- system level: over the systems' corpus scores and the systems' mean outcomes;
each with a 90% percentile bootstrap interval.

tau-b = (concordant - discordant) / sqrt((n0 - ties_x)(n0 - ties_y)) (Kendall 1945), here written with
pair signs: with S_x[i, j] = sign(x_i - x_j), tau-b = sum w_i w_j S_x S_y / sqrt(sum w_i w_j |S_x| *
sum w_i w_j |S_y|) over pairs. Integer weights w (how often a bootstrap replicate draws each unit) give
exactly tau-b of the resampled data (copies of one unit are tied in both, so they count in neither),
so every replicate is two quadratic forms over the same sign matrices, not a re-sort.
"""

from __future__ import annotations

import numpy as np

from vlnkit.comparison.replicates import percentile_interval


def _signs(x: np.ndarray) -> np.ndarray:
    return np.sign(x[:, None] - x[None, :])


def weighted_tau_b(x, y, weights: np.ndarray | None = None) -> np.ndarray | float:
    """tau-b of (x, y); `weights` (replicates, n) gives one value per replicate (NaN if undefined)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    sx, sy = _signs(x), _signs(y)
    w = np.ones((1, len(x))) if weights is None else np.atleast_2d(np.asarray(weights, np.float64))
    both, nx, ny = (((w @ m) * w).sum(axis=1) for m in (sx * sy, np.abs(sx), np.abs(sy)))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = both / np.sqrt(nx * ny)
    return float(tau[0]) if weights is None else tau


def multinomial_counts(n: int, replicates: int, seed: int) -> np.ndarray:
    """(replicates, n) counts of the classical bootstrap (n draws with replacement), seeded."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=replicates).astype(np.float64)


def instance_tau(metric, outcome, replicates: int = 1000, seed: int = 0, confidence: float = 0.9) -> dict:
    """tau-b over instructions, with the interval from resampling instructions."""
    metric, outcome = np.asarray(metric, np.float64), np.asarray(outcome, np.float64)
    keep = np.isfinite(metric) & np.isfinite(outcome)
    metric, outcome = metric[keep], outcome[keep]
    reps = weighted_tau_b(metric, outcome, multinomial_counts(len(metric), replicates, seed))
    return {
        "tau_b": weighted_tau_b(metric, outcome),
        "interval": percentile_interval(reps, confidence),
        "n": int(len(metric)),
    }


def system_tau(
    metric_of_weights, outcome: np.ndarray, n_paths: int, replicates: int = 1000, seed: int = 0, confidence: float = 0.9
) -> dict:
    """tau-b over systems, resampling the paths all systems share.

    `metric_of_weights(w)` gives (replicates, systems) corpus scores under path weights w (replicates,
    paths) -- corpus BLEU recomputed, means reweighted -- and `outcome` is (systems, paths).
    """
    counts = multinomial_counts(n_paths, replicates, seed)
    ones = np.ones((1, n_paths))
    point_metric = metric_of_weights(ones)[0]
    point = weighted_tau_b(point_metric, outcome.mean(axis=1))
    reps = np.empty(replicates)
    rep_metric = metric_of_weights(counts)
    rep_outcome = (counts @ outcome.T) / counts.sum(axis=1, keepdims=True)
    for b in range(replicates):
        reps[b] = weighted_tau_b(rep_metric[b], rep_outcome[b])
    return {"tau_b": point, "interval": percentile_interval(reps, confidence), "n": int(outcome.shape[0])}
