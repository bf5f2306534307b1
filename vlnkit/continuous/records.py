"""What a valid continuous-environment record is, declared once per kind (the `RecordKind` style of
`vlnkit.datasets.records`): episodes, ground-truth paths, agent positions and simulator results.

Every reader of the `vlnkit.continuous` package uses these declarations: the fast path decodes or
converts a whole file in one C call against the `Struct`; when that refuses anything the file is read
record by record and each refusal is worded by `RecordKind.reason`, so a dead letter says the same
thing whichever path a record took. Keys a kind does not declare are ignored (an episode's
`instruction_tokens`, a result's `episode_instruction`, ...).

A position is `[x, y, z]`: exactly three finite numbers (Habitat coordinates, y up). An episode id
is an integer within 64 bits, or a string holding one (Habitat 0.2+ turns ids into strings);
`episode_key` turns either into the int64 every table keys on.

>>> EPISODE.reason({"episode_id": 1, "trajectory_id": 4, "scene_id": "mp3d/a/a.glb",
...                 "start_position": [0, 0, 0], "goals": [{"position": [1, 0, "2"]}],
...                 "reference_path": [[0, 0, 0]], "instruction": {"instruction_text": "go"}})
"'goals' must be a non-empty list of {position: [x, y, z], radius}: entry 0: 'position' must be three finite numbers [x, y, z], got [1, 0, '2']"
>>> episode_key("17"), episode_key(17), episode_key("a")
(17, 17, None)
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from vlnkit.datasets.records import FiniteNumber, Int64, NonEmptyString, NonNegativeNumber, RecordKind

Point = tuple[FiniteNumber, FiniteNumber, FiniteNumber]
Points = Annotated[list[Point], msgspec.Meta(min_length=1)]
EpisodeId = Int64 | str  # a string must hold an integer (checked by `episode_key`)
UnitNumber = Annotated[float, msgspec.Meta(ge=0, le=1)]
Flag = UnitNumber | bool  # 0 or 1 (checked after conversion: a type cannot say "0 or 1")
_INTEGER_TEXT = re.compile(r"[-+]?[0-9]+")
UNSET = msgspec.UNSET


def episode_key(value) -> int | None:
    """The int64 key of an episode (or instruction) id: an integer, or a string holding one; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else None
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        number = int(value)
        return number if -(2**63) <= number < 2**63 else None
    return None


def _point_refused(name: str):
    return lambda v: f"{name!r} must be three finite numbers [x, y, z], got {v!r:.60}"


def _points_refused(name: str):
    def refused(value) -> str:
        if not isinstance(value, list):
            return f"{name!r} must be a list of positions [x, y, z], got {type(value).__name__}"
        if not value:
            return f"{name!r} has 0 positions, at least 1 required"
        for n, point in enumerate(value):
            try:
                msgspec.convert(point, Point)
            except msgspec.ValidationError:
                return f"{name!r} position {n} must be three finite numbers [x, y, z], got {point!r:.60}"
        return f"{name!r} must be a list of positions [x, y, z]"

    return refused


def _id_refused(name: str):
    return lambda v: f"{name!r} must be an integer (or a string holding one), got {v!r:.40}"


def _number_refused(name: str, what: str = "a finite number"):
    return lambda v: f"{name!r} must be {what}, got {v!r:.40}"


def _struct_refused(name: str, struct, words: str):
    def refused(value) -> str:
        if isinstance(value, list):
            if not value:
                return f"{name!r} must be {words}, got an empty list"
            for n, item in enumerate(value):
                why = _explain(struct, item)
                if why:
                    return f"{name!r} must be {words}: entry {n}: {why}"
        elif isinstance(value, dict):
            why = _explain(struct, value)
            if why:
                return f"{name!r} must be {words}: {why}"
        return f"{name!r} must be {words}, got {type(value).__name__}"

    return refused


def _explain(struct, value) -> str | None:
    kind = _NESTED[struct]
    return kind.reason(value)


