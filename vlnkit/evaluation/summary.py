"""The random_baseline job's `summary.json`, assembled from its summed tallies (`random_baseline_summary`).

(The score job's is `vlnkit.evaluation.score_summary`.)
"""

from __future__ import annotations

from vlnkit.evaluation.batch import means


def random_baseline_summary(static: dict, totals: dict) -> dict:
    """The random_baseline job's `summary.json`: `static` (the run's settings) and its summed tallies: the
    mean of every metric over all walks (`vlnkit.evaluation.batch.means`), how many were null, the
    evaluation and training data counted, and the distribution the walks' step counts were drawn from."""
    mean, nulls = means(totals)
    paths = int(totals.get("training_paths", 0))
    steps = {int(k[6:]): v for k, v in totals.items() if k.startswith("steps_")}
    return {
        **static,
        "count": int(totals.get("count", 0)),
        "metrics": mean,
        "null_counts": nulls,
        "evaluation_records": int(totals.get("evaluation_records", 0)),
        "evaluation_paths": int(totals.get("evaluation_paths", 0)),
        "evaluation_episodes": int(totals.get("evaluation_episodes", 0)),
        "training_paths": paths,
        "steps_distribution": {str(k): steps[k] / paths for k in sorted(steps)},
        "dead_letters": int(totals.get("dead_letters", 0)),
    }
