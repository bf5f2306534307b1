"""Prediction files in every layout agents write."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vlnkit.datasets.r2r import RecordError
from vlnkit.datasets.records import TrajectoryError, flatten_trajectory
from vlnkit.datasets.rxr import episode_ids  # the one definition (it moved from trajectories)
from vlnkit.datasets.trajectories import (
    collapse_repeats,
    parse_predictions,
    parse_predictions_parquet,
)


def test_layouts_flatten_in_order():
    assert flatten_trajectory([["a", 0.5, 0.0], ["a", 1.0, 0.0], ["b", 1.0, -0.5]]) == (
        ["a", "a", "b"],
        "r2r_submission",
    )
    assert flatten_trajectory(["a", "b", "b", "c"]) == (["a", "b", "b", "c"], "viewpoints")
    assert flatten_trajectory([["a"], ["b", "c", "d"], [], ["d"]]) == (["a", "b", "c", "d", "d"], "nested")
    assert flatten_trajectory([["a"], ["b"]]) == (["a", "b"], "nested")
    assert flatten_trajectory([["a", 1, 0], ["b"]]) == (["a", "b"], "r2r_submission")  # [vp] with no angles
    assert flatten_trajectory([]) == ([], "viewpoints")


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("abc", "must be a list"),
        ([["a", "b"], ["c", 1.0, 0.0]], "mixes layouts"),
        ([["a", "nan?", 0.0, 1]], "neither"),
        ([[1.0, "a"]], "neither"),
        ([None], "neither"),
        (["a", ""], "empty viewpoint"),
        ([["a", float("nan"), 0.0]], "neither"),
    ],
)
def test_malformed_trajectories_say_why(bad, reason):
    with pytest.raises(TrajectoryError, match=reason):
        flatten_trajectory(bad)


def test_any_json_integer_is_a_number_however_long():
    """An angle beyond the float range (which json reads as an int) is a number, not a crash."""
    assert flatten_trajectory([["a", 10**400, -(10**400)], ["b", 0, 0]]) == (["a", "b"], "r2r_submission")
    with pytest.raises(TrajectoryError, match="neither"):
        flatten_trajectory([["a", float("inf"), 0.0]])
    with pytest.raises(TrajectoryError, match="neither"):
        flatten_trajectory([["a", True, 0.0]])


def test_collapse_repeats():
    assert collapse_repeats(["a", "a", "b", "b", "a"]) == ["a", "b", "a"]
    assert collapse_repeats([]) == []


def test_json_list_and_json_lines_with_per_record_errors():
    items = [
        {"instr_id": "1_0", "trajectory": [["a", 0.0, 0.0], ["b", 0.0, 0.0]]},
        {"instr_id": 7, "trajectory": ["a"]},
        {"instr_id": "2_0", "trajectory": []},
        {"instr_id": "3_0", "trajectory": [[], []]},
        {"trajectory": ["a"]},
        {"instr_id": "4_0"},
        {"instr_id": "5_0", "path": ["x", "y"]},
        ["not", "an", "object"],
    ]
    for text in (json.dumps(items), "\n".join(json.dumps(i) for i in items) + "\n{broken\n"):
        out = list(parse_predictions(text.encode(), "p.json"))
        good = [o for o in out if not isinstance(o, RecordError)]
        bad = [o for o in out if isinstance(o, RecordError)]
        assert [(g["instr_id"], g["path"]) for g in good] == [("1_0", ["a", "b"]), ("7", ["a"]), ("5_0", ["x", "y"])]
        reasons = [b.reason for b in bad]
        assert reasons[:5] == [
            "empty trajectory (no viewpoints)",
            "empty trajectory (no viewpoints)",
            "no episode id: none of 'instr_id', 'instruction_id' (RxR), 'inst_idx' (CVDN)",
            "missing field 'trajectory'",
            "expected a JSON object, got list",
        ]
        assert bad[0].source == "p.json" and bad[0].record == "#2 (instr_id=2_0)"
    assert "invalid JSON" in reasons[-1]
    assert isinstance(next(parse_predictions(b"[1, 2", "x.json")), RecordError)
    assert next(parse_predictions(b"\xff", "x.json")).reason.startswith("not UTF-8")


def test_parquet_predictions():
    table = pa.table({"instr_id": ["1_0", "1_1", None], "path": [["a", "b"], [], ["c"]]})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    out = list(parse_predictions_parquet(buf.getvalue(), "p.parquet"))
    assert out[0]["path"] == ["a", "b"] and out[0]["layout"] == "viewpoints"
    assert [o.reason for o in out[1:]] == ["empty trajectory (no viewpoints)", "missing or invalid 'instr_id' (None)"]
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": ["x"]}), buf)
    assert "missing ['instr_id', 'path']" in next(parse_predictions_parquet(buf.getvalue(), "q.parquet")).reason
    assert "not a readable Parquet" in next(parse_predictions_parquet(b"nope", "r.parquet")).reason


def test_episode_ids():
    assert episode_ids({"path_id": 12, "instructions": ["a", "b"]}) == ["12_0", "12_1"]


@pytest.mark.real_data
def test_every_real_agent_output_parses(shared_data):
    files = sorted((shared_data / "agent_outputs").glob("*/*.json"))
    assert len(files) == 17
    layouts = set()
    for f in files:
        out = list(parse_predictions(f.read_bytes(), str(f)))
        assert out and not [o for o in out if isinstance(o, RecordError)], f
        layouts |= {o["layout"] for o in out}
    assert layouts == {"nested", "r2r_submission"}
