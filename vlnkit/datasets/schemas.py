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
    {
        "path_id": "the joined path's id, unique in the file",
        "scan": "the Matterport3D scan of the path",
        "path": "viewpoint ids from the first source path's start to the last one's goal",
        "distance": "the joined path's length in metres (the sum of its source paths' and junctions' lengths)",
        "heading": "the agent's starting heading in radians (the first source path's)",
        "instructions": "the source paths' instructions joined, one per combination (R4R's rule)",
        "first_path_id": "the first source path's path_id",
        "second_path_id": "the second source path's path_id",
        "shortest_path": "the shortest path in the graph from the joined path's start to its goal",
        "shortest_path_distance": "that shortest path's length in metres",
        "join_distance": "metres from the first path's goal to the second's start (for longer chains, the largest junction gap)",
        "path_ids": "every source path's path_id, in order (two for R4R, more for longer chains)",
        "join_distances": "metres between consecutive source paths at each junction",
    },
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
