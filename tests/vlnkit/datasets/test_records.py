"""One declaration per record kind: every reading path accepts the same records and words refusals alike."""

import io
import json
import math

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vlnkit.datasets.chunk_streams import VOCAB
from vlnkit.datasets.json_chunks import json_chunks
from vlnkit.datasets.prediction_batches import prediction_batch, submission_chunk
from vlnkit.datasets.r2r import RecordError, parse_r2r
from vlnkit.datasets.records import (
    R2R_RECORD,
    SUBMISSION,
    FiniteNumber,
    RecordKind,
    flatten_trajectory,
    validate_record,
)
from vlnkit.datasets.reference_batches import reference_batch, reference_chunk
from vlnkit.datasets.trajectories import parse_predictions

GOOD = {"scan": "s1", "path_id": 4, "path": ["a", "b"], "heading": 0.5, "instructions": ["go"], "distance": 2.0}


def old_validate_record(obj) -> str | None:
    """The hand-written checks the declaration replaced (the former `r2r.validate_record`), as an oracle."""

    def is_number(x) -> bool:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            return False
        try:
            return math.isfinite(x)
        except OverflowError:
            return False

    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    for key in ("scan", "path_id", "path", "heading"):
        if key not in obj:
            return f"missing field {key!r}"
    if not isinstance(obj["scan"], str) or not obj["scan"]:
        return "'scan' must be a non-empty string"
    pid = obj["path_id"]
    if not isinstance(pid, int) or isinstance(pid, bool):
        return f"'path_id' must be an integer, got {pid!r:.40}"
    if not -(2**63) <= pid < 2**63:
        return f"'path_id' must fit in a 64-bit integer, got one of {len(str(abs(pid)))} digits"
    path = obj["path"]
    if not isinstance(path, list) or not all(isinstance(v, str) and v for v in path):
        return "'path' must be a list of viewpoint id strings"
    if len(path) < 1:
        return f"'path' has {len(path)} viewpoints, at least 1 required"
    if not is_number(obj["heading"]):
        return f"'heading' must be a number (radians, finite), got {obj['heading']!r}"
    if "distance" in obj and not (is_number(obj["distance"]) and obj["distance"] >= 0):
        return f"'distance' must be a finite number >= 0, got {obj['distance']!r}"
    ins = obj.get("instructions")
    if not isinstance(ins, list) or not ins or not all(isinstance(s, str) for s in ins):
        return "'instructions' must be a non-empty list of strings"
    return None


def verdicts(obj) -> tuple:
    """(reason, accepted by the chunk check, accepted by the typed decoder) of one parsed object."""
    line = json.dumps(obj, allow_nan=True).encode()
    return validate_record(obj), R2R_RECORD.convert_all([obj]) is not None, R2R_RECORD.decode_lines([line]) is not None


HAND_MADE = [
    ({}, None),
    ({"distance": 0}, None),
    ({"heading": 7, "extra": [None]}, None),
    ({"path": []}, "'path' has 0 viewpoints, at least 1 required"),
    ({"path": ["a", ""]}, "'path' must be a list of viewpoint id strings"),
    ({"path": "ab"}, "'path' must be a list of viewpoint id strings"),
    ({"scan": ""}, "'scan' must be a non-empty string"),
    ({"path_id": True}, "'path_id' must be an integer, got True"),
    ({"path_id": 2**63}, "'path_id' must fit in a 64-bit integer, got one of 19 digits"),
    ({"path_id": -(2**63)}, None),
    ({"heading": "0.5"}, "'heading' must be a number (radians, finite), got '0.5'"),
    ({"heading": float("nan")}, "'heading' must be a number (radians, finite), got nan"),
    ({"heading": 10**400}, f"'heading' must be a number (radians, finite), got {10**400!r}"),
    ({"distance": None}, "'distance' must be a finite number >= 0, got None"),
    ({"distance": -1e-9}, "'distance' must be a finite number >= 0, got -1e-09"),
    ({"instructions": []}, "'instructions' must be a non-empty list of strings"),
    ({"instructions": ["a", 3]}, "'instructions' must be a non-empty list of strings"),
    ({"scan": 5, "path": []}, "'scan' must be a non-empty string"),  # the first field in declaration order
]


@pytest.mark.parametrize("change, reason", HAND_MADE)
def test_hand_made_records_are_judged_alike_on_every_path(change, reason):
    obj = {**GOOD, **change}
    got, converted, decoded = verdicts(obj)
    assert got == reason == old_validate_record(obj)
    assert converted == (reason is None)
    assert decoded == (reason is None)


