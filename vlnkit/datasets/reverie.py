"""REVERIE (remote object grounding on the R2R graphs): its records, episode keys, predictions' object ids and the
object-visibility files, read into the columns the score job moves.

A REVERIE record is an R2R record plus `objId`, the target object, and `instructions_l` (longer rewrites, the
official evaluator's `instrType`); several records share a `path_id` (one per target object), so an episode
is `"<path_id>_<objId>_<k>"`. The score job keys a record by `pack_keys(path_id, objId)` (one int64, which
the join, the shuffle and the bucket hash treat like any path_id), so the rest of the job stays as it is.

Object visibility ("which objects can be seen from which viewpoint") comes in two layouts:
- the release (`tasks/REVERIE/data/BBox/<scan>_<viewpoint>.json`, `{viewpoint: {objId: {name, visible_pos,
  bbox2d}}}`), read by the official evaluator (`eval_release.py`, `loadObjProposals`);
- DUET's merged file (`BBoxes.json`, `{"<scan>_<viewpoint>": {objId: {visible_pos, ...}}}`, read by
  `load_obj2vps`).
An object counts as visible from a viewpoint only where its `visible_pos` is non-empty (both readers test
`if objinfo['visible_pos']`). `read_visibility` gives the sorted int64 `visibility_keys(global viewpoint
number, objId)` of every visible pair, and those of (scan number, objId) of every object seen from somewhere;
a worker turns them into bit tables once, so "is the target visible from here" is a lookup for a whole batch.

    >>> unpack_keys(pack_keys(np.array([1357]), np.array([66])))
    (array([1357]), array([66]))
"""

from __future__ import annotations

import os
from typing import Annotated

import msgspec
import numpy as np

from vlnkit.datasets.records import (
    FiniteNumber,
    NonEmptyString,
    NonNegativeNumber,
    RecordKind,
    ViewpointPath,
    _path_refused,
)
from vlnkit.io import fileio

REVERIE_FORMAT = "reverie"
REVERIE_TEST_FORMAT = "reverie_test"  # a REVERIE record without objId: the test split, which has no target
INSTRUCTION_SETS = ("instructions", "instructions_l")
TARGET_OBJECT, PREDICTED_OBJECT = (
    "target_object",
    "predicted_object",
)  # the extra columns of REVERIE's rows  # the official evaluator's `instrType`
OBJECT_BITS = 32
PATH_ID_LIMIT = 1 << 31
OBJECT_LIMIT = 1 << OBJECT_BITS
NO_OBJECT = np.iinfo(np.int64).min  # a prediction without a usable object id (never equals a target)
TEST_SPLIT_REFUSED = (
    "REVERIE test-split records have no 'objId' (the target object is withheld): only the val splits "
    "(val_seen, val_unseen) can be scored here; submit test predictions to the REVERIE leaderboard"
)

PathId31 = Annotated[int, msgspec.Meta(ge=0, lt=PATH_ID_LIMIT)]
ObjectId = Annotated[int, msgspec.Meta(ge=0, lt=OBJECT_LIMIT)]
Instructions = Annotated[list[str], msgspec.Meta(min_length=1)]


class ReverieRecord(msgspec.Struct, kw_only=True):
    """A REVERIE dataset record; other keys (`id`, `ix`) are ignored. Fields are checked in this order."""

    scan: NonEmptyString
    path_id: PathId31
    objId: ObjectId
    path: ViewpointPath
    heading: FiniteNumber
    distance: NonNegativeNumber | msgspec.UnsetType = msgspec.UNSET
    instructions: Instructions
    instructions_l: Instructions | msgspec.UnsetType = msgspec.UNSET


def _range_refused(name: str, limit: int):
    def refused(value) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{name!r} must be an integer in [0, {limit}), got {value}"
        return f"{name!r} must be an integer, got {value!r:.40}"

    return refused


