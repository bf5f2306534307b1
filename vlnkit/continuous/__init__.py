"""Continuous environments (VLN-CE: R2R-CE, RxR-Habitat): episodes, agent positions and simulator
results read into columns, and path metrics from 3-D positions, Beam-free.

- `records`: what a valid record of each kind is (episode, ground truth, step, RxR path line,
  simulator results), with the wording of every refusal;
- `documents`: a file's bytes (local or gs://, gzip told by its magic number) and its layout, told
  by content;
- `episodes`: `read_episodes` -> `Episodes` (one row per episode: ids, scan, instr_id, language,
  start, goal, reference path and ground-truth locations as `PointPaths`);
- `positions`: `read_positions` -> `Positions` (VLN-CE inference output, plain positions, RxR-Habitat
  submissions) and `join` to episodes by episode id;
- `results`: `read_results` -> `Results` (simulator per-episode metrics under the toolkit's names,
  `RESULT_METRICS`);
- `points`: `PointPaths`, many 3-D paths as offsets + (n, 3) float64 (and Arrow);
- `kernels`: compiled exact DTW with coverage, both fastdtw implementations' rules, repeats, lengths;
- `scoring`: `score_paths` / `score_episodes` (nDTW, SDTW, CLS, PL; euclidean-goal bounds on request);
- the score job's core for a continuous dataset: `pieces` (files read into Arrow pieces by bucket of
  episode_id), `buckets` (`score_bucket`: a bucket's join, scores and totals, results combined with
  positions), `schemas` (`CONTINUOUS_EPISODE_SCORES`, its episode rows) and `summary`
  (`continuous_summary`).

RxR-Habitat files made from an R2R-CE split: `vlnkit.fixtures.rxr_habitat.write_rxr_habitat`.

>>> from vlnkit.continuous import PointPaths, score_paths
>>> gt = PointPaths.from_lists([[[0, 0, 0], [0, 0, 1], [0, 0, 2]]])
>>> float(score_paths(gt, gt, dtw="fastdtw")["ndtw"][0])
1.0
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "points": ("PointPaths",),
        "records": ("episode_key", "Episode", "GroundTruth", "Step", "PathLine", "Stats", "ResultLine"),
        "documents": ("read_bytes", "kind_of", "file_kind", "sniff_kind", "KINDS", "DESCRIPTIONS"),
        "episodes": ("Episodes", "read_episodes", "read_ground_truth", "gt_path_for"),
        "positions": ("Positions", "Join", "read_positions", "join"),
        "results": ("Results", "read_results", "RESULT_METRICS"),
        "scoring": ("score_paths", "score_episodes", "DTW_MODES", "FASTDTW_RULES"),
        "pieces": ("Piece", "dataset_pieces", "agent_pieces", "instruction_map"),
        "buckets": ("ContinuousOptions", "ContinuousBucket", "score_bucket"),
        "schemas": ("CONTINUOUS_EPISODE_SCORES", "CE_METRICS", "EUCLIDEAN"),
        "summary": ("continuous_summary",),
    },
)
