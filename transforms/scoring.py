"""Compatibility names for the scoring transforms, which now live one concept per module.

- `transforms.score_read`: prediction and dataset files -> bucketed columnar batches
- `transforms.score_join`: a bucket's batches -> matched pairs, dead letters, missing episodes
- `transforms.score_batches`: joined buckets -> per-scan `score_batch`, Arrow tables, exact totals
- `transforms.score_records`: dataset files -> record dicts (random baseline, reports)
- `transforms.random_walks`: the random baseline
- `transforms.score_write`: Arrow tables to Parquet shards, sorted line files

`ScoringConfig` is `vlnkit.evaluation.scoring_config.ScoringConfig` (no Beam in it).
"""

from transforms.random_walks import RandomBaseline, allocation
from transforms.score_batches import MISSING, UNUSABLE, ScoreBuckets, metric_columns
from transforms.score_read import TOTALS, ReadPredictionBatches, ReadReferenceBatches
from transforms.score_records import ReadDataset, reference_episodes
from transforms.score_write import WriteLines, WriteTables
from vlnkit.evaluation.scoring_config import ScoringConfig

__all__ = [
    "MISSING",
    "TOTALS",
    "UNUSABLE",
    "RandomBaseline",
    "ReadDataset",
    "ReadPredictionBatches",
    "ReadReferenceBatches",
    "ScoreBuckets",
    "ScoringConfig",
    "WriteLines",
    "WriteTables",
    "allocation",
    "metric_columns",
    "reference_episodes",
]
