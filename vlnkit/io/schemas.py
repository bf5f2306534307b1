"""Declared, versioned pyarrow schemas of every Parquet output.

A schema's version is stored in the file's metadata; bump it whenever a column is added,
removed or changes meaning, so downstream readers can tell which layout they have.
"""

from __future__ import annotations

import pyarrow as pa

from vlnkit.evaluation.common import METRICS


def versioned_schema(name: str, version: int, fields: list[pa.Field]) -> pa.Schema:
    return pa.schema(
        fields, metadata={b"vlnkit.schema": name.encode(), b"vlnkit.schema_version": str(version).encode()}
    )


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


def _metric_fields() -> list[pa.Field]:
    return [pa.field(m, pa.float64(), nullable=True) for m in METRICS]


EPISODE_SCORES = versioned_schema(
    "episode_scores",
    # v2: `path`, the trajectory as scored (for drawings and audits); v3: `agent` (one run scores many);
    # v4: `language`, the episode's IETF tag (RxR guide lines; null for R2R/R4R)
    4,
    [
        pa.field("agent", pa.string(), nullable=False),
        pa.field("instr_id", pa.string(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=True),
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


# ---------------------------------------------------------------------------- hard negatives (perturb, build_compat)
_CHANGE = pa.struct(
    [
        pa.field("start", pa.int64()),
        pa.field("end", pa.int64()),
        pa.field("before", pa.string()),
        pa.field("after", pa.string()),
    ]
)

PERTURBATIONS = versioned_schema(
    "perturbations",
    2,  # v2: `language`, the source instruction's language tag ("en" for R2R; RxR's en-IN, hi-IN, ...)
    [
        pa.field("source_instr_id", pa.string(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("family", pa.string(), nullable=False),
        pa.field("method", pa.string(), nullable=False),
        pa.field("operation", pa.string(), nullable=False),
        pa.field("variant", pa.int64(), nullable=False),
        pa.field("instruction", pa.string(), nullable=False),
        pa.field("path", pa.list_(pa.string()), nullable=False),
        pa.field("source_instruction", pa.string(), nullable=False),
        pa.field("source_path", pa.list_(pa.string()), nullable=False),
        # Instruction family: character spans [start, end) of the source instruction and their replacements.
        pa.field("changes", pa.list_(_CHANGE), nullable=False),
        # Trajectory family: indices into `path` whose viewpoint differs from `source_path` at that index.
        pa.field("changed_positions", pa.list_(pa.int64()), nullable=False),
    ],
)

COMPAT = versioned_schema(
    "compat",
    2,  # v2: `language`, the instruction's language tag ("en" for R2R; RxR's en-IN, hi-IN, ...)
    [
        pa.field("instr_id", pa.string(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("instruction", pa.string(), nullable=False),
        pa.field("path", pa.list_(pa.string()), nullable=False),
        pa.field("label", pa.int64(), nullable=False),
        pa.field("family", pa.string(), nullable=False),
        pa.field("method", pa.string(), nullable=False),
    ],
)


# ---------------------------------------------------------------------------- behavioral probes
def _probe_episodes_schema():
    s, f64, i64 = pa.string(), pa.float64(), pa.int64()
    return versioned_schema(
        "probe_episodes",
        1,
        [
            pa.field("episode_id", s, nullable=False),
            pa.field("pair_id", s, nullable=False),
            pa.field("variant", s, nullable=False),
            pa.field("probe", s, nullable=False),
            pa.field("target", s, nullable=False),
            pa.field("skill", s, nullable=False),
            pa.field("hops", i64),
            pa.field("scan", s, nullable=False),
            pa.field("path", pa.list_(s), nullable=False),
            pa.field("heading", f64, nullable=False),
            pa.field("arrival_heading", f64, nullable=False),
            pa.field("instruction", s, nullable=False),
            pa.field("appended", s, nullable=False),
            pa.field("candidates", pa.list_(s), nullable=False),
            pa.field("correct", pa.list_(s), nullable=False),
            pa.field("neighbour_rel_heading", pa.list_(f64), nullable=False),
            pa.field("source", s, nullable=False),
            pa.field("instr_id", s, nullable=False),
            pa.field("path_id", i64, nullable=False),
            pa.field("candidate_id", s, nullable=False),
            pa.field("segment", i64, nullable=False),
            pa.field("num_segments", i64, nullable=False),
        ],
    )


# Parquet layout of `probes-SSSSS-of-NNNNN.parquet` (one row per episode; see `probe_episodes`).
PROBE_EPISODES = _probe_episodes_schema()

PROBE_SCORES = versioned_schema(
    "probe_scores",
    1,
    [
        pa.field("episode_id", pa.string(), nullable=False),
        pa.field("pair_id", pa.string(), nullable=False),
        pa.field("variant", pa.string(), nullable=False),
        pa.field("skill", pa.string(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        pa.field("trajectory", pa.string(), nullable=False),
        pa.field("mass", pa.float64(), nullable=False),
        pa.field("renormalized", pa.bool_(), nullable=False),
    ],
)


# ---------------------------------------------------------------------------- paraphrases
def _paraphrases_schema():
    return versioned_schema(
        "paraphrases",
        3,
        [
            pa.field("instr_id", pa.string(), nullable=False),
            pa.field("instruction", pa.string(), nullable=False),
            pa.field("source_language", pa.string(), nullable=False),
            pa.field("language", pa.string(), nullable=False),
            pa.field("paraphrase", pa.string(), nullable=False),
            pa.field("bleu", pa.float64(), nullable=False),
            pa.field("kept", pa.bool_(), nullable=False),
            pa.field("reason", pa.string(), nullable=False),
            pa.field("backend", pa.string(), nullable=False),
        ],
    )


# One row per instruction x pivot, kept or not (`reason`: kept, bleu_below_min, bleu_above_max,
# same_as_original, duplicate_of_<language>). `language` is the pivot, `source_language` the
# instruction's own language, which the paraphrase is in (R2R: --source_language, "en"; RxR: the
# record's tag, e.g. "hi-IN"). `backend` names the translator that made the row (`google`, or
# `offline-demo`, which is not a translation): a consumer can refuse demo rows as training data.
# Version 2 added `backend`, version 3 `source_language`.
PARAPHRASES = _paraphrases_schema()

# The translation cache's part files (vlnkit.paraphrases.cache).
CACHE_SCHEMA = versioned_schema(
    "translation_cache",
    1,
    [
        pa.field("backend", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("target", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("translation", pa.string(), nullable=False),
    ],
)