REVERIE_RECORD = RecordKind(
    ReverieRecord,
    {
        "scan": lambda v: "'scan' must be a non-empty string",
        "path_id": _range_refused("path_id", PATH_ID_LIMIT),
        "objId": _range_refused("objId", OBJECT_LIMIT),
        "path": _path_refused,
        "heading": lambda v: f"'heading' must be a number (radians, finite), got {v!r}",
        "distance": lambda v: f"'distance' must be a finite number >= 0, got {v!r}",
        "instructions": lambda v: "'instructions' must be a non-empty list of strings",
        "instructions_l": lambda v: "'instructions_l' must be a non-empty list of strings",
    },
)


def is_reverie(obj) -> bool:
    """A parsed record in REVERIE's layout: R2R's keys plus `objId`, or (test split) an `id` without `path_id`.

    >>> is_reverie({"path_id": 1, "objId": 5, "instructions": ["go"]}), is_reverie({"id": "2021", "instructions": []})
    (True, True)
    >>> is_reverie({"path_id": 1, "instructions": ["go"]})
    False
    """
    if not isinstance(obj, dict) or "instructions" not in obj:
        return False
    return "objId" in obj or ("id" in obj and "path_id" not in obj)


def record_reason(obj, instruction_set: str = "instructions") -> str | None:
    """Why a REVERIE record cannot be scored (None when it can): `ReverieRecord`'s checks, and the chosen
    instruction set present.

    >>> record_reason({"scan": "s", "path_id": 1, "path": ["a"], "heading": 0, "instructions": ["go"]})
    "missing field 'objId'"
    """
    reason = REVERIE_RECORD.reason(obj)
    if reason is None and instruction_set != "instructions" and instruction_set not in obj:
        return f"missing field {instruction_set!r} (--instruction_set={instruction_set})"
    return reason


def pack_keys(path_id: np.ndarray, obj_id: np.ndarray) -> np.ndarray:
    """(path_id, objId) -> one int64 key per record (path_id in [0, 2**31), objId in [0, 2**32))."""
    return (np.asarray(path_id, np.int64) << OBJECT_BITS) | np.asarray(obj_id, np.int64)


