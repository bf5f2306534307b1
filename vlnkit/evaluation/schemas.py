"""The declared Parquet schemas of scored episodes: the score job's `episode_scores`, one column per
metric of `vlnkit.evaluation.common.METRICS`, and the random baseline's `random_episode_scores`."""

from __future__ import annotations

import pyarrow as pa

from vlnkit.evaluation.common import METRIC_MEANINGS, METRICS
from vlnkit.io.schemas import meaning, versioned_schema


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
    {
        "agent": "the agent's name (--predictions=NAME=FILES, or its file's stem)",
        "instr_id": "the episode: '<path_id>_<k>', the k-th instruction of dataset path path_id (RxR: its instruction_id)",
        "scan": "the Matterport3D scan of the episode",
        "language": "the instruction's IETF language tag (RxR); null for R2R and R4R",
        **{m: METRIC_MEANINGS[m] + " (null: undefined for this episode)" for m in METRICS},
        "non_adjacent_steps": "moves of the agent's trajectory between viewpoints that are not neighbours in the graph",
        "path": "the agent's trajectory as scored: viewpoint ids (repeats collapsed unless --keep_repeats)",
    },
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
    {
        "instr_id": "the evaluation episode the random walk was drawn for ('<path_id>_<k>')",
        "sample": "which of the episode's random walks this is (0, 1, ...)",
        "scan": "the Matterport3D scan of the episode",
        **{m: METRIC_MEANINGS[m] + " (null: undefined for this walk)" for m in METRICS},
    },
)


def task_episode_scores(name: str, version: int, own: list[pa.Field], meanings: dict[str, str]) -> pa.Schema:
    """A task's episode rows (REVERIE, CVDN): the rows of every graph dataset (`EPISODE_SCORES`) with the
    task's `own` columns after the shared metrics; each column means what it means there unless
    `meanings` says otherwise (every own column must be in it).

    >>> s = task_episode_scores("demo", 1, [pa.field("gp", pa.float64())], {"gp": "goal progress"})
    >>> s.names[s.names.index("md") + 1], s.names[-2:]
    ('gp', ['non_adjacent_steps', 'path'])
    """
    shared = list(EPISODE_SCORES)
    at = [f.name for f in shared].index(METRICS[-1]) + 1
    fields = [*shared[:at], *own, *shared[at:]]
    return versioned_schema(name, version, fields, {**{f.name: meaning(f) for f in shared}, **meanings})
