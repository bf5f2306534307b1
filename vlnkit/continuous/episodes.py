"""R2R-CE and RxR-Habitat episode files with their ground-truth paths, read into columns.

An episode file is `{"episodes": [...]}` (`records.Episode`); its ground truth is the
`{episode_id: {"locations": [[x, y, z], ...], ...}}` file that VLN-CE names `<stem>_gt.json.gz` beside
`<stem>.json.gz` (`val_unseen.json.gz` -> `val_unseen_gt.json.gz`; RxR's `val_unseen_guide.json.gz` ->
`val_unseen_guide_gt.json.gz`), found there or given explicitly.

The result is one row per episode (`Episodes`), numpy columns in file order:

- `episode_id`, `trajectory_id` (R2R's path_id), `scan` (from `scene_id` "mp3d/<scan>/<scan>.glb");
- `instr_id`: R2R-CE "<trajectory_id>_<k>", the k-th episode of its trajectory in episode_id order
  (R2R-CE lists a path's instructions in R2R's order, so this is R2R's instr_id); RxR-Habitat
  `str(instruction_id)`; `instruction_id` (int64, RxR only) and `language` (None for R2R-CE);
- `start`, `goal` ((n, 3) positions), `goal_radius`, `geodesic_distance` (`info`, NaN when absent);
- `reference_path` (the R2R viewpoints moved onto the floor) and `gt_locations` (the dense path,
  None without a ground-truth file), as `PointPaths`.

The dataset flavour is told by content: RxR-Habitat when the first episode's instruction has an
`instruction_id`; then every episode needs one and a `language`. Bad episodes are RecordErrors (file,
record, reason), never silently dropped: a malformed record, a repeated episode id, and, with a
ground-truth file, an episode without a ground-truth entry (it cannot be scored against the gt
path) and a ground-truth entry for an episode the file does not have.

    episodes, errors = read_episodes("../shared/data/vlnce/R2R_VLNCE_v1-2_preprocessed/val_unseen/val_unseen.json.gz")
    len(episodes), episodes.instr_id[:2]   # 1839, ['15_0', ...] (gt found beside the file)
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import msgspec
import numpy as np

from vlnkit.continuous import documents
from vlnkit.continuous.points import PointPaths
from vlnkit.continuous.records import EPISODE, GROUND_TRUTH, Episode, GroundTruth, episode_key
from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError

AUTO = "auto"


class _EpisodeFile(msgspec.Struct):
    episodes: list[Episode]


@dataclass(frozen=True, eq=False)
class Episodes:
    """Continuous episodes as columns (one row per episode; see the module docstring)."""

    source: str
    episode_id: np.ndarray
    trajectory_id: np.ndarray
    scan: np.ndarray
    instr_id: np.ndarray
    instruction_id: np.ndarray | None
    language: np.ndarray
    instruction_text: np.ndarray
    start: np.ndarray
    goal: np.ndarray
    goal_radius: np.ndarray
    geodesic_distance: np.ndarray
    reference_path: PointPaths
    gt_locations: PointPaths | None = None
    gt_source: str | None = None

    def __len__(self) -> int:
        return len(self.episode_id)

    @property
    def flavour(self) -> str:
        """ "rxr" (RxR-Habitat: instruction ids and languages) or "r2r" (R2R-CE)."""
        return "rxr" if self.instruction_id is not None else "r2r"

    def rows_of(self, episode_ids: np.ndarray) -> np.ndarray:
        """The row of every episode id (-1 where the file has no such episode), without a loop per id."""
        return _lookup(self.episode_id, episode_ids)

    def rows_of_instructions(self, instruction_ids: np.ndarray) -> np.ndarray:
        """The row of every RxR instruction id (-1 where none; all -1 for an R2R-CE file)."""
        if self.instruction_id is None:
            return np.full(len(instruction_ids), -1, dtype=np.int64)
        return _lookup(self.instruction_id, instruction_ids)

    def reference(self, kind: str = "gt") -> PointPaths:
        """The reference paths metrics compare with: the gt `locations` (VLN-CE's rule) or `reference_path`."""
        if kind == "reference_path":
            return self.reference_path
        if kind != "gt":
            raise ValueError(f"reference must be 'gt' or 'reference_path', got {kind!r}")
        if self.gt_locations is None:
            raise ValueError(f"{self.source}: no ground-truth file was read, so the reference must be 'reference_path'")
        return self.gt_locations

    def to_arrow(self):
        """The episodes as a pyarrow Table (scan and language dictionary-encoded, paths as list<[x, y, z]>)."""
        import pyarrow as pa

        def xyz(a):
            return pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1)), 3)

        columns = {
            "episode_id": pa.array(self.episode_id),
            "trajectory_id": pa.array(self.trajectory_id),
            "scan": pa.array(self.scan.tolist()).dictionary_encode(),
            "instr_id": pa.array(self.instr_id.tolist(), pa.string()),
            "language": pa.array(self.language.tolist(), pa.string()).dictionary_encode(),
            "start": xyz(self.start),
            "goal": xyz(self.goal),
            "geodesic_distance": pa.array(self.geodesic_distance),
            "reference_path": self.reference_path.to_arrow(),
        }
        if self.gt_locations is not None:
            columns["gt_locations"] = self.gt_locations.to_arrow()
        return pa.table(columns)


