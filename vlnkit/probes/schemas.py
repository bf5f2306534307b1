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
        {
            "episode_id": "the episode: '<pair_id>:<variant>'",
            "pair_id": "the probe pair: '<candidate_id>:<probe>:<target>' (room probes add ':<h>hop')",
            "variant": "intervention (the skill sentence appended) or control",
            "probe": "the probe kind: stop, direction, room or object",
            "target": "what the appended sentence names: stop, a direction region, a room type or an object",
            "skill": "the skill the pair measures (the probe and, for directions, its region)",
            "hops": "room probes: graph edges from here to the nearest viewpoint of that room type; else null",
            "scan": "the Matterport3D scan of the episode",
            "path": "the trajectory up to the truncation viewpoint: viewpoint ids",
            "heading": "the source record's starting heading in radians",
            "arrival_heading": "the heading (radians, simulator convention) on arriving at the last viewpoint",
            "instruction": "the instruction the agent gets: the text before the boundary plus what was appended",
            "appended": "the text appended to the truncated instruction (empty for most controls)",
            "candidates": "the next actions: every neighbour of the last viewpoint, then STOP",
            "correct": "the candidates that obey the appended sentence",
            "neighbour_rel_heading": "each neighbour's heading relative to the arrival, degrees in (-180, 180], right positive",
            "source": "the alignment the candidate came from (e.g. fgr2r, rxr)",
            "instr_id": "the source instruction's instr_id",
            "path_id": "the source record's path_id",
            "candidate_id": "the truncation candidate: '<instr_id>:<segment>'",
            "segment": "the sub-instruction boundary the trajectory is cut at (0-based)",
            "num_segments": "how many sub-instructions the source instruction has",
        },
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
    {
        "episode_id": "the probe episode (build_probes' episode_id)",
        "pair_id": "its probe pair",
        "variant": "intervention or control",
        "skill": "the skill the pair measures",
        "scan": "the Matterport3D scan of the episode",
        "trajectory": "the source trajectory (its path_id): the unit the bootstrap resamples within a scan",
        "mass": "the probability mass the agent put on the correct next actions",
        "renormalized": "whether the agent's probabilities did not sum to 1 and were renormalized",
    },
)
