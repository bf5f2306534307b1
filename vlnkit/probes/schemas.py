"""The declared Parquet schemas of behavioral probes: build_probes' episodes and score_probes' scores."""

from __future__ import annotations

import pyarrow as pa

from vlnkit.io.schemas import versioned_schema


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
