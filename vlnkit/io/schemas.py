"""Declared, versioned pyarrow schemas of every Parquet output.

A schema's version is stored in the file's metadata; bump it whenever a column is added,
removed or changes meaning, so downstream readers can tell which layout they have.
"""

from __future__ import annotations

import pyarrow as pa

from vlnkit.evaluation.metrics import METRICS


def versioned_schema(name: str, version: int, fields: list[pa.Field]) -> pa.Schema:
    return pa.schema(
        fields, metadata={b"vlnkit.schema": name.encode(), b"vlnkit.schema_version": str(version).encode()}
    )


R4R_PATHS = versioned_schema(
    "r4r_paths",
    1,
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
    ],
)


def _metric_fields() -> list[pa.Field]:
    return [pa.field(m, pa.float64(), nullable=True) for m in METRICS]


EPISODE_SCORES = versioned_schema(
    "episode_scores",
    3,  # v2: `path`, the trajectory as scored (for drawings and audits); v3: `agent` (one run scores many)
    [
        pa.field("agent", pa.string(), nullable=False),
        pa.field("instr_id", pa.string(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        *_metric_fields(),
        pa.field("non_adjacent_steps", pa.int64(), nullable=False),
        pa.field("path", pa.list_(pa.string()), nullable=False),
    ],
)

RANDOM_EPISODE_SCORES = versioned_schema(
    "random_episode_scores",
    1,
    [
        pa.field("instr_id", pa.string(), nullable=False),
        pa.field("sample", pa.int64(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        *_metric_fields(),
    ],
)


# Keys of the R4R JSON that existing VLN agent code reads (those of the published generator).
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


def schema_version(schema: pa.Schema) -> str:
    return (schema.metadata or {}).get(b"vlnkit.schema_version", b"?").decode()


def row(schema: pa.Schema, record: dict) -> dict:
    """The record restricted to the schema's columns (what a Parquet writer expects)."""
    return {name: record[name] for name in schema.names}
