"""The continuous (VLN-CE) task: R2R-CE and RxR-Habitat episodes, scored from an agent's 3-D positions or its
simulator's per-episode results by `vlnkit.continuous` (the score job's continuous wiring,
`pipelines.score_continuous`), not on the navigation graphs.

Declared as a `Task` like the graph tasks, so that the registry lists every dataset the score job reads and
the job picks this one the way it picks the others: by what its dataset files hold. What differs:

- its files are told by their continuous layout (`layouts`: the job's input checks sniff it from a file's
  first bytes, `vlnkit.continuous.documents`), so a large episode file is never parsed to tell it;
- its rule fields (`decide`, `finish`, `load`, `id_parts`) go unused: the continuous wiring joins by
  episode_id and scores positions (`vlnkit.continuous.buckets.score_bucket`);
- its flags (--dtw, --fastdtw_rules, --ce_reference, --ce_gt, --goal_distance) are shared flags of
  `pipelines.flags` (one meaning in every job), which the score job adds itself; `options_of` makes them
  its typed options (`ContinuousOptions`, recorded in the summary by their `to_dict`).

    >>> VLNCE.layouts, VLNCE.schema.metadata[b"vlnkit.schema"]
    (('episodes',), b'continuous_episode_scores')
"""

from __future__ import annotations

from vlnkit.continuous.schemas import CE_METRICS, CONTINUOUS_EPISODE_SCORES, EUCLIDEAN, RESULT_EXTRA
from vlnkit.evaluation.common import COUNT, RATE, UNITS
from vlnkit.evaluation.leaderboard import OwnMetric
from vlnkit.scoring.task import Task

# What result files give beyond the graph metrics (steps and collisions as given, oracle SPL a rate), then the
# straight-line bounds (`--goal_distance=euclidean`), each in its geodesic metric's unit: the leaderboard ranks
# and notes the bounds by its own rule (`vlnkit.evaluation.leaderboard.EUCLIDEAN_METRICS`).
OWN_METRICS = (
    *(OwnMetric(m, m.upper(), unit) for m, unit in zip(RESULT_EXTRA, (COUNT, COUNT, RATE), strict=True)),
    *(OwnMetric(m, m.upper(), UNITS[m.rsplit("_", 1)[0]]) for m in EUCLIDEAN),
)


def options_of(args, dataset_files: list[str]):
    """The continuous options from the flags (`vlnkit.continuous.buckets.ContinuousOptions`; ValueError,
    one line, for a value it does not take)."""
    from vlnkit.continuous.buckets import ContinuousOptions
    from vlnkit.continuous.episodes import AUTO

    return ContinuousOptions(args.dtw, args.fastdtw_rules, args.ce_reference, args.goal_distance, args.ce_gt or AUTO)


VLNCE = Task(
    "vlnce",
    (),
    CONTINUOUS_EPISODE_SCORES,
    CE_METRICS,
    layouts=("episodes",),
    options_of=options_of,
    own_metrics=OWN_METRICS,
)
"""R2R-CE and RxR-Habitat: the dataset files the input checks find to be VLN-CE episode files."""