# ----------------------------------------------------------------------------- episodes (R2R-CE, RxR-Habitat)
class Goal(msgspec.Struct, kw_only=True):
    position: Point
    radius: NonNegativeNumber | None = None


class Instruction(msgspec.Struct, kw_only=True):
    """R2R-CE: `instruction_text` (and tokens, ignored); RxR-Habitat adds `instruction_id` and `language`."""

    instruction_text: str
    instruction_id: EpisodeId | msgspec.UnsetType = UNSET
    language: NonEmptyString | msgspec.UnsetType = UNSET


class Info(msgspec.Struct, kw_only=True):
    geodesic_distance: NonNegativeNumber | msgspec.UnsetType = UNSET


class Episode(msgspec.Struct, kw_only=True):
    """One episode of an R2R-CE or RxR-Habitat `{"episodes": [...]}` file. Fields are checked in this order."""

    episode_id: EpisodeId
    trajectory_id: EpisodeId
    scene_id: NonEmptyString
    start_position: Point
    goals: Annotated[list[Goal], msgspec.Meta(min_length=1)]
    reference_path: Points
    instruction: Instruction
    info: Info | msgspec.UnsetType = UNSET


GOAL = RecordKind(
    Goal,
    {"position": _point_refused("position"), "radius": _number_refused("radius", "a finite number >= 0 or null")},
)
INSTRUCTION = RecordKind(
    Instruction,
    {
        "instruction_text": lambda v: f"'instruction_text' must be a string, got {type(v).__name__}",
        "instruction_id": _id_refused("instruction_id"),
        "language": lambda v: f"'language' must be a non-empty string (an IETF tag such as hi-IN), got {v!r:.40}",
    },
)
INFO = RecordKind(Info, {"geodesic_distance": _number_refused("geodesic_distance", "a finite number >= 0")})
_NESTED = {Goal: GOAL, Instruction: INSTRUCTION, Info: INFO}

EPISODE = RecordKind(
    Episode,
    {
        "episode_id": _id_refused("episode_id"),
        "trajectory_id": _id_refused("trajectory_id"),
        "scene_id": lambda v: f"'scene_id' must be a non-empty string (mp3d/<scan>/<scan>.glb), got {v!r:.60}",
        "start_position": _point_refused("start_position"),
        "goals": _struct_refused("goals", Goal, "a non-empty list of {position: [x, y, z], radius}"),
        "reference_path": _points_refused("reference_path"),
        "instruction": _struct_refused("instruction", Instruction, "an object {instruction_text, ...}"),
        "info": _struct_refused("info", Info, "an object {geodesic_distance}"),
    },
)


# ----------------------------------------------------------------------------- ground truth ({split}_gt.json.gz)
class GroundTruth(msgspec.Struct, kw_only=True):
    """One entry of a `{split}_gt.json.gz` file, keyed by episode id: the dense path a shortest-path
    follower walks (`locations`, start included), and its actions (0 STOP, 1 FORWARD, 2 LEFT, 3 RIGHT)."""

    locations: Points
    actions: list[Annotated[int, msgspec.Meta(ge=0)]] | msgspec.UnsetType = UNSET
    forward_steps: Annotated[int, msgspec.Meta(ge=0)] | msgspec.UnsetType = UNSET


GROUND_TRUTH = RecordKind(
    GroundTruth,
    {
        "locations": _points_refused("locations"),
        "actions": lambda v: "'actions' must be a list of action numbers (integers >= 0)",
        "forward_steps": _number_refused("forward_steps", "an integer >= 0"),
    },
)


# ----------------------------------------------------------------------------- agent positions
class Step(msgspec.Struct, kw_only=True):
    """One step of VLN-CE's R2R inference output: `{"position": [x, y, z], "heading": h, "stop": bool}`."""

    position: Point
    heading: FiniteNumber | None | msgspec.UnsetType = UNSET
    stop: bool | msgspec.UnsetType = UNSET


