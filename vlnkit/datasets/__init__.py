"""Datasets and formats: what a valid record is (`records`), R2R-style files, RxR guide and follower
files (`rxr`), which format a file holds (`formats`, told by its first record), CVDN's instances and their target
paths (`cvdn`), R4R joining, agent
prediction files, sub-instruction alignments, the columnar batches the scoring job carries
(`columns`, read in chunks by `json_chunks` into `prediction_batches` and `reference_batches`), and
the shuffle buckets that bring a path's records together (`buckets`)."""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "records": (
            "R2RRecord",
            "RxRGuideLine",
            "RxRFollowerLine",
            "InstructionPrediction",
            "SubmissionLine",
            "RecordKind",
            "validate_record",
            "prediction",
            "flatten_trajectory",
        ),
        "cvdn": ("parse_cvdn", "cvdn_record", "target_path", "TARGET_PATHS", "DEFAULT_TARGET_PATH", "CVDNInstance"),
        "rxr": ("parse_dataset", "parse_followers", "episode_ids", "instructions"),
        "formats": ("record_format", "file_format", "FORMATS", "Format"),
        "r2r": ("parse_r2r", "json_items"),
        "usable": ("require_usable_records", "NoUsableRecords"),
        "r4r": ("JoinConfig", "join_paths", "summarize", "HEADING_CONVENTIONS"),
        "r4r_batch": ("build_chains", "JoinedBatch"),
        "trajectories": ("parse_predictions", "parse_predictions_parquet", "collapse_repeats"),
        "alignments": ("parse_fgr2r", "reader"),
        "pose_traces": ("load_pose_trace", "pose_trace_path", "PoseTrace", "PoseTraceError"),
        "columns": ("Vocabulary", "Paths", "PredictionBatch", "ReferenceBatch"),
        "buckets": ("bucket_count", "bucket_of", "split_by_bucket"),
        "schemas": ("R4R_PATHS", "R4R_JSON_KEYS"),
        "json_chunks": ("json_chunks", "plan_line_ranges", "json_line_range"),
        "prediction_batches": ("prediction_batch", "submission_chunk"),
        "reference_batches": ("reference_batch", "reference_chunk", "FileFormat"),
        "languages": ("record_instructions", "language_counts", "primary_language", "R2R_LANGUAGE"),
    },
)
