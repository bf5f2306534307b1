"""Agent positions in the three continuous prediction layouts, read into columns.

| layout | file | key |
| --- | --- | --- |
| `vlnce_inference` | VLN-CE's R2R inference output `{episode_id: [{"position": [x, y, z], "heading": h, "stop": bool}, ...]}` | episode_id |
| `positions` | `{episode_id: [[x, y, z], ...]}` | episode_id |
| `path_lines` | RxR-Habitat submission, JSON Lines `{"instruction_id": int, "path": [[x, y, z], ...]}` | instruction_id |

The layout is told by content (`documents.kind_of`). The result (`Positions`) is one row per
trajectory: `keys` (int64 episode or instruction ids, `key_kind` says which), `paths` (the positions
as given, repeats kept: metrics drop them) and, for `vlnce_inference`, `stopped` (the last step's
`stop`; None for the other layouts, which do not say). A malformed trajectory (a position that is
not three finite numbers, no positions, a key that is not an integer, an instruction id given twice)
is a RecordError naming the file, the record and the reason; so is the second entry of an episode id
that one object repeats as a key (the first wins). `join` matches rows to an `Episodes`
table by episode id (or RxR instruction id).

    positions, errors = read_positions("../shared/data/vlnce/third_party_positions/mln_ce_val_unseen_v1-2_positions.json")
    positions.layout, len(positions)   # ('positions', 420)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import msgspec
import numpy as np

from vlnkit.continuous import documents
from vlnkit.continuous.points import PointPaths
from vlnkit.continuous.records import PATH_LINE, STEP, PathLine, Point, Points, Step, episode_key
from vlnkit.io.dead_letters import RecordError

LAYOUTS = ("vlnce_inference", "positions", "path_lines")
Steps = Annotated[list[Step], msgspec.Meta(min_length=1)]


@dataclass(frozen=True, eq=False)
class Positions:
    """Trajectories as columns: row p is `keys[p]` and `paths.path(p)` (see the module docstring)."""

    source: str
    layout: str
    key_kind: str  # "episode_id" or "instruction_id"
    keys: np.ndarray
    paths: PointPaths
    stopped: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True, eq=False)
class Join:
    """Rows of an Episodes table and of a Positions table that belong together (same episode)."""

    episode_rows: np.ndarray
    position_rows: np.ndarray
    missing: np.ndarray  # episode rows with no trajectory


def read_positions(path: str) -> tuple[Positions, list[RecordError]]:
    """Read a prediction file of any layout of the module docstring."""
    data, error = documents.read(path, "prediction file")
    if error is not None:
        return _empty(path), [error]
    fast = _typed(path, data)
    if fast is not None:
        return fast, []
    doc = documents.parse_expecting(data, path, LAYOUTS, f"agent positions ({', '.join(LAYOUTS)})")
    if doc.error is not None:
        return _empty(path), [doc.error]
    return _record_by_record(path, doc)


def join(episodes, positions: Positions, stage: str = "join") -> tuple[Join, list[RecordError]]:
    """Match trajectories to episodes by episode id (RxR submissions: by instruction id).

    A trajectory of an id the episodes do not have is a RecordError ("no episode ..."); episodes
    without a trajectory are listed in `Join.missing` (the caller decides: an agent may skip some).
    """
    if positions.key_kind == "instruction_id":
        rows = episodes.rows_of_instructions(positions.keys)
        what = (
            "RxR instruction"
            if episodes.flavour == "rxr"
            else "instruction (the episodes are R2R-CE, without instruction ids)"
        )
    else:
        rows = episodes.rows_of(positions.keys)
        what = "episode"
    errors = [
        RecordError(positions.source, f"{positions.key_kind}={int(positions.keys[p])}",
                    f"no {what} {int(positions.keys[p])} in {episodes.source}", stage)
        for p in np.flatnonzero(rows < 0)
    ]  # fmt: skip
    found = np.flatnonzero(rows >= 0)
    has = np.zeros(len(episodes), dtype=bool)
    has[rows[found]] = True
    return Join(rows[found], found, np.flatnonzero(~has)), errors


# ----------------------------------------------------------------------------- internals
def _typed(path: str, data: bytes) -> Positions | None:
    """The whole file in one C call, when it is valid in one layout (else None: the slow path words it)."""
    stripped = data.lstrip()
    if stripped[:1] == b"{":
        found = _typed_object(path, data)
        if found is not None:
            return found
    if stripped[:1] == b"[":
        try:
            lines = msgspec.json.decode(data, type=list[PathLine])
        except msgspec.DecodeError:
            return None
    else:
        lines = PATH_LINE.decode_lines([line for line in data.splitlines() if line.strip()])
    if not lines:
        return None
    keys = [episode_key(line.instruction_id) for line in lines]
    if None in keys or len(set(keys)) != len(keys):
        return None
    return Positions(
        path, "path_lines", "instruction_id", np.asarray(keys, dtype=np.int64),
        PointPaths.from_lists([line.path for line in lines]),
    )  # fmt: skip


def _typed_object(path: str, data: bytes) -> Positions | None:
    try:
        steps = msgspec.json.decode(data, type=dict[str, Steps])
        rows = [(key, [s.position for s in value], value[-1].stop is True) for key, value in steps.items()]
        layout = "vlnce_inference"
    except msgspec.DecodeError:
        try:
            plain = msgspec.json.decode(data, type=dict[str, Points])
        except msgspec.DecodeError:
            return None
        rows = [(key, value, None) for key, value in plain.items()]
        layout = "positions"
    keys = [episode_key(key) for key, _, _ in rows]
    if not rows or None in keys or documents.repeats_a_key(data, rows):  # a repeated key: the slow path words it
        return None
    stopped = np.array([s for _, _, s in rows], dtype=bool) if layout == "vlnce_inference" else None
    paths = PointPaths.from_lists([p for _, p, _ in rows])
    return Positions(path, layout, "episode_id", np.asarray(keys, dtype=np.int64), paths, stopped)


def _record_by_record(path: str, doc) -> tuple[Positions, list[RecordError]]:
    errors = list(doc.line_errors) + documents.repeated_errors(doc)
    keys, paths, stopped, seen = [], [], [], {}
    if doc.kind == "path_lines":
        items = [
            (f"line {doc.lines[n]}" if doc.lines else f"#{n}", item.get("instruction_id") if isinstance(item, dict) else None, item)
            for n, item in enumerate(doc.value)
        ]  # fmt: skip
    else:
        items = [(f"episode_id={key!r:.20}", key, value) for key, value in doc.value.items()]
    for label, raw_key, value in items:
        key = episode_key(raw_key)
        if doc.kind == "path_lines":
            reason = PATH_LINE.reason(value)
            points = value.get("path") if reason is None else None
        elif doc.kind == "vlnce_inference":
            reason, points, stop = _steps(value)
        else:
            reason, points = _points(value), value
        if reason is None and key is None:
            reason = f"the key must be an integer id (or a string holding one), got {raw_key!r:.40}"
        if reason is None and key in seen:
            reason = f"{'instruction_id' if doc.kind == 'path_lines' else 'episode_id'} {key} appears again (first: {seen[key]})"
        if reason is not None:
            errors.append(RecordError(path, label, reason))
            continue
        seen[key] = label
        keys.append(key)
        paths.append(points)
        if doc.kind == "vlnce_inference":
            stopped.append(stop)
    key_kind = "instruction_id" if doc.kind == "path_lines" else "episode_id"
    flags = np.array(stopped, dtype=bool) if doc.kind == "vlnce_inference" else None
    return Positions(
        path, doc.kind, key_kind, np.asarray(keys, dtype=np.int64), PointPaths.from_lists(paths), flags
    ), errors


def _points(value) -> str | None:
    if not isinstance(value, list) or not value:
        return "a trajectory must be a non-empty list of positions [x, y, z]"
    for n, point in enumerate(value):
        try:
            msgspec.convert(point, Point)
        except msgspec.ValidationError:
            return f"position {n} must be three finite numbers [x, y, z], got {point!r:.60}"
    return None


def _steps(value):
    if not isinstance(value, list) or not value:
        return "a trajectory must be a non-empty list of steps {position, heading, stop}", None, False
    for n, step in enumerate(value):
        reason = STEP.reason(step)
        if reason is not None:
            return f"step {n}: {reason}", None, False
    return None, [step["position"] for step in value], value[-1].get("stop") is True


def _empty(path: str) -> Positions:
    return Positions(path, "positions", "episode_id", np.zeros(0, dtype=np.int64), PointPaths.from_lists([]))