STEP = RecordKind(
    Step,
    {
        "position": _point_refused("position"),
        "heading": _number_refused("heading", "a finite number (radians)"),
        "stop": lambda v: f"'stop' must be true or false, got {v!r:.40}",
    },
)


class PathLine(msgspec.Struct, kw_only=True):
    """One line of an RxR-Habitat submission (JSON Lines): `{"instruction_id": int, "path": [[x, y, z], ...]}`."""

    instruction_id: EpisodeId
    path: Points


PATH_LINE = RecordKind(PathLine, {"instruction_id": _id_refused("instruction_id"), "path": _points_refused("path")})


# ----------------------------------------------------------------------------- simulator results
def _flag_words(name: str):
    return _number_refused(name, "0 or 1 (or true/false)")


def _unit_words(name: str):
    return _number_refused(name, "a number in [0, 1]")


def _metres_words(name: str):
    return _number_refused(name, "a finite number >= 0")


class Stats(msgspec.Struct, kw_only=True):
    """One episode of a VLN-CE / CWP / ETPNav `stats_ep_ckpt_*.json` (keyed by episode id), or of a
    NaVid `stats_<episode_id>.json` (one object, with `id`). Every metric is optional; other keys
    (ETPNav's `ghost_cnt`, ...) are ignored."""

    distance_to_goal: NonNegativeNumber | msgspec.UnsetType = UNSET
    success: Flag | msgspec.UnsetType = UNSET
    oracle_success: Flag | msgspec.UnsetType = UNSET
    spl: UnitNumber | msgspec.UnsetType = UNSET
    ndtw: UnitNumber | msgspec.UnsetType = UNSET
    sdtw: UnitNumber | msgspec.UnsetType = UNSET
    path_length: NonNegativeNumber | msgspec.UnsetType = UNSET
    steps_taken: NonNegativeNumber | msgspec.UnsetType = UNSET
    collisions: NonNegativeNumber | msgspec.UnsetType = UNSET
    oracle_navigation_error: NonNegativeNumber | msgspec.UnsetType = UNSET
    oracle_spl: UnitNumber | msgspec.UnsetType = UNSET
    id: EpisodeId | msgspec.UnsetType = UNSET


STATS = RecordKind(
    Stats,
    {
        "distance_to_goal": _metres_words("distance_to_goal"),
        "success": _flag_words("success"),
        "oracle_success": _flag_words("oracle_success"),
        "spl": _unit_words("spl"),
        "ndtw": _unit_words("ndtw"),
        "sdtw": _unit_words("sdtw"),
        "path_length": _metres_words("path_length"),
        "steps_taken": _metres_words("steps_taken"),
        "collisions": _metres_words("collisions"),
        "oracle_navigation_error": _metres_words("oracle_navigation_error"),
        "oracle_spl": _unit_words("oracle_spl"),
        "id": _id_refused("id"),
    },
)


class ResultLine(msgspec.Struct, kw_only=True):
    """One line of a StreamVLN / InternNav `result.json` (JSON Lines)."""

    episode_id: EpisodeId
    scene_id: str | msgspec.UnsetType = UNSET
    success: Flag | msgspec.UnsetType = UNSET
    spl: UnitNumber | msgspec.UnsetType = UNSET
    os: Flag | msgspec.UnsetType = UNSET
    ne: NonNegativeNumber | msgspec.UnsetType = UNSET
    ndtw: UnitNumber | msgspec.UnsetType = UNSET
    steps: NonNegativeNumber | msgspec.UnsetType = UNSET


RESULT_LINE = RecordKind(
    ResultLine,
    {
        "episode_id": _id_refused("episode_id"),
        "scene_id": lambda v: f"'scene_id' must be a string (the scan), got {v!r:.40}",
        "success": _flag_words("success"),
        "spl": _unit_words("spl"),
        "os": _flag_words("os"),
        "ne": _metres_words("ne"),
        "ndtw": _unit_words("ndtw"),
        "steps": _metres_words("steps"),
    },
)
