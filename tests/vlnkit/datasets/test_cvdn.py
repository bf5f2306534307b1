"""CVDN instance files and predictions keyed by inst_idx: what is read, what is refused and how it is
worded, and the target-path rule of the evaluator (planner, player, trusted)."""

from __future__ import annotations

import json

import pytest

from vlnkit.datasets.cvdn import (
    DEFAULT_TARGET_PATH,
    TARGET_PATHS,
    check_target_path,
    cvdn_record,
    is_cvdn,
    parse_cvdn,
    target_path,
)
from vlnkit.datasets.records import prediction
from vlnkit.datasets.trajectories import parse_predictions
from vlnkit.io.dead_letters import RecordError

INSTANCE = {
    "inst_idx": 108,
    "scan": "VVfe2KiqLaN",
    "game_idx": 30,
    "target": "towel",
    "start_pano": {"heading": 3.14, "elevation": 17.5, "pano": "a"},
    "planner_path": ["a", "b", "c"],
    "player_path": ["a", "b", "x"],
    "end_panos": ["e1", "e2"],
    "dialog_history": [{"nav_idx": 0, "role": "navigator", "message": "where?"}],
}


def read(items) -> list:
    return list(parse_cvdn(json.dumps(items), "val_seen.json"))


def test_a_valid_instance_keeps_every_key_and_gets_an_instr_id():
    (rec,) = read([INSTANCE])
    assert rec["instr_id"] == "108" and rec["_source"] == "val_seen.json" and rec["_index"] == 0
    assert {k: rec[k] for k in INSTANCE} == INSTANCE


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"inst_idx": "108"}, "'inst_idx' must be an integer, got '108'"),
        ({"inst_idx": True}, "'inst_idx' must be an integer, got True"),
        ({"inst_idx": 2**64}, "'inst_idx' must fit in a 64-bit integer, got one of 20 digits"),
        ({"scan": ""}, "'scan' must be a non-empty string"),
        ({"planner_path": []}, "'planner_path' has 0 viewpoints, at least 1 required"),
        ({"player_path": ["a", 3]}, "'player_path' must be a list of viewpoint id strings"),
        ({"end_panos": []}, "'end_panos' must be a non-empty list of viewpoint id strings"),
        ({"end_panos": "e1"}, "'end_panos' must be a non-empty list of viewpoint id strings"),
    ],
)
def test_a_bad_field_is_a_dead_letter_naming_the_instance(change, reason):
    ok, bad = read([INSTANCE, {**INSTANCE, **change}])
    assert ok["inst_idx"] == 108
    assert isinstance(bad, RecordError)
    assert bad.record.startswith("#1 (inst_idx=") and bad.reason == reason and bad.source == "val_seen.json"


def test_a_missing_field_is_named():
    (bad,) = read([{k: v for k, v in INSTANCE.items() if k != "end_panos"}])
    assert bad.message() == "val_seen.json #0 (inst_idx=108): missing field 'end_panos'"


def test_json_lines_and_a_broken_file():
    text = "\n".join(json.dumps({**INSTANCE, "inst_idx": i}) for i in range(3))
    assert [r["inst_idx"] for r in parse_cvdn(text, "f.jsonl")] == [0, 1, 2]
    (bad,) = parse_cvdn("[{", "f.json")
    assert bad.record == "" and bad.reason.startswith("invalid JSON")


def test_a_file_that_is_one_object_is_refused_as_a_whole():
    (bad,) = parse_cvdn(json.dumps({"inst_idx": 1}), "f.json")
    assert bad.record == "" and "the file is one JSON object" in bad.reason


def test_is_cvdn():
    assert is_cvdn(INSTANCE)
    assert not is_cvdn({"path_id": 1, "instructions": ["go"], "path": ["a"]})
    assert not is_cvdn({"instruction_id": 26, "path": ["a"]})


def test_predictions_keyed_by_inst_idx():
    text = json.dumps(
        [
            {"inst_idx": 108, "trajectory": [["a", 1.05, 0.0], ["b", 0.0, 0.0]]},
            {"inst_idx": "108", "trajectory": [["a", 0, 0]]},
            {"inst_idx": 7, "trajectory": []},
            {"inst_idx": 9, "trajectory": ["a", "b"]},
        ]
    )
    good, bad_id, empty, plain = parse_predictions(text, "p.json")
    assert (good["instr_id"], good["path"], good["layout"]) == ("108", ["a", "b"], "r2r_submission")
    assert bad_id.reason == "'inst_idx' must be an integer, got '108'"
    assert empty.reason == "empty trajectory (no viewpoints)" and empty.record == "#2 (instr_id=7)"
    assert plain["path"] == ["a", "b"]
    # An instr_id, when a prediction has one, is its id whatever else it holds.
    assert prediction({"instr_id": "3_0", "inst_idx": 4, "trajectory": ["a"]}, "p", 0)["instr_id"] == "3_0"


# ----------------------------------------------------------------------------- target paths (eval.py:31-37)
def test_target_paths():
    rec = cvdn_record(INSTANCE, "f", 0)
    assert TARGET_PATHS == ("planner", "player", "trusted") and DEFAULT_TARGET_PATH == "planner"
    assert target_path(rec) == ["a", "b", "c"]
    assert target_path(rec, "player") == ["a", "b", "x"]
    # The planner's goal c is not on the player's path: the trusted path is the planner's.
    assert target_path(rec, "trusted") == ["a", "b", "c"]


@pytest.mark.parametrize(
    "planner, player, trusted",
    [
        (["a", "b", "c"], ["a", "c", "d"], "player"),  # goal passed on the way: still the player's path
        (["a", "b", "c"], ["a", "b", "c"], "player"),
        (["a"], ["a", "b", "a"], "player"),  # the goal is the start and the player came back to it
        (["a"], ["a", "b"], "planner"),  # the start itself does not count (player_path[1:])
        (["a"], ["a"], "planner"),
    ],
)
def test_trusted_is_the_player_path_only_when_it_reaches_the_planner_goal(planner, player, trusted):
    rec = {"planner_path": planner, "player_path": player}
    assert target_path(rec, "trusted") == (player if trusted == "player" else planner)


def test_an_unknown_target_path_is_refused():
    with pytest.raises(ValueError, match=r"target path must be one of \('planner', 'player', 'trusted'\)"):
        check_target_path("trusted_path")
    with pytest.raises(ValueError):
        target_path(INSTANCE, "best")
