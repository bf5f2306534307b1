"""RxR-Habitat episode files made from R2R-CE ones, for tests and for users checking an RxR evaluator.

Why: no RxR-Habitat (RxR-CE) release file can be downloaded here, yet the readers and metrics must
handle its layout (instruction ids, languages). `write_rxr_habitat` turns an R2R-CE split into one:

- every R2R-CE episode becomes an RxR-Habitat episode with the same `episode_id`, `trajectory_id`,
  `scene_id`, positions, goals and `reference_path` (every other key is copied unchanged);
- its `instruction` gets `instruction_id` = `vlnkit.datasets.rxr_fixtures.rxr_instruction_id(
  trajectory_id, k)` (10 x trajectory_id + k, k the episode's R2R instruction index, as its instr_id
  says) and a `language` drawn from RxR's four (en-IN, en-US, hi-IN, te-IN) by a stable hash of the
  instruction id, as the RxR guide fixtures do; the text stays the R2R text;
- the ground truth is written beside it under VLN-CE's name (`<split>_<role>_gt.json.gz`), keyed by
  the same episode ids, so an agent scores the same against either file.

Everything depends only on the input and `seed`.

    episodes_path, gt_path = write_rxr_habitat(".../R2R_VLNCE_v1-2_preprocessed/val_unseen/val_unseen.json.gz", "out")
    # out/val_unseen_guide.json.gz, out/val_unseen_guide_gt.json.gz
"""

from __future__ import annotations

import gzip
import os

import orjson

from vlnkit.continuous import documents
from vlnkit.continuous.episodes import gt_path_for, read_episodes
from vlnkit.datasets.rxr_fixtures import LANGUAGES, rxr_instruction_id
from vlnkit.hashing import stable_bucket
from vlnkit.io import fileio


def fixture_language(instruction_id: int, seed: int = 0) -> str:
    """The fixture language of an instruction id (the rule of the RxR guide fixtures)."""
    return LANGUAGES[stable_bucket(instruction_id, buckets=len(LANGUAGES), seed=seed)]


def write_rxr_habitat(
    r2r_ce_path: str, out_dir: str, split: str | None = None, role: str = "guide", seed: int = 0
) -> tuple[str, str]:
    """Write `<out_dir>/<split>_<role>.json.gz` and its `_gt` file from an R2R-CE split (with its gt
    file beside it). `split` defaults to the input's name (`val_unseen.json.gz` -> val_unseen).
    Returns the two paths. Raises ValueError when the input has malformed records or no gt file."""
    episodes, errors = read_episodes(r2r_ce_path)
    if errors or episodes.gt_locations is None:
        raise ValueError(f"{r2r_ce_path}: an R2R-CE split with a ground-truth file and no bad record is needed "
                         f"({len(errors)} errors{'' if episodes.gt_locations is not None else ', no gt file'})")  # fmt: skip
    raw = orjson.loads(documents.read_bytes(r2r_ce_path))
    truth = orjson.loads(documents.read_bytes(episodes.gt_source))
    k_of = {int(e): int(i.rsplit("_", 1)[1]) for e, i in zip(episodes.episode_id, episodes.instr_id)}
    for episode in raw["episodes"]:
        instruction = dict(episode["instruction"])
        instruction.pop("instruction_tokens", None)  # R2R's vocabulary ids mean nothing for RxR
        iid = rxr_instruction_id(int(episode["trajectory_id"]), k_of[int(episode["episode_id"])])
        instruction["instruction_id"] = iid
        instruction["language"] = fixture_language(iid, seed)
        episode["instruction"] = instruction
    raw.pop("instruction_vocab", None)
    split = split or os.path.basename(r2r_ce_path).split(".")[0]
    episodes_path = fileio.join(out_dir, f"{split}_{role}.json.gz")
    _write_gz(episodes_path, raw)
    gt_path = gt_path_for(episodes_path)
    _write_gz(gt_path, truth)
    return episodes_path, gt_path


def _write_gz(path: str, value) -> None:
    """Write gzip JSON (Beam's filesystems compress a `.gz` name themselves; a local file is gzipped here)."""
    data = orjson.dumps(value)
    with fileio.open_write(path) as f:
        f.write(data if "://" in path else gzip.compress(data, mtime=0))
