"""Datasets and formats: R2R-style records, R4R joining, agent prediction files, sub-instruction
alignments, and the columnar batches the scoring job carries."""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "r2r": ("parse_r2r", "validate_record", "json_items", "require_usable_records", "NoUsableRecords"),
        "r4r": ("JoinConfig", "join_paths", "summarize", "HEADING_CONVENTIONS"),
        "trajectories": ("parse_predictions", "parse_predictions_parquet", "flatten_trajectory", "TrajectoryError"),
        "alignments": ("parse_fgr2r", "reader"),
        "pose_traces": ("load_pose_trace", "pose_trace_path", "PoseTrace", "PoseTraceError"),
        "rxr_fixtures": ("write_rxr_fixtures", "rxr_instruction_id", "r2r_instr_id"),
        "episode_batches": ("Vocabulary", "PredictionBatch", "ReferenceBatch", "prediction_batch", "reference_batch"),
    },
)
