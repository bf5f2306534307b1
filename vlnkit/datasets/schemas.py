"""The declared Parquet schema of build_r4r's joined paths (`paths-*.parquet`), and the keys of its R4R JSON."""

from __future__ import annotations

import pyarrow as pa

from vlnkit.io.schemas import versioned_schema

R4R_PATHS = versioned_schema(
    "r4r_paths",
    2,  # v2: `path_ids` (the K source paths in order) and `join_distances` (one per junction), for K >= 3
    [
        pa.field("path_id", pa.int64(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        pa.field("path", pa.list_(pa.string()), nullable=False),
        pa.field("distance", pa.float64(), nullable=False),
        pa.field("heading", pa.float64(), nullable=False),
        pa.field("instructions", pa.list_(pa.string()), nullable=False),
        pa.field("first_path_id", pa.int64(), nullable=False),
        pa.field("second_path_id", pa.int64(), nullable=False),
        pa.field("shortest_path", pa.list_(pa.string()), nullable=False),
        pa.field("shortest_path_distance", pa.float64(), nullable=False),
        pa.field("join_distance", pa.float64(), nullable=False),
        pa.field("path_ids", pa.list_(pa.int64()), nullable=False),
        pa.field("join_distances", pa.list_(pa.float64()), nullable=False),
    ],
)


# Keys of the R4R JSON that existing VLN agent code reads (those of the R4R generator).
R4R_JSON_KEYS = (
    "distance",
    "first_path_id",
    "heading",
    "instructions",
    "path",
    "path_id",
    "scan",
    "second_path_id",
    "shortest_path",
    "shortest_path_distance",
)
