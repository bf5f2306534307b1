"""Bootstrap intervals of each system's corpus scores, and paired comparisons between systems.

Resampling unit: the path. Every item gets Poisson(1) weights that are a function of (seed, path id,
replicate) only (`vlnkit.comparison.poisson_weights`), so two systems scored on the same paths are
resampled together and their differences are paired.

- Corpus BLEU-n is recomputed per replicate from the per-item sufficient statistics (`BleuStats`):
  replicate b's BLEU is the pooled formula on the weighted counts.
- ROUGE-L and CIDEr-D are means of per-item scores: replicate b's value is the weighted mean. CIDEr-D's
  document frequencies stay as computed on the whole set (a replicate does not recompute them).

The p-value of a paired difference and the tie marks are the score job's (`vlnkit.comparison.paired`):
p = (1 + #{b : |d_b - d| >= |d|}) / (1 + B), Holm over each metric's family.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.captioning.bleu import BleuStats, corpus_bleu
from vlnkit.comparison.paired import holm
from vlnkit.comparison.replicates import percentile_interval
from vlnkit.comparison.resampling import episode_keys, poisson_weights

BLEU_METRICS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4")


@dataclass(frozen=True)
class SystemItems:
    """One system's per-item scores on its paths, with the BLEU statistics that pool."""

    path_ids: np.ndarray
    per_item: dict[str, np.ndarray]
    bleu: BleuStats

    def subset(self, rows: np.ndarray) -> SystemItems:
        b = self.bleu
        stats = BleuStats(b.testlen[rows], b.reflen[rows], b.guess[rows], b.correct[rows])
        return SystemItems(self.path_ids[rows], {m: v[rows] for m, v in self.per_item.items()}, stats)


def path_weights(path_ids, replicates: int, seed: int) -> np.ndarray:
    """(items, replicates) Poisson(1) weights keyed by path id (the same path, the same weights)."""
    keys = episode_keys([str(p) for p in path_ids])
    return poisson_weights(keys, replicates, seed).astype(np.float64)


def replicate_scores(items: SystemItems, weights: np.ndarray) -> dict[str, np.ndarray]:
    """{metric: (replicates,)} corpus scores under each replicate's weights (columns of `weights`)."""
    w = weights.T  # (replicates, items)
    out = {}
    bleu = corpus_bleu(items.bleu, w)
    for k, name in enumerate(BLEU_METRICS):
        out[name] = bleu[:, k]
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        for metric, values in items.per_item.items():
            if metric not in out:
                out[metric] = (w @ values) / total
    return out


def point_scores(items: SystemItems) -> dict[str, float]:
    out = {name: float(v) for name, v in zip(BLEU_METRICS, corpus_bleu(items.bleu))}
    for metric, values in items.per_item.items():
        if metric not in out:
            out[metric] = float(np.mean(values))
    return out


def system_intervals(items: SystemItems, replicates: int, seed: int, confidence: float) -> dict[str, dict]:
    """{metric: {"score", "interval"}} for one system."""
    reps = replicate_scores(items, path_weights(items.path_ids, replicates, seed))
    points = point_scores(items)
    return {m: {"score": points[m], "interval": percentile_interval(reps[m], confidence)} for m in points}


def _aligned(a: SystemItems, b: SystemItems) -> tuple[SystemItems, SystemItems]:
    """Both systems on the paths they share, in one order (first item of each path)."""
    common = np.intersect1d(a.path_ids, b.path_ids)
    ia = np.unique(a.path_ids, return_index=True)
    ib = np.unique(b.path_ids, return_index=True)
    rows_a = ia[1][np.searchsorted(ia[0], common)]
    rows_b = ib[1][np.searchsorted(ib[0], common)]
    return a.subset(rows_a), b.subset(rows_b)


def compare(systems: dict[str, SystemItems], replicates: int, seed: int, confidence: float) -> list[dict]:
    """Every pair of systems on their common paths: rows as the score job's comparisons
    ({"a", "b", "metric", "episodes", "difference", "interval", "p_value", "p_holm", "significant"})."""
    names = list(systems)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            sa, sb = _aligned(systems[a], systems[b])
            if not len(sa.path_ids):
                continue
            weights = path_weights(sa.path_ids, replicates, seed)
            ra, rb = replicate_scores(sa, weights), replicate_scores(sb, weights)
            pa_, pb = point_scores(sa), point_scores(sb)
            for metric in pa_:
                rows.append(
                    paired_row(
                        a, b, metric, len(sa.path_ids), pa_[metric] - pb[metric], ra[metric] - rb[metric], confidence
                    )
                )
    return holm_by_metric(rows, confidence)


def paired_row(
    a: str, b: str, metric: str, episodes: int, difference: float, replicate_differences, confidence: float
) -> dict:
    """One comparison row: the difference, its percentile interval and the two-sided bootstrap p-value
    (replicates whose difference is undefined left out). One definition for the Beam-free `compare` and
    the job's summary (`summary.comparisons`), which get their replicates by different routes."""
    reps = np.asarray(replicate_differences)
    reps = reps[~np.isnan(reps)]
    extreme = int((np.abs(reps - difference) >= abs(difference)).sum())
    return {
        "a": a,
        "b": b,
        "metric": metric,
        "episodes": episodes,
        "difference": difference,
        "interval": percentile_interval(reps, confidence),
        "p_value": (1 + extreme) / (1 + len(reps)),
    }


def holm_by_metric(rows: list[dict], confidence: float) -> list[dict]:
    """Holm's correction over each metric's family of comparison rows: `p_holm` and `significant` set."""
    for metric in dict.fromkeys(r["metric"] for r in rows):
        family = [r for r in rows if r["metric"] == metric]
        for r, adjusted in zip(family, holm([r["p_value"] for r in family])):
            r["p_holm"], r["significant"] = adjusted, adjusted < 1.0 - confidence
    return rows
