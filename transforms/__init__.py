"""Composable Beam PTransforms: thin wrappers that run the `vlnkit` core at scale.

The public transforms and the elements they take and give (a "record" is an R2R-style dict with
`path_id`, `scan`, `path`, `heading`, `instructions`, ...; a dead letter is
`vlnkit.io.dead_letters.RecordError.to_dict()`). Multi-output transforms return a dict of
PCollections; `"dead_letter"` is always among them.

| transform | takes | gives |
| --- | --- | --- |
| `ReadR2R(files, batched=False)` | pipeline | `records`: record dicts (lists of them when batched); `dead_letter` |
| `ReadUniqueR2R(files, batched=False)` | pipeline | `records` unique by path_id (lists when batched); `dead_letter` |
| `DedupeBy(key_fn, what, batched=False, buckets=1)` | dicts (or lists of dicts) | `records` (first of each key); `dead_letter` |
| `UniqueBy(key_fn, what, files, batched=False)` | lists of dicts read from files | `records` (first of each key; single records unless batched); `dead_letter` |
| `JoinR4R(connectivity_dir, config, batched=False, landmark=False, records=True)` | records (or lists) | `joined`: sorted lists of R4R records; `tables`: one Arrow table per scan; `stats`; `scan_rank`; `dead_letter` |
| `Perturb(methods, spacy_model, connectivity_dir, per_instruction, seed)` | records | `rows`: perturbation rows; `stats`; `dead_letter` |
| `RoundTripParaphrase(spec, languages, bounds)` | records | `rows`: paraphrase rows; `stats`; `by_text`; `dead_letter` |
| `ReadDataset(files, batched=False)` | pipeline | `records` unique by episode key, JSON and build_r4r Parquet; `dead_letter` |
| `ReadScoringInputs(agents, dataset_files, connectivity_dir, buckets)` | pipeline | `batches`: (bucket, PredictionBatch or ReferenceBatch); totals; `dead_letter` |
| `ReferenceBatchesFromRecords(connectivity_dir, buckets, source)` | records | `batches`: (bucket, ReferenceBatch); `dead_letter` |
| `ScoreBuckets(connectivity_dir, agents, dataset_files, config, bootstrap)` | both batch kinds, flattened | `tables`: Arrow tables of episode scores; totals; `lines` of the episode lists; `bootstrap`; `dead_letter` |
| `AssembleCompat(methods, seed)` | {`records` or `items`, `perturbations`, optional `paraphrases`} | `rows`: COMPAT rows; `items`; `available`; `dead_letter` |
| `RandomBaseline(connectivity_dir, steps, num_trajectories, seed)` | records | `tables`; totals; `dead_letter` |
| `ReadAlignments`, `MakeProbeEpisodes`, `ScoreProbeEpisodes`, `SummarizeSkills` | see `transforms.probes` | |
| `WriteParquetShards(prefix, schema)` | dicts (or lists of dicts) | writes `<prefix>-SSSSS-of-NNNNN.parquet` |
| `WriteJsonFile(path, project, sort_key, batched=False, runs=False)` | dicts (or lists; sorted runs) | writes one ordered JSON list |
| `WriteDeadLetters(path)` | dead-letter dicts (several PCollections) | writes one JSON Lines file |
| `GatherToOne()` | small PCollection[T] | one list[T] (also when empty) |
| `FinishRun(output_dir, summarize)` / `finish_run(...)` | dead letters and tallies | writes the dead letters and summary.json |

Chaining them into one pipeline with no files in between: docs/composing.md.

    >>> from transforms import JoinR4R, ReadR2R
    >>> JoinR4R.__module__
    'transforms.r4r'
"""

from transforms.signatures import cache_beam_signatures
from transforms.worker_cache import freeze_heap_at_exit_in_sdk_worker
from vlnkit._exports import lazy_exports

# Every worker process that runs one of these transforms unpickles it, and so imports this package; so
# does every launcher that builds a pipeline of them.
freeze_heap_at_exit_in_sdk_worker()
cache_beam_signatures()

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "read": ("ReadFiles", "ReadR2R", "ReadUniqueR2R", "DedupeBy", "UniqueBy", "SpreadRecords", "ReadDataset"),
        "r4r": ("JoinR4R",),
        "perturb": ("Perturb", "PerturbInstructions", "PerturbTrajectories"),
        "paraphrase": ("RoundTripParaphrase", "ComposeR4RParaphrases", "TranslatorSpec"),
        "score.read": ("ReadScoringInputs", "ReferenceBatchesFromRecords"),
        "score.score": ("ScoreBuckets",),
        "score.outputs": ("WriteEpisodeLists", "MergeBootstrap", "MergeFollowerComparisons"),
        "compat": ("AssembleCompat",),
        "random_walks": ("RandomBaseline",),
        "probes": ("ReadAlignments", "MakeProbeEpisodes", "ReadAgentOutputs", "ScoreProbeEpisodes", "SummarizeSkills"),
        "report": ("DatasetStats", "ParquetStats", "SampleEpisodes", "MergePartials"),
        "write": ("WriteParquetShards", "WriteTables", "WriteJsonFile", "WriteSummary"),
        "deadletter": ("WriteDeadLetters",),
        "gather": ("GatherToOne",),
        "run_summary": ("FinishRun", "finish_run"),
        "tally": ("SumDicts", "tally"),
    },
)
