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
        ({**GOOD, "path_id": 2**63}, "'path_id' must fit in a 64-bit integer"),
        ({**GOOD, "path_id": -(10**400)}, "'path_id' must fit in a 64-bit integer, got one of 401 digits"),
        ({**GOOD, "path": "a b"}, "'path' must be a list"),
        ({**GOOD, "path": []}, "'path' has 0 viewpoints"),
        ({**GOOD, "heading": float("nan")}, "'heading' must be a number"),
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
        ('{"a": 1}', "the file is one JSON object ('a'), not a JSON list of records"),  # one non-record object
        (b"\xff\xfe", "not UTF-8"),
        ('"just a string"', "expected a JSON list of records or JSON Lines, got str"),
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


# ----------------------------------------------------------------------------- the class: layout detection
RECORDS = [GOOD, {**GOOD, "path_id": 8, "path": ["b", "c", "d"]}]


def _layouts(records):
    """The same records written every way an editor or a script writes JSON."""
    out = {
        "list compact": json.dumps(records),
        "list indent 2": json.dumps(records, indent=2),
        "list indent 4, leading blank lines": "\n\n  " + json.dumps(records, indent=4),
        "list tab indent, CRLF": json.dumps(records, indent="\t").replace("\n", "\r\n"),
        "json lines": "\n".join(json.dumps(r) for r in records) + "\n",
        "json lines, CRLF, blank lines": "\r\n\r\n".join(json.dumps(r) for r in records),
    }
    if len(records) == 1:
        out["one object indented"] = json.dumps(records[0], indent=2)
        out["one object compact"] = json.dumps(records[0])
    return out


@pytest.mark.parametrize("bom", [False, True], ids=["no BOM", "UTF-8 BOM"])
@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
@pytest.mark.parametrize("count", [1, 2])
def test_every_layout_with_or_without_bom_reads_the_same_records(bom, as_bytes, count):
    records = RECORDS[:count]
    for name, text in _layouts(records).items():
        text = ("\ufeff" if bom else "") + text
        items = parse(text.encode("utf-8") if as_bytes else text)
        errors = [i for i in items if isinstance(i, RecordError)]
        assert not errors, (name, errors[:2])
        assert [public(r) for r in items] == records, name


@pytest.mark.parametrize(
    "obj",
    [
        {"episodes": RECORDS},
        {"data": {"train": RECORDS}},
        {"scan": "s"},  # a fragment of a record
    ],
    ids=["wrapper of records", "nested wrapper", "fragment"],
)
@pytest.mark.parametrize("indent", [None, 2])
def test_one_object_that_is_not_a_record_is_one_clear_file_error(obj, indent):
    items = parse("\ufeff" + json.dumps(obj, indent=indent))
    assert len(items) == 1 and isinstance(items[0], RecordError)
    assert items[0].record == ""
    assert "the file is one JSON object" in items[0].reason
    assert "not a JSON list of records or JSON Lines" in items[0].reason


def test_a_broken_indented_document_is_one_error_not_a_dead_letter_per_line():
    text = json.dumps(RECORDS, indent=2)
    text = "{" + text[1:-1]  # an indented document that is not valid JSON
    items = parse(text)
    assert len(items) == 1 and items[0].record == "" and "neither a JSON list" in items[0].reason


@pytest.mark.parametrize("first", ["not json at all", "# a comment", "'single quotes'"])
def test_json_lines_with_one_bad_line_keeps_the_good_lines(first):
    text = first + "\n" + "\n".join(json.dumps(r) for r in RECORDS)
    items = parse(text)
    assert [type(i).__name__ for i in items] == ["RecordError", "dict", "dict"]
    assert items[0].record == "line 1"


# ----------------------------------------------------------------------------- the class: numbers in records
NOT_NUMBERS = {
    "string": "1.5",
    "empty string": "",
    "bool": True,
    "null": None,
    "list": [1.5],
    "NaN": float("nan"),
    "Infinity": float("inf"),
    "-Infinity": float("-inf"),
    "400-digit int": 10**400,
}


@pytest.mark.parametrize("field", ["heading", "distance"])
@pytest.mark.parametrize("name", sorted(NOT_NUMBERS))
def test_a_non_number_is_reported_as_such(field, name):
    (err,) = parse(json.dumps([{**GOOD, field: NOT_NUMBERS[name]}]))
    assert isinstance(err, RecordError)
    assert f"'{field}' must be a" in err.reason and "number" in err.reason, err.reason
    assert "viewpoint" not in err.reason


@pytest.mark.parametrize("distance", [-1e-9, -3.0, -(10**300)])
def test_a_negative_distance_is_refused(distance):
    (err,) = parse(json.dumps([{**GOOD, "distance": distance}]))
    assert isinstance(err, RecordError) and ">= 0" in err.reason


def test_zero_and_integer_numbers_are_fine():
    (rec,) = parse(json.dumps([{**GOOD, "distance": 0, "heading": 3}]))
    assert rec["distance"] == 0.0 and rec["heading"] == 3.0 and isinstance(rec["heading"], float)


def test_record_label_names_index_and_path_id():
    from vlnkit.datasets.r2r import record_label

    assert record_label({"_index": 4, "path_id": 12}) == record_label({"path_id": 12}, 4) == "#4 (path_id=12)"
    assert record_label({"path_id": 12}) == "#? (path_id=12)"  # a record the readers did not number
    assert record_label({}) == "#?" and record_label({"scan": "s"}, 3) == "#3"  # no path_id to name
