import json

import pytest

from vlnkit.datasets.r2r import RecordError, parse_r2r, public

GOOD = {"distance": 9.5, "scan": "s", "path_id": 7, "path": ["a", "b"], "heading": 1.0, "instructions": ["Go."]}


def parse(data, **kw):
    return list(parse_r2r(data, "f.json", **kw))


def test_json_list_and_json_lines_give_the_same_records():
    as_list = parse(json.dumps([GOOD, {**GOOD, "path_id": 8}]))
    as_lines = parse(json.dumps(GOOD) + "\n\n" + json.dumps({**GOOD, "path_id": 8}) + "\n")
    assert [public(r) for r in as_list] == [public(r) for r in as_lines] == [GOOD, {**GOOD, "path_id": 8}]
    assert [(r["_source"], r["_index"]) for r in as_list] == [("f.json", 0), ("f.json", 1)]


@pytest.mark.parametrize(
    "record, reason",
    [
        ({**GOOD, "scan": ""}, "'scan' must be a non-empty string"),
        ({**GOOD, "path_id": "7"}, "'path_id' must be an integer"),
        ({**GOOD, "path_id": True}, "'path_id' must be an integer"),
        ({**GOOD, "path": "a b"}, "'path' must be a list"),
        ({**GOOD, "path": []}, "'path' has 0 viewpoints"),
        ({**GOOD, "heading": float("nan")}, "'heading' must be a finite number"),
        ({**GOOD, "distance": "far"}, "'distance' must be a finite number"),
        ({**GOOD, "instructions": []}, "'instructions' must be a non-empty list"),
        ({k: v for k, v in GOOD.items() if k != "heading"}, "missing field 'heading'"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_bad_records_are_reported_with_file_record_and_reason(record, reason):
    items = parse(json.dumps([GOOD, record]))
    assert isinstance(items[0], dict)
    err = items[1]
    assert isinstance(err, RecordError)
    assert err.source == "f.json" and err.record.startswith("#1")
    assert reason in err.reason
    assert err.message().startswith("f.json #1")


def test_distance_can_be_required():
    rec = {k: v for k, v in GOOD.items() if k != "distance"}
    assert isinstance(parse(json.dumps([rec]))[0], dict)
    assert "missing field 'distance'" in parse(json.dumps([rec]), require_distance=True)[0].reason


@pytest.mark.parametrize(
    "data, reason",
    [
        ('[{"scan": "s", ', "invalid JSON"),
        ('{"a": 1}', "missing field 'scan'"),  # JSON Lines with a non-record
        (b"\xff\xfe", "not UTF-8"),
        ('"just a string"', "expected a JSON object"),
    ],
)
def test_broken_files_are_one_clear_error(data, reason):
    items = parse(data)
    assert all(isinstance(i, RecordError) for i in items)
    assert reason in items[0].reason


def test_bad_json_line_does_not_stop_the_file():
    items = parse(json.dumps(GOOD) + "\n{oops\n" + json.dumps({**GOOD, "path_id": 9}))
    assert [type(i).__name__ for i in items] == ["dict", "RecordError", "dict"]
    assert items[1].record == "line 2"


def test_empty_file_has_no_records():
    assert parse("") == [] and parse("[]") == [] and parse("  \n") == []


def test_non_ascii_text_survives():
    rec = {**GOOD, "instructions": ["Gehen Sie geradeaus, bis zur Küche — 台所へ"]}
    assert parse(json.dumps([rec], ensure_ascii=False).encode("utf-8"))[0]["instructions"] == rec["instructions"]
