"""Room-across-Room (RxR) pose traces: where the guide (or follower) stood and looked, snapshot by snapshot.

RxR ships one numpy archive per annotation, `pose_traces/rxr_{split}/{instruction_id:06}_guide_pose_trace.npz`
(and `{demonstration_id:06}_follower_pose_trace.npz`), holding (google-research-datasets/RxR README):

    pano              str      [n, 1]   viewpoint of each snapshot
    time              float32  [n, 1]   seconds since the start of the recording
    extrinsic_matrix  float32  [n, 16]  camera pose, row-major 4x4
    intrinsic_matrix  float32  [n, 16]  camera projection, row-major 4x4
    image_mask        bool     [k, 128, 256]  pixels seen, per path viewpoint (k = path length)
    text_mask         bool     [k, m]   sub-words spoken (guide) or heard (follower) per path viewpoint
    feature_weights   float32  [k, 36]  `image_mask` pooled onto 12 headings x 3 elevations
    audio_time        float32  [n, 1]   (follower traces only) progress through the guide's recording

Only `pano` and `time` are needed to align words with viewpoints; the other arrays are kept as stored
when present and checked for the shapes above. A trace that is missing, is not a readable archive or
breaks these shapes raises `PoseTraceError` naming the file, so a reader can turn it into a dead letter
(RxR itself replaced 7 corrupted guide traces of its train split in 2021).

>>> pose_trace_path("pose_traces", "val_unseen", 26)
'pose_traces/rxr_val_unseen/000026_guide_pose_trace.npz'
"""

from __future__ import annotations

import io
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError

ROLES = ("guide", "follower")
_MATRICES = ("extrinsic_matrix", "intrinsic_matrix")
_PER_VIEWPOINT = {"image_mask": 3, "text_mask": 2, "feature_weights": 2}  # name -> number of dimensions


class PoseTraceError(ValueError):
    """A pose trace that cannot be used: `path` names the file, `reason` says why."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def record_error(self, record: str) -> RecordError:
        """The dead letter of the annotation (`record`, e.g. "instruction_id=26") whose trace this is."""
        return RecordError(source=self.path, record=record, reason=self.reason)


@dataclass(frozen=True, eq=False)
class PoseTrace:
    """One pose trace: `pano` and `time` flattened to (n,), `time` as float64 seconds (float32 in the file)."""

    path: str
    pano: np.ndarray
    time: np.ndarray
    arrays: dict  # every array of the archive as stored (including pano and time), by name

    def __len__(self) -> int:
        return len(self.pano)


def pose_trace_path(folder: str, split: str, identifier: int, role: str = "guide") -> str:
    """Where RxR keeps an annotation's trace: `folder` is the `pose_traces` directory (local or `gs://`),
    `split` "val_unseen" or "rxr_val_unseen", `identifier` the instruction id (guide) or demonstration id."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    split_dir = split if split.startswith("rxr_") else f"rxr_{split}"
    return fileio.join(folder, split_dir, f"{int(identifier):06d}_{role}_pose_trace.npz")


def _read_archive(path: str) -> dict[str, np.ndarray]:
    try:
        data = fileio.read_bytes(path)
    except FileNotFoundError:
        raise PoseTraceError(path, "pose trace not found") from None
    except Exception as exc:  # OSError locally; Beam filesystems raise their own error types
        raise PoseTraceError(path, f"cannot read the pose trace ({type(exc).__name__}: {exc})") from exc
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        # allow_pickle=False: an archive of Python objects is refused here rather than unpickled.
        raise PoseTraceError(path, f"not a readable numpy archive ({type(exc).__name__}: {exc})") from exc


def _column(path: str, arrays: dict, name: str) -> np.ndarray:
    if name not in arrays:
        raise PoseTraceError(path, f"missing array {name!r} (has {sorted(arrays)})")
    a = arrays[name]
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1:
        raise PoseTraceError(path, f"array {name!r} must have shape [n, 1], got {list(arrays[name].shape)}")
    return a


def parse_pose_trace(arrays: dict[str, np.ndarray], path: str = "<pose trace>") -> PoseTrace:
    """A PoseTrace from the arrays of an archive, checked (PoseTraceError naming `path` otherwise).

    >>> t = parse_pose_trace({"pano": np.array([["a"], ["b"]]), "time": np.array([[0.0], [1.5]], np.float32)})
    >>> t.pano.tolist(), t.time.tolist()
    (['a', 'b'], [0.0, 1.5])
    """
    pano, time = _column(path, arrays, "pano"), _column(path, arrays, "time")
    n = len(pano)
    if n == 0:
        raise PoseTraceError(path, "the trace has no snapshots")
    if pano.dtype.kind == "S":
        pano = np.char.decode(pano, "ascii", errors="replace")
    if pano.dtype.kind != "U":
        raise PoseTraceError(path, f"'pano' must hold strings, got dtype {pano.dtype}")
    if len(time) != n:
        raise PoseTraceError(path, f"'time' has {len(time)} snapshots but 'pano' has {n}")
    if time.dtype.kind not in "fiu":
        raise PoseTraceError(path, f"'time' must hold numbers, got dtype {time.dtype}")
    time = time.astype(np.float64)
    if not np.isfinite(time).all():
        raise PoseTraceError(path, f"'time' is not finite at snapshot {int(np.flatnonzero(~np.isfinite(time))[0])}")
    backwards = np.flatnonzero(np.diff(time) < 0)
    if len(backwards):
        i = int(backwards[0]) + 1
        raise PoseTraceError(path, f"'time' goes backwards at snapshot {i} ({time[i - 1]} then {time[i]})")
    for name in _MATRICES:
        if name in arrays and arrays[name].shape != (n, 16):
            raise PoseTraceError(path, f"{name!r} must have shape [{n}, 16], got {list(arrays[name].shape)}")
    rows = {name: arrays[name].shape for name in _PER_VIEWPOINT if name in arrays}
    for name, shape in rows.items():
        if len(shape) != _PER_VIEWPOINT[name] or (name == "feature_weights" and shape[1] != 36):
            expected = {"image_mask": "[k, 128, 256]", "text_mask": "[k, m]", "feature_weights": "[k, 36]"}[name]
            raise PoseTraceError(path, f"{name!r} must have shape {expected}, got {list(shape)}")
    if len({shape[0] for shape in rows.values()}) > 1:
        raise PoseTraceError(path, f"per-viewpoint arrays disagree on the number of viewpoints: {rows}")
    return PoseTrace(path=path, pano=pano, time=time, arrays=dict(arrays))


def load_pose_trace(path: str) -> PoseTrace:
    """Read and check one `.npz` pose trace (local path or any Beam filesystem); PoseTraceError if unusable."""
    return parse_pose_trace(_read_archive(path), path)
