"""The declared Parquet schema of scored continuous episodes: the score job's rows for a VLN-CE dataset.

A continuous episode is not a graph episode: it has an integer `episode_id` (the join key of every
VLN-CE file) besides its `instr_id`, its agent moved through 3-D positions rather than viewpoints, and
its metrics come from the agent's positions, from the per-episode results its own simulator run wrote,
or from both. So it has a schema of its own, `continuous_episode_scores`, beside `episode_scores`
(`vlnkit.evaluation.schemas`), with the same leading columns (agent, instr_id, scan, language), so the
bootstrap, the breakdowns and the report read either:

- `agent`, `episode_id`, `trajectory_id` (R2R's path_id), `instr_id` (R2R-CE "<trajectory_id>_<k>",
  RxR-Habitat the instruction id), `scan`, `language` (RxR-Habitat; null for R2R-CE);
- one float64 column per metric of `CE_METRICS`, null where no input gives it: the graph metrics'
  names (`METRICS`; `sed`, `ad` and `md` stay null, they need a graph), then `steps`, `collisions` and
  `oracle_spl` (result files), then the straight-line bounds `*_euclidean` (`--goal_distance=euclidean`);
- `sources`: what the row was made from, "positions", "results" or "positions+results";
- `positions`: the positions as scored, [x, y, z] each (repeats collapsed unless `--keep_repeats`),
  null for a row made from results alone.

>>> CONTINUOUS_EPISODE_SCORES.names[:6], CONTINUOUS_EPISODE_SCORES.names[-2:]
(['agent', 'episode_id', 'trajectory_id', 'instr_id', 'scan', 'language'], ['sources', 'positions'])
"""

from __future__ import annotations

import pyarrow as pa

from vlnkit.evaluation.common import METRIC_MEANINGS, METRICS
from vlnkit.io.schemas import versioned_schema

# The straight-line bounds `vlnkit.continuous.scoring.score_paths` gives beside the geodesic metrics (declared
# here, not there, so that the schema is read without loading the compiled kernels).
EUCLIDEAN = ("ne_euclidean", "one_euclidean", "sr_euclidean", "osr_euclidean", "spl_euclidean", "sdtw_euclidean")

RESULT_EXTRA = ("steps", "collisions", "oracle_spl")  # what result files give beyond the graph metrics' names
CE_METRICS = (*METRICS, *RESULT_EXTRA, *EUCLIDEAN)
POINT_LIST = pa.list_(pa.list_(pa.float64(), 3))
SOURCES = ("positions", "results", "positions+results")

CONTINUOUS_EPISODE_SCORES = versioned_schema(
    "continuous_episode_scores",
    1,
    [
        pa.field("agent", pa.string(), nullable=False),
        pa.field("episode_id", pa.int64(), nullable=False),
        pa.field("trajectory_id", pa.int64(), nullable=False),
        pa.field("instr_id", pa.string(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=True),
        *(pa.field(m, pa.float64(), nullable=True) for m in CE_METRICS),
        pa.field("sources", pa.string(), nullable=False),
        pa.field("positions", POINT_LIST, nullable=True),
    ],
    {
        "agent": "the agent's name (--predictions=NAME=FILES, or its file's stem)",
        "episode_id": "the VLN-CE episode id (the join key of every VLN-CE file)",
        "trajectory_id": "R2R's path_id of the episode",
        "instr_id": "R2R-CE '<trajectory_id>_<k>', RxR-Habitat the instruction id",
        "scan": "the Matterport3D scan of the episode",
        "language": "the instruction's language tag (RxR-Habitat); null for R2R-CE",
        **{m: METRIC_MEANINGS[m] + ", in continuous space (null where no input gives it)" for m in METRICS},
        "steps": "actions the agent took (from the result file)",
        "collisions": "collisions in the simulator (from the result file)",
        "oracle_spl": "oracle SPL as the simulator reported it (from the result file)",
        **{
            m: f"{m[: -len('_euclidean')]} with the straight-line distance to the goal (--goal_distance=euclidean)"
            for m in EUCLIDEAN
        },
        "sources": "what the row was made from: positions, results or positions+results",
        "positions": "the agent's positions as scored, [x, y, z] each; null for a row made from results alone",
    },
)