def test_a_missing_field_is_named():
    for key in ("scan", "path_id", "path", "heading", "instructions"):
        obj = {k: v for k, v in GOOD.items() if k != key}
        assert verdicts(obj) == (f"missing field {key!r}", False, False)
    # The one wording the declaration changed: a missing list of instructions is a missing field.
    assert old_validate_record({k: v for k, v in GOOD.items() if k != "instructions"}).startswith("'instructions'")
    assert verdicts([1]) == ("expected a JSON object, got list", False, False)


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**65), 2**65),
    st.floats(),
    st.text(max_size=3),
    st.lists(st.sampled_from(["a", "", "b"]) | st.integers(0, 2), max_size=3),
)
record = st.fixed_dictionaries(
    {},
    optional={
        "scan": st.sampled_from(["s1", ""]) | values,
        "path_id": st.integers(-(2**64), 2**64) | values,
        "path": st.lists(st.sampled_from(["a", "b", ""]), max_size=3) | values,
        "heading": st.floats() | values,
        "distance": st.floats() | values,
        "instructions": st.lists(st.sampled_from(["go", ""]), max_size=2) | values,
    },
)


@settings(max_examples=500, deadline=None)
@given(record)
def test_property_the_declaration_equals_the_old_checks(obj):
    """Random records: the declaration accepts what the old hand-written checks accepted, and words
    every refusal as they did (apart from a missing `instructions`, now "missing field")."""
    reason, converted, decoded = verdicts(obj)
    old = old_validate_record(obj)
    assert (reason is None) == (old is None) == converted
    if "instructions" not in obj and {"scan", "path_id", "path", "heading"} <= set(obj):
        assert reason == "missing field 'instructions'"  # missing fields are named before any value is judged
    else:
        assert reason == old
    if decoded:  # the typed decoder may refuse more (NaN written as a literal, a float beyond the range), never less
        assert reason is None


def test_every_field_needs_its_wording():
    class Point(msgspec.Struct):
        x: FiniteNumber
        y: FiniteNumber

    with pytest.raises(ValueError, match=r"no wording for fields \['y'\]"):
        RecordKind(Point, {"x": str})
    with pytest.raises(TypeError, match="no wording"):
        SUBMISSION.reason({})


# ----------------------------------------------------------------------------- one verdict in every job
def _reference_errors(data: bytes, typed) -> list[RecordError]:
    errors = []
    for c in json_chunks(io.BytesIO(data), "f", "records", typed=typed):
        if isinstance(c, RecordError):
            errors.append(c)
        else:
            start, items, strict = c
            errors += reference_batch(items, start, "f", 0, VOCAB, strict=strict)[1]
    return errors


def test_an_empty_path_is_refused_with_one_reason_by_every_reader():
    records = [GOOD, {**GOOD, "path_id": 5, "path": []}]
    as_lines = "\n".join(map(json.dumps, records)).encode() + b"\n"
    want = "'path' has 0 viewpoints, at least 1 required"
    whole = [r for r in parse_r2r(as_lines, "f") if isinstance(r, RecordError)]
    assert [e.reason for e in whole] == [want]
    assert _reference_errors(as_lines, reference_chunk) == _reference_errors(as_lines, None) == whole
    assert _reference_errors(json.dumps(records).encode(), None)[0].reason == want  # a JSON list, checked as a chunk
    assert reference_batch(records, 0, "<records>", 0, VOCAB, strict=True)[1][0].reason == want  # from a pipeline


def test_a_heading_written_as_text_is_reported_as_such():
    step = ["vp", "1.57", "0"]
    with pytest.raises(ValueError, match=r"^step 3: heading must be a number, got '1.57'$"):
        flatten_trajectory([["a", 0, 0], ["b", 0, 0], ["c", 0, 0], step])
    with pytest.raises(ValueError, match=r"^step 0: elevation must be a number, got '-0.5'$"):
        flatten_trajectory([["a", 1.5, "-0.5"]])
    assert flatten_trajectory([["a", "b", "c"]]) == (["a", "b", "c"], "nested")  # viewpoint ids stay viewpoint ids
    preds = [{"instr_id": "1_0", "trajectory": [["a", 0, 0], ["b", 0, 0], ["c", 0, 0], step]}]
    lines = "\n".join(map(json.dumps, preds * 3)).encode() + b"\n"
    (whole, *_) = [p for p in parse_predictions(lines, "f") if isinstance(p, RecordError)]
    assert whole.reason == "step 3: heading must be a number, got '1.57'"
    for typed in (submission_chunk, None):
        errors = []
        for start, items, strict in json_chunks(io.BytesIO(lines), "f", "predictions", typed=typed):
            errors += prediction_batch(items, start, "f", "a", 0, VOCAB, strict)[1]
        assert errors[0] == whole and len(errors) == 3