def _lookup(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    wanted = np.asarray(wanted, dtype=np.int64)
    if not len(keys):
        return np.full(len(wanted), -1, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    pos = np.searchsorted(keys[order], wanted)
    pos = np.minimum(pos, len(keys) - 1)
    found = keys[order][pos] == wanted
    return np.where(found, order[pos], -1)


def gt_path_for(path: str) -> str:
    """VLN-CE's name of an episode file's ground truth: `<stem>_gt.json.gz` beside `<stem>.json[.gz]`."""
    folder, name = os.path.split(path) if "://" not in path else path.rsplit("/", 1)
    stem = name
    for suffix in (".gz", ".json"):
        stem = stem.removesuffix(suffix)
    gt_name = f"{stem}_gt.json.gz"
    return fileio.join(folder, gt_name) if folder else gt_name


def read_episodes(path: str, gt: str | None = AUTO) -> tuple[Episodes, list[RecordError]]:
    """Read an R2R-CE or RxR-Habitat episode file and its ground truth (see the module docstring).

    `gt`: "auto" (default) reads `gt_path_for(path)` when it exists; a path reads that file (it must
    exist); None reads none (`gt_locations` is then None).
    """
    doc = _load_episode_file(path)
    if isinstance(doc, RecordError):
        return _empty(path), [doc]
    structs, errors = doc
    gt_file = gt_path_for(path) if gt == AUTO else gt
    if gt == AUTO and not fileio.exists(gt_file):
        gt_file = None
    episodes = _columns(path, structs, errors)
    if gt_file is None:
        return episodes, errors
    truth, gt_errors = read_ground_truth(gt_file)
    errors.extend(gt_errors)
    if truth is None:  # the file-level error says why; the episodes stay usable with reference_path
        return episodes, errors
    keys, paths = truth
    rows = _lookup(keys, episodes.episode_id)
    for n in np.flatnonzero(rows < 0):
        eid = int(episodes.episode_id[n])
        errors.append(RecordError(path, f"episode_id={eid}", f"no ground-truth path for episode {eid} in {gt_file}"))
    for n in np.flatnonzero(episodes.rows_of(keys) < 0):
        eid = int(keys[n])
        errors.append(
            RecordError(gt_file, f"episode_id={eid}", f"ground truth for episode {eid}, which {path} does not have")
        )
    kept = _select(episodes, rows >= 0)
    return (
        Episodes(**{**_fields(kept), "gt_locations": paths.take(rows[rows >= 0]), "gt_source": gt_file}),
        errors,
    )


def read_ground_truth(path: str) -> tuple[tuple[np.ndarray, PointPaths] | None, list[RecordError]]:
    """A `{episode_id: {"locations": ...}}` file as (episode ids, their locations), and its RecordErrors."""
    data, error = documents.read(path, "ground-truth file")
    if error is not None:
        return None, [error]
    try:
        decoded = msgspec.json.decode(data, type=dict[str, GroundTruth])
        if documents.repeats_a_key(data, decoded):  # the slow path keeps the first and words the others
            raise msgspec.DecodeError("a repeated key")
        items = list(decoded.items())
        errors: list[RecordError] = []
    except msgspec.DecodeError:
        doc = documents.parse_expecting(data, path, ("ground_truth",), "a ground-truth file {episode_id: {locations}}")
        if doc.error is not None:
            return None, [doc.error]
        items, errors = [], documents.repeated_errors(doc)
        for key, value in doc.value.items():
            reason = GROUND_TRUTH.reason(value)
            if reason is None:
                items.append((key, msgspec.convert(value, GroundTruth)))
            else:
                errors.append(RecordError(path, f"episode_id={key}", reason))
    keys, good, seen = [], [], set()
    for key, entry in items:
        eid = episode_key(key)
        if eid is None:
            errors.append(
                RecordError(path, f"key {key!r:.40}", "a ground-truth key must be an episode id (an integer)")
            )
        elif eid in seen:
            errors.append(RecordError(path, f"episode_id={eid}", f"episode {eid} appears twice"))
        else:
            seen.add(eid)
            keys.append(eid)
            good.append(entry.locations)
    return (np.asarray(keys, dtype=np.int64), PointPaths.from_lists(good)), errors


# ----------------------------------------------------------------------------- internals
def _load_episode_file(path: str):
    data, error = documents.read(path, "episode file")
    if error is not None:
        return error
    try:
        return list(enumerate(msgspec.json.decode(data, type=_EpisodeFile).episodes)), []
    except msgspec.DecodeError:
        pass
    doc = documents.parse_expecting(data, path, ("episodes",), "an episode file {'episodes': [...]}")
    if doc.error is not None:
        return doc.error
    if not isinstance(doc.value["episodes"], list):
        return RecordError(path, "", "'episodes' must be a list of episodes")
    structs, errors = [], []
    for n, item in enumerate(doc.value["episodes"]):
        reason = EPISODE.reason(item)
        if reason is None:
            structs.append((n, msgspec.convert(item, Episode)))
        else:
            eid = item.get("episode_id") if isinstance(item, dict) else None
            errors.append(
                RecordError(path, f"#{n}" + (f" (episode_id={eid!r:.20})" if eid is not None else ""), reason)
            )
    return structs, errors


def _columns(path: str, structs: list, errors: list[RecordError]) -> Episodes:
    """Check ids and flavour per episode ((index in the file, Episode) pairs), then build the columns."""
    rxr = bool(structs) and not isinstance(structs[0][1].instruction.instruction_id, msgspec.UnsetType)
    good, ids, trajectories, instruction_ids, seen = [], [], [], [], {}
    for n, ep in structs:
        eid, tid = episode_key(ep.episode_id), episode_key(ep.trajectory_id)
        label = f"#{n} (episode_id={ep.episode_id!r:.20})"
        reason = None
        if eid is None:
            reason = f"'episode_id' must be an integer (or a string holding one), got {ep.episode_id!r:.40}"
        elif tid is None:
            reason = f"'trajectory_id' must be an integer (or a string holding one), got {ep.trajectory_id!r:.40}"
        elif eid in seen:
            reason = f"episode_id {eid} appears again (first at #{seen[eid]})"
        elif rxr:
            iid = (
                episode_key(ep.instruction.instruction_id)
                if ep.instruction.instruction_id is not msgspec.UNSET
                else None
            )
            if iid is None:
                reason = "an RxR-Habitat episode needs 'instruction.instruction_id' (an integer)"
            elif isinstance(ep.instruction.language, msgspec.UnsetType):
                reason = "an RxR-Habitat episode needs 'instruction.language'"
            else:
                instruction_ids.append(iid)
        if reason is not None:
            errors.append(RecordError(path, label, reason))
            continue
        seen[eid] = n
        good.append(ep)
        ids.append(eid)
        trajectories.append(tid)
    episode_id = np.asarray(ids, dtype=np.int64)
    trajectory_id = np.asarray(trajectories, dtype=np.int64)
    scan = np.array([_scan(ep.scene_id) for ep in good], dtype=object)
    if rxr:
        instruction_id = np.asarray(instruction_ids, dtype=np.int64)
        instr_id = np.array([str(i) for i in instruction_ids], dtype=object)
        language = np.array([ep.instruction.language for ep in good], dtype=object)
    else:
        instruction_id = None
        instr_id = _r2r_instr_ids(episode_id, trajectory_id)
        language = np.full(len(good), None, dtype=object)
    return Episodes(
        source=path,
        episode_id=episode_id,
        trajectory_id=trajectory_id,
        scan=scan,
        instr_id=instr_id,
        instruction_id=instruction_id,
        language=language,
        instruction_text=np.array([ep.instruction.instruction_text for ep in good], dtype=object),
        start=np.array([ep.start_position for ep in good], dtype=np.float64).reshape(-1, 3),
        goal=np.array([ep.goals[0].position for ep in good], dtype=np.float64).reshape(-1, 3),
        goal_radius=np.array([np.nan if ep.goals[0].radius is None else ep.goals[0].radius for ep in good]),
        geodesic_distance=np.array(
            [
                np.nan
                if isinstance(ep.info, msgspec.UnsetType) or ep.info.geodesic_distance is msgspec.UNSET
                else ep.info.geodesic_distance
                for ep in good
            ],
            dtype=np.float64,
        ),  # fmt: skip
        reference_path=PointPaths.from_lists([ep.reference_path for ep in good]),
    )


def _scan(scene_id: str) -> str:
    """ "mp3d/<scan>/<scan>.glb" -> "<scan>" (the folder; a bare name is its own scan)."""
    parts = scene_id.replace("\\", "/").split("/")
    return parts[-2] if len(parts) >= 2 else parts[-1].removesuffix(".glb")


def _r2r_instr_ids(episode_id: np.ndarray, trajectory_id: np.ndarray) -> np.ndarray:
    """ "<trajectory_id>_<k>", k the episode's rank within its trajectory in episode_id order."""
    order = np.lexsort((episode_id, trajectory_id))
    sorted_t = trajectory_id[order]
    first = np.r_[True, sorted_t[1:] != sorted_t[:-1]] if len(order) else np.zeros(0, dtype=bool)
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0)) if len(order) else order
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - group_start
    return np.array([f"{t}_{k}" for t, k in zip(trajectory_id.tolist(), rank.tolist())], dtype=object)


def _fields(episodes: Episodes) -> dict:
    return {name: getattr(episodes, name) for name in Episodes.__dataclass_fields__ if not name.startswith("_")}


def _select(episodes: Episodes, mask: np.ndarray) -> Episodes:
    values = _fields(episodes)
    for name, value in values.items():
        if isinstance(value, np.ndarray):
            values[name] = value[mask]
        elif isinstance(value, PointPaths):
            values[name] = value.take(np.flatnonzero(mask))
    return Episodes(**values)


def _empty(path: str) -> Episodes:
    return _columns(path, [], [])
