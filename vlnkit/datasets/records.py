"""What a valid record is, declared once per kind: an R2R/R4R dataset record and an agent's prediction.

Each kind is a msgspec `Struct` whose field types say what a field must hold (a non-empty string,
a finite number, an integer within 64 bits, a non-empty list of viewpoint ids), plus, where a
type cannot say it, a few checks written once beside it. Every reader uses that one declaration:

- the whole-file readers (`vlnkit.datasets.r2r.parse_r2r`, `vlnkit.datasets.trajectories.parse_predictions`)
  judge each parsed object with `RecordKind.reason` (`validate_record`, `prediction`);
- the chunked readers check a chunk of parsed objects in one C call (`RecordKind.convert_all`);
- the typed decoders decode JSON Lines straight into the structs (`RecordKind.decode_lines`).

Only `reason` words a refusal, so a dead letter says the same thing whichever path a record took:
the fast paths either accept a whole chunk or hand it to the record-by-record path. The reason names
the first field (in declaration order) whose value its type refuses, in the kind's own words.

A new kind is one more `Struct` built from the field types below and one more `RecordKind` with its
wording; its readers call `reason`, `convert_all` and `decode_lines` as the R2R readers do. The
Room-across-Room kinds (`RxRGuideLine`, `RxRFollowerLine`, and the prediction layout
`InstructionPrediction`) are declared that way; `vlnkit.datasets.rxr` reads them.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated

import msgspec

from vlnkit.io.dead_letters import RecordError

# ----------------------------------------------------------------------------- field types
# A finite JSON number: msgspec takes a JSON integer as a float, never a boolean; NaN and the
# infinities fail the bounds, and so does an integer beyond the float range.
FiniteNumber = Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)]
NonNegativeNumber = Annotated[float, msgspec.Meta(ge=0, le=sys.float_info.max)]
# Every output stores a path_id as a 64-bit integer.
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
NonEmptyString = Annotated[str, msgspec.Meta(min_length=1)]
ViewpointId = NonEmptyString
ViewpointPath = Annotated[list[ViewpointId], msgspec.Meta(min_length=1)]


@dataclass(frozen=True)
class RecordKind:
    """One record kind: its `Struct` (what is valid) and the words for each field's refusal.

    `refused[name](value)` says why `value` is not a valid `name` (only called when the field's type
    refuses it); a required field that is absent is "missing field '<name>'". A kind read only on the
    fast paths (`SUBMISSION`) has no wording: its refusals are worded by the general reader.

        >>> class Point(msgspec.Struct):
        ...     x: FiniteNumber
        >>> kind = RecordKind(Point, {"x": lambda v: f"'x' must be a number, got {v!r}"})
        >>> kind.reason({"x": 1}), kind.reason({"x": "1"}), kind.reason({}), kind.reason([1])
        (None, "'x' must be a number, got '1'", "missing field 'x'", 'expected a JSON object, got list')
        >>> kind.convert_all([{"x": 1}, {"x": 2.5}])
        [Point(x=1.0), Point(x=2.5)]
    """

    struct: type
    refused: dict[str, Callable[[object], str]] | None = None
    _fields: tuple = field(init=False, repr=False)
    _decoder: msgspec.json.Decoder = field(init=False, repr=False)

    def __post_init__(self) -> None:
        fields = msgspec.structs.fields(self.struct)
        missing = [f.name for f in fields if f.name not in self.refused] if self.refused is not None else []
        if missing:
            raise ValueError(f"{self.struct.__name__}: no wording for fields {missing}")
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_decoder", msgspec.json.Decoder(self.struct))

    def reason(self, obj) -> str | None:
        """Why `obj` (a parsed JSON value) is not a valid record of this kind, or None when it is."""
        if self.refused is None:
            raise TypeError(f"{self.struct.__name__} has no wording: its general reader words refusals")
        if not isinstance(obj, dict):
            return f"expected a JSON object, got {type(obj).__name__}"
        try:
            msgspec.convert(obj, self.struct)
            return None
        except msgspec.ValidationError as exc:
            error = exc
        for f in self._fields:
            if f.required and f.encode_name not in obj:
                return f"missing field {f.encode_name!r}"
        for f in self._fields:
            if f.encode_name in obj:
                try:
                    msgspec.convert(obj[f.encode_name], f.type)
                except msgspec.ValidationError:
                    return self.refused[f.name](obj[f.encode_name])
        return str(error)  # a rule across fields (none yet): msgspec's own words

    def convert_all(self, items: list) -> list | None:
        """The structs of parsed objects `items` when every one is valid, else None (one C call)."""
        try:
            return msgspec.convert(items, list[self.struct])
        except msgspec.ValidationError:
            return None

    def decode_lines(self, lines: list[bytes]) -> list | None:
        """The structs of JSON Lines `lines` (non-blank) when every line is one valid record, else None.

        Each line is decoded on its own, so a line holding two values, or half of one, fails as it
        does for orjson; a malformed line or a value the type refuses makes the whole answer None
        (the caller then parses the chunk the general way, where each refusal is worded).
        """
        try:
            return list(map(self._decoder.decode, lines))
        except msgspec.DecodeError:  # ValidationError (a value of another type) is a DecodeError too
            return None


# ----------------------------------------------------------------------------- R2R / R4R records
class R2RRecord(msgspec.Struct, kw_only=True):
    """An R2R-style dataset record (R2R, R4R, build_r4r's paths); other keys are kept by the readers
    and ignored here. `distance` may be absent, never null. Fields are checked in this order."""

    scan: NonEmptyString
    path_id: Int64
    path: ViewpointPath
    heading: FiniteNumber
    distance: NonNegativeNumber | msgspec.UnsetType = msgspec.UNSET
    instructions: Annotated[list[str], msgspec.Meta(min_length=1)]


def _path_id_refused(pid) -> str:
    if isinstance(pid, int) and not isinstance(pid, bool):
        return f"'path_id' must fit in a 64-bit integer, got one of {len(str(abs(pid)))} digits"
    return f"'path_id' must be an integer, got {pid!r:.40}"


def _path_refused(path) -> str:
    if isinstance(path, list) and not path:
        return "'path' has 0 viewpoints, at least 1 required"
    return "'path' must be a list of viewpoint id strings"


R2R_RECORD = RecordKind(
    R2RRecord,
    {
        "scan": lambda v: "'scan' must be a non-empty string",
        "path_id": _path_id_refused,
        "path": _path_refused,
        "heading": lambda v: f"'heading' must be a number (radians, finite), got {v!r}",
        "distance": lambda v: f"'distance' must be a finite number >= 0, got {v!r}",
        "instructions": lambda v: "'instructions' must be a non-empty list of strings",
    },
)


def validate_record(obj) -> str | None:
    """Why an R2R-style record is unusable, or None when it is fine (see `R2RRecord`).

    >>> validate_record({"scan": "s", "path_id": 1, "path": [], "heading": 0, "instructions": ["go"]})
    "'path' has 0 viewpoints, at least 1 required"
    """
    return R2R_RECORD.reason(obj)


# ----------------------------------------------------------------------------- RxR records
class TimedWord(msgspec.Struct, kw_only=True):
    """One word of an RxR `timed_instruction`: a few words have no times (absent or null)."""

    word: str
    start_time: FiniteNumber | None | msgspec.UnsetType = msgspec.UNSET
    end_time: FiniteNumber | None | msgspec.UnsetType = msgspec.UNSET


class RxRGuideLine(msgspec.Struct, kw_only=True):
    """A Room-across-Room guide annotation: one instruction, one episode (its instr_id is
    `str(instruction_id)`). Several lines share a `path_id`. `split`, `edit_distance` and any other
    key are kept by the readers and ignored here. Fields are checked in this order."""

    instruction_id: Int64
    path_id: Int64
    scan: NonEmptyString
    path: ViewpointPath
    heading: FiniteNumber
    language: NonEmptyString
    instruction: str
    annotator_id: Int64 | msgspec.UnsetType = msgspec.UNSET
    timed_instruction: list[TimedWord] | msgspec.UnsetType = msgspec.UNSET


def _int_refused(name: str) -> Callable[[object], str]:
    def refused(value) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{name!r} must fit in a 64-bit integer, got one of {len(str(abs(value)))} digits"
        return f"{name!r} must be an integer, got {value!r:.40}"

    return refused


def _timed_word_refused(entry) -> str:
    """Why one entry of a `timed_instruction` is not a `TimedWord`, in the toolkit's words."""
    if not isinstance(entry, dict):
        return f"must be an object {{word, start_time, end_time}}, got {type(entry).__name__}"
    if not isinstance(entry.get("word"), str):
        return "'word' must be a string" if "word" in entry else "missing field 'word'"
    for name in ("start_time", "end_time"):
        value = entry.get(name)
        if value is not None and not _finite_float(value):
            return f"{name!r} must be a finite number of seconds or null, got {value!r:.40}"
    return "must be an object {word, start_time, end_time}"


def _finite_float(x) -> bool:
    """A JSON number a float holds finitely (what `FiniteNumber` accepts), never a bool."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False


def _timed_refused(value) -> str:
    if not isinstance(value, list):
        return f"'timed_instruction' must be a list of {{word, start_time, end_time}}, got {type(value).__name__}"
    for n, entry in enumerate(value):
        try:
            msgspec.convert(entry, TimedWord)
        except msgspec.ValidationError:
            return f"'timed_instruction' entry {n}: {_timed_word_refused(entry)}"
    return "'timed_instruction' must be a list of {word, start_time, end_time}"


RXR_GUIDE = RecordKind(
    RxRGuideLine,
    {
        "instruction_id": _int_refused("instruction_id"),
        "path_id": _path_id_refused,
        "scan": lambda v: "'scan' must be a non-empty string",
        "path": _path_refused,
        "heading": lambda v: f"'heading' must be a number (radians, finite), got {v!r}",
        "language": lambda v: f"'language' must be a non-empty string (an IETF tag such as en-IN), got {v!r:.40}",
        "instruction": lambda v: f"'instruction' must be a string, got {type(v).__name__}",
        "annotator_id": _int_refused("annotator_id"),
        "timed_instruction": _timed_refused,
    },
)


class InstructionPrediction(msgspec.Struct, kw_only=True):
    """A prediction addressed by RxR instruction id: `{"instruction_id": int, "path": [viewpoint ids]}`.
    An RxR follower line is one too (its other keys are ignored when it is read as a prediction)."""

    instruction_id: Int64
    path: ViewpointPath


INSTRUCTION_PREDICTION = RecordKind(InstructionPrediction)  # worded by `prediction`, like SUBMISSION


class RxRFollowerLine(msgspec.Struct, kw_only=True):
    """A Room-across-Room follower annotation: the viewpoints a person walked for one instruction, and
    the metrics RxR released with that walk (`ne`, `sr`, `spl`, `dtw`, `ndtw`, `sdtw`)."""

    instruction_id: Int64
    path: ViewpointPath
    demonstration_id: Int64 | msgspec.UnsetType = msgspec.UNSET
    annotator_id: Int64 | msgspec.UnsetType = msgspec.UNSET
    metrics: dict[str, FiniteNumber] | msgspec.UnsetType = msgspec.UNSET


RXR_FOLLOWER = RecordKind(
    RxRFollowerLine,
    {
        "instruction_id": _int_refused("instruction_id"),
        "path": _path_refused,
        "demonstration_id": _int_refused("demonstration_id"),
        "annotator_id": _int_refused("annotator_id"),
        "metrics": lambda v: "'metrics' must be an object of finite numbers",
    },
)


# ----------------------------------------------------------------------------- predictions
# The fast paths read the R2R submission layout with a canonical instr_id; any other layout is read
# by `prediction` (the layouts of `flatten_trajectory`, which a type cannot tell apart).
SubmissionStep = tuple[ViewpointId, FiniteNumber, FiniteNumber]


class SubmissionLine(msgspec.Struct):
    """A prediction in the R2R submission layout: `[[viewpoint, heading, elevation], ...]`, at least one
    step. Unknown keys are ignored and a repeated key keeps its last value, as orjson and json do."""

    instr_id: str
    trajectory: Annotated[list[SubmissionStep], msgspec.Meta(min_length=1)]


SUBMISSION = RecordKind(SubmissionLine)  # refusals are worded by `prediction`, which reads every layout


class TrajectoryError(ValueError):
    """A trajectory that is not in any known layout (or mixes layouts)."""


def _is_number(x) -> bool:
    """A JSON number other than NaN and infinities: any int (however long; an angle is never used, so
    one beyond the float range is still a number) or a finite float, never a bool."""
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or isinstance(x, float) and math.isfinite(x)


# A number written as text ("1.57"): never a viewpoint id (Matterport ids are 32 hexadecimal digits).
_NUMBER_TEXT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_ANGLES = ("heading", "elevation")


def _number_as_text(entry) -> str | None:
    """Why a step that reads as viewpoint ids is a submission step with an angle written as text, or None."""
    if not 2 <= len(entry) <= 3 or _NUMBER_TEXT.fullmatch(entry[0]):
        return None
    for name, value in zip(_ANGLES, entry[1:]):
        if isinstance(value, str) and len(value) < 32 and _NUMBER_TEXT.fullmatch(value):
            return f"{name} must be a number, got {value!r}"
    return None


def _entry_layout(entry) -> str:
    if isinstance(entry, str):
        return "viewpoints"
    if isinstance(entry, (list, tuple)):
        if all(isinstance(v, str) for v in entry):
            why = _number_as_text(entry)
            if why is not None:
                raise TrajectoryError(why)
            return "nested"
        if len(entry) >= 1 and isinstance(entry[0], str):
            for name, value in zip(_ANGLES, entry[1:]):
                if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value):
                    raise TrajectoryError(f"{name} must be a number, got {value!r}")
            if all(_is_number(v) for v in entry[1:]):
                return "r2r_submission"
    raise TrajectoryError(
        f"entry {entry!r:.80} is neither a viewpoint id, [viewpoint, heading, elevation] nor a list of viewpoint ids"
    )


def flatten_trajectory(trajectory) -> tuple[list[str], str]:
    """(viewpoint ids in order, layout name). Raises TrajectoryError on anything else.

    Layouts: `r2r_submission` `[[viewpoint, heading, elevation], ...]`; `viewpoints` `[vp, ...]`;
    `nested` (DUET-style) `[[vp], [vp, vp], [], ...]`. A one-item entry `[vp]` reads as a nested step;
    `[vp, heading, elevation]` as a submission entry. All entries of one trajectory must share a layout
    (a single-viewpoint nested step and a submission entry without angles are the same thing and may mix).

        >>> flatten_trajectory([["a", 0.5, 0], ["b", 1, 0]])
        (['a', 'b'], 'r2r_submission')
        >>> flatten_trajectory([["a", 0, 0], ["vp", "1.57", "0"]])
        Traceback (most recent call last):
        ...
        vlnkit.datasets.records.TrajectoryError: step 1: heading must be a number, got '1.57'
    """
    if not isinstance(trajectory, (list, tuple)):
        raise TrajectoryError(f"trajectory must be a list, got {type(trajectory).__name__}")
    layouts = set()
    out: list[str] = []
    for n, entry in enumerate(trajectory):
        try:
            layout = _entry_layout(entry)
        except TrajectoryError as exc:
            raise TrajectoryError(f"step {n}: {exc}") from None
        if layout == "viewpoints":
            out.append(entry)
        elif layout == "nested":
            out.extend(entry)
            if len(entry) != 1:  # [vp] alone is ambiguous between nested and angle-less submission
                layouts.add(layout)
            continue
        else:
            out.append(entry[0])
        layouts.add(layout)
    if not all(out):
        raise TrajectoryError("trajectory contains an empty viewpoint id")
    if len(layouts) > 1:
        raise TrajectoryError(f"trajectory mixes layouts {sorted(layouts)}")
    if not layouts:
        layouts = {"nested" if trajectory and not isinstance(trajectory[0], str) else "viewpoints"}
    return out, layouts.pop()


def _instr_id(value) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value:
        return value
    return None


# The keys of integer episode ids, for tasks that number their episodes instead of "<path_id>_<k>":
# RxR's `instruction_id` and CVDN's `inst_idx`. An `instr_id`, when present, wins.
INTEGER_ID_KEYS = ("instruction_id", "inst_idx")


def prediction(obj, source: str, index: int) -> dict | RecordError:
    """One prediction object -> {"instr_id", "path", "layout", "_source", "_index"} or a RecordError.

    A prediction is `{"instr_id": "<path_id>_<k>" (or an integer), "trajectory": ...}` (`path` is
    taken for `trajectory`) in any layout of `flatten_trajectory`, with at least one viewpoint; or
    one addressed by an integer episode id (`INTEGER_ID_KEYS`): for RxR `{"instruction_id": int,
    "path": [...]}` (`InstructionPrediction`), for CVDN's task `{"inst_idx": int, "trajectory":
    [...]}`, whose instr_id is the integer's text.

        >>> prediction({"instr_id": "7_0", "trajectory": ["a", "b"]}, "p.json", 0)["path"]
        ['a', 'b']
        >>> prediction({"instruction_id": 26, "path": ["a", "b"]}, "p.json", 0)["instr_id"]
        '26'
        >>> prediction({"inst_idx": 108, "trajectory": [["a", 0.0, 0.0]]}, "p.json", 0)["instr_id"]
        '108'
        >>> prediction({"instr_id": "7_0", "trajectory": []}, "p.json", 3).reason
        'empty trajectory (no viewpoints)'
        >>> prediction({"trajectory": [["a", 0.0, 0.0]]}, "p.json", 4).reason
        "no episode id: none of 'instr_id', 'instruction_id' (RxR), 'inst_idx' (CVDN)"
    """
    label = f"#{index}"
    if not isinstance(obj, dict):
        return RecordError(source, label, f"expected a JSON object, got {type(obj).__name__}")
    id_key = None if "instr_id" in obj else next((k for k in INTEGER_ID_KEYS if k in obj), None)
    if id_key is not None:  # RxR's layout (and RxR follower lines), CVDN's
        iid = obj[id_key]
        if isinstance(iid, bool) or not isinstance(iid, int):
            return RecordError(source, label, f"{id_key!r} must be an integer, got {iid!r:.40}")
        instr_id = str(iid)
    else:
        instr_id = _instr_id(obj.get("instr_id"))
    if instr_id is None and "instr_id" not in obj:  # the prediction names its episode by none of the keys
        return RecordError(
            source, label, "no episode id: none of 'instr_id', 'instruction_id' (RxR), 'inst_idx' (CVDN)"
        )
    if instr_id is None:
        return RecordError(source, label, f"missing or invalid 'instr_id' ({obj.get('instr_id')!r:.40})")
    label = f"#{index} (instr_id={instr_id})"
    key = "trajectory" if "trajectory" in obj else "path" if "path" in obj else None
    if key is None:
        return RecordError(source, label, "missing field 'trajectory'")
    try:
        path, layout = flatten_trajectory(obj[key])
    except TrajectoryError as exc:
        return RecordError(source, label, str(exc))
    if not path:
        return RecordError(source, label, "empty trajectory (no viewpoints)")
    return {"instr_id": instr_id, "path": path, "layout": layout, "_source": source, "_index": index}