def unpack_keys(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    key = np.asarray(key, np.int64)
    return key >> OBJECT_BITS, key & (OBJECT_LIMIT - 1)


def split_reverie_ids(ids: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ok, packed key, k) of instr_ids "<path_id>_<objId>_<k>": three integers without sign or leading
    zeros, path_id and objId within the packing's ranges; anything else is not ok (an unknown id).

    >>> ok, key, k = split_reverie_ids(["1357_66_0", "1357_66", "01_2_3", "4_5_6"])
    >>> ok.tolist(), unpack_keys(key[ok])[1].tolist(), k[ok].tolist()
    ([True, False, False, True], [66, 5], [0, 6])
    """
    ok = np.zeros(len(ids), bool)
    key = np.zeros(len(ids), np.int64)
    k = np.zeros(len(ids), np.int64)
    for i, text in enumerate(ids):
        parts = text.split("_") if isinstance(text, str) else []
        if len(parts) != 3 or not all(p.isdigit() and p.isascii() and (p == "0" or p[0] != "0") for p in parts):
            continue
        pid, obj, kk = (int(p) for p in parts)
        if pid < PATH_ID_LIMIT and obj < OBJECT_LIMIT and kk < 1 << 62:
            ok[i], key[i], k[i] = True, (pid << OBJECT_BITS) | obj, kk
    return ok, key, k


def predicted_object(obj) -> int | None:
    """The object id a REVERIE prediction names, as both evaluators compare it (`str(pred) == str(objId)`):
    an integer (not a boolean), or a string holding one (written without sign or leading zeros); None for
    anything else (absent, null, a float, a list, another string), which can equal no target and is
    counted as a grounding failure. The release's layout says `predObjId`, DUET's `pred_objid`.

    >>> predicted_object({"predObjId": 66}), predicted_object({"pred_objid": "66"}), predicted_object({"predObjId": 66.0})
    (66, 66, None)
    >>> predicted_object({"predObjId": True}), predicted_object({}), predicted_object({"pred_objid": None})
    (None, None, None)
    """
    value = obj.get("predObjId", obj.get("pred_objid")) if isinstance(obj, dict) else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -(2**63) < value < 2**63 else None
    if isinstance(value, str) and value.isdigit() and value.isascii() and (value == "0" or value[0] != "0"):
        number = int(value)
        return number if number < 2**63 else None
    return None


# ----------------------------------------------------------------------------- visibility
def visibility_keys(viewpoint: np.ndarray, obj_id: np.ndarray) -> np.ndarray:
    """(global viewpoint number, objId) -> one int64 key (`vlnkit.datasets.columns.Vocabulary` numbers)."""
    return (np.asarray(viewpoint, np.int64) << OBJECT_BITS) | np.asarray(obj_id, np.int64)


class _Visible(msgspec.Struct):
    visible_pos: list = []


_RELEASE_FILE = msgspec.json.Decoder(dict[str, dict[str, _Visible]])
_MERGED_FILE = msgspec.json.Decoder(dict[str, dict[str, _Visible]])


def _scan_viewpoint(name: str) -> tuple[str, str]:
    scan, _, viewpoint = name.partition("_")
    return scan, viewpoint


def _object_id(text: str) -> int | None:
    return int(text) if text.isdigit() and int(text) < OBJECT_LIMIT else None


def visibility_entries(source: str) -> list[tuple[str, str, int]]:
    """(scan, viewpoint, objId) for every object visible (non-empty `visible_pos`) in `source`: the release's
    BBox folder (one file per viewpoint, named `<scan>_<viewpoint>.json`; the viewpoint is the file name's,
    as `loadObjProposals` keys `objProposals`) or DUET's merged `BBoxes.json`. Object ids that are not
    integers are skipped (no target is one). Raises ValueError naming a file that is not in the layout, or that
    cannot be read."""
    out = []
    if not source.endswith(".json"):  # a folder (local or gs://) of the release's per-viewpoint files
        try:
            for path, content in fileio.read_small_files(fileio.join(source, "*.json")):  # 10,567 small files
                scan, viewpoint = _scan_viewpoint(os.path.basename(path)[: -len(".json")])
                try:
                    data = _RELEASE_FILE.decode(content)
                except msgspec.DecodeError as exc:
                    raise ValueError(
                        f"{path}: not a REVERIE BBox file {{viewpoint: {{objId: {{visible_pos}}}}}} ({exc})"
                    ) from None
                for objects in data.values():
                    out += [(scan, viewpoint, o) for o in map(_object_id, _visible(objects)) if o is not None]
        except OSError as exc:  # a file that is there but cannot be read (the message names it)
            raise ValueError(str(exc)) from None
        return out
    try:
        data = _MERGED_FILE.decode(fileio.read_bytes(source))
    except msgspec.DecodeError as exc:
        raise ValueError(
            f"{source}: not DUET's BBoxes.json {{'<scan>_<viewpoint>': {{objId: {{visible_pos}}}}}} ({exc})"
        ) from None
    for name, objects in data.items():
        scan, viewpoint = _scan_viewpoint(name)
        out += [(scan, viewpoint, o) for o in map(_object_id, _visible(objects)) if o is not None]
    return out


def _visible(objects: dict) -> list[str]:
    return [o for o, info in objects.items() if info.visible_pos]


def read_visibility(source: str, vocab) -> tuple[np.ndarray, np.ndarray]:
    """(sorted `visibility_keys` of every visible (viewpoint, object), sorted keys (scan number, objId) of
    every object visible from somewhere) over the vocabulary's viewpoints; a viewpoint the vocabulary does
    not number (not an included viewpoint of its scan) sees nothing an agent could stand at."""
    entries = visibility_entries(source)
    if not entries:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    scans, viewpoints, objects = zip(*entries)
    g = vocab.numbers(list(viewpoints)).astype(np.int64)
    scan_ids = np.asarray([vocab.scan_ids.get(s, -1) for s in scans], np.int64)
    known = (g >= 0) & (scan_ids >= 0)
    known[known] &= vocab.scan_of[g[known]] == scan_ids[known]
    obj = np.asarray(objects, np.int64)
    keys = np.unique(visibility_keys(g[known], obj[known]))
    return keys, np.unique(visibility_keys(scan_ids[known], obj[known]))
