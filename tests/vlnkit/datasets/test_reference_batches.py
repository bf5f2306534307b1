"""Dataset chunks -> reference batches: the typed decoder and the chunk check against `parse_r2r`."""

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vlnkit.datasets.chunk_streams import VOCAB, read_stream
from vlnkit.datasets.json_chunks import json_chunks
from vlnkit.datasets.r2r import RecordError, parse_r2r
from vlnkit.datasets.reference_batches import reference_batch, reference_chunk


def test_fast_reference_path_equals_validate_record():
    base = {"path_id": 1, "scan": "s1", "path": ["a", "b"], "heading": 0.5, "instructions": ["go"], "distance": 2}
    variants = [
        {},
        {"distance": None},
        {"heading": True},
        {"path": []},
        {"path": ["a", ""]},
        {"instructions": []},
        {"instructions": ["x", 3]},
        {"scan": ""},
        {"path_id": 2**64},
        {"heading": float("nan")},
        {"distance": -1},
        {"distance": -0.5},
        {"distance": -0.0},
        {"distance": 0},
    ]
    for change in variants:
        items = [dict(base), {**base, "path_id": 2, **change}]
        data = "\n".join(json.dumps(x) for x in items).encode()
        old = list(parse_r2r(data, "f"))
        ((start, got, strict),) = list(json_chunks(io.BytesIO(data + b"\n"), "f"))
        batch, errors = reference_batch(got, start, "f", 0, VOCAB, strict=strict)
        if change.get("path_id") == 2**64:
            assert "64-bit" in errors[0].reason
            continue
        assert errors == [e for e in old if isinstance(e, RecordError)], change
        assert batch.path_id.tolist() == [r["path_id"] for r in old if not isinstance(r, RecordError)]


def test_reference_batches_equal_parse_r2r():
    records = [
        {"path_id": 1, "scan": "s1", "path": ["a", "b"], "heading": 0.1, "instructions": ["x", "y"]},
        {"path_id": 2, "scan": "s2", "path": ["d", "zz"], "heading": 0, "instructions": ["x"]},
        {"path_id": "3", "scan": "s1", "path": ["a"], "heading": 0, "instructions": ["x"]},
        {"path_id": 4, "scan": "s1", "path": ["a"], "heading": 0, "instructions": []},
        {"path_id": 2**70, "scan": "s1", "path": ["a"], "heading": 0, "instructions": ["x"]},
    ]
    data = json.dumps(records).encode()
    old = list(parse_r2r(data, "f"))
    ((start, items, _),) = list(json_chunks(io.BytesIO(data), "f"))
    batch, errors = reference_batch(items, start, "f", 0, VOCAB)
    old_errors = [e for e in old if isinstance(e, RecordError)]
    assert errors[:2] == old_errors[:2]
    # Both readers refuse a path_id beyond 64 bits (every output writes it as int64), naming the record.
    assert "64-bit" in errors[2].reason and errors[2].record == f"#4 (path_id={2**70})"
    assert "64-bit" in old_errors[2].reason and old_errors[2].record == errors[2].record
    assert batch.path_id.tolist() == [1, 2] and batch.instructions.tolist() == [2, 1]
    assert batch.scan.tolist() == ["s1", "s2"]
    assert [batch.paths.viewpoints(r, VOCAB) for r in range(2)] == [["a", "b"], ["d", "zz"]]


def _reference_rows(items, start, strict):
    batch, errors = reference_batch(items, start, "f", 0, VOCAB, strict=strict)
    rows = [
        (
            int(batch.index[r]),
            int(batch.path_id[r]),
            str(batch.scan[r]),
            int(batch.instructions[r]),
            batch.paths.viewpoints(r, VOCAB),
        )
        for r in range(len(batch))
    ]
    return rows, errors, []


def _read_references(data: bytes, chunk_bytes: int, typed):
    (rows, errors, _), typed_chunks = read_stream(data, chunk_bytes, typed, "records", _reference_rows)
    return (rows, errors), typed_chunks


def _parse_r2r_result(data: bytes):
    """What the whole-file record parser (`parse_r2r`, `validate_record`) makes of the same stream."""
    rows, errors = [], []
    for r in parse_r2r(data, "f"):
        if isinstance(r, RecordError):
            errors.append(r)
        else:
            rows.append((r["_index"], r["path_id"], r["scan"], len(r["instructions"]), r["path"]))
    return rows, errors


GOOD_RECORD = b'{"path_id": 4, "scan": "s1", "path": ["a", "zz", "c"], "heading": 0.5, "instructions": ["go", "x"]}'
ODD_RECORDS = [
    *(
        json.dumps({**json.loads(GOOD_RECORD), **change}).encode()
        for change in (
            {"distance": 2.5},
            {"distance": 0},
            {"distance": -0.0},
            {"distance": -1},
            {"distance": None},
            {"distance": True},
            {"heading": True},
            {"heading": "0.5"},
            {"heading": None},
            {"heading": 7},
            {"path_id": 7.0},
            {"path_id": "7"},
            {"path_id": False},
            {"path_id": 2**63 - 1},
            {"path_id": 2**63},
            {"path_id": -(2**63)},
            {"path_id": 2**64 + 5},
            {"path_id": -(2**70)},
            {"scan": ""},
            {"scan": 5},
            {"path": []},
            {"path": ["a", ""]},
            {"path": ["a", 3]},
            {"path": "abc"},
            {"instructions": []},
            {"instructions": ["x", 3]},
            {"instructions": "go"},
            {"extra": {"nested": [None, 1.5]}, "instr_encodings": [[1, 2]]},
        )
    ),
    *(
        json.dumps({k: v for k, v in json.loads(GOOD_RECORD).items() if k != key}).encode()
        for key in (
            "path_id",
            "scan",
            "path",
            "heading",
            "instructions",
        )
    ),
    b'{"path_id": 4, "scan": "s1", "path": ["a"], "heading": 1e400, "instructions": ["go"]}',
    b'{"path_id": 4, "scan": "s1", "path": ["a"], "heading": ' + b"9" * 400 + b', "instructions": ["go"]}',
    b'{"path_id": 4, "scan": "s1", "path": ["a"], "heading": NaN, "instructions": ["go"]}',
    b'{"path_id": 4, "scan": "s1", "path": ["a"], "heading": 0, "distance": Infinity, "instructions": ["go"]}',
    b'{"path_id": 4, "scan": "s1", "path": ["a"], "heading": 0, "distance": 1e400, "instructions": ["go"]}',
    b'{"path_id": 4, "scan": "s1", "path": ["\\u0061", "b"], "heading": 0, "instructions": ["go"]}',
    b'{"path_id": 4, "scan": "s1", "path": ["\\ud800"], "heading": 0, "instructions": ["go"]}',
    b'{"path_id": 4, "path_id": "x", "scan": "s1", "path": ["a"], "heading": 0, "instructions": ["go"]}',
    b'{"path_id": "x", "path_id": 4, "scan": "s1", "path": ["a"], "heading": 0, "instructions": ["go"]}',
    b'{"path_id": 4, "scan": "s1", "path": ["a"], "heading": 0, "instructions": ["go"]} {"path_id": 5}',
    b'{"path_id": 4, "scan": "s1",',
    b'"path": ["a"], "heading": 0, "instructions": ["go"]}',
    b"  ",
    b"\t",
    b"[]",
    b"null",
    b"4",
]


@pytest.mark.parametrize("odd", ODD_RECORDS)
def test_typed_reference_lines_read_what_the_record_parser_reads(odd):
    """An odd dataset line among good ones: the msgspec path refuses its chunk or agrees line for line,
    with the general path and with the whole-file record parser."""
    data = b"\n".join([GOOD_RECORD] * 3 + [odd] + [GOOD_RECORD] * 2) + b"\n"
    for chunk_bytes in (1 << 20, 97):
        want, _ = _read_references(data, chunk_bytes, None)
        got, typed_chunks = _read_references(data, chunk_bytes, reference_chunk)
        assert got == want
    assert typed_chunks >= 1  # chunks of good lines alone do go the msgspec way
    assert want == _parse_r2r_result(data)


reference_line = st.one_of(
    st.just(GOOD_RECORD),
    st.sampled_from(ODD_RECORDS),
    st.builds(
        lambda pid, scan, path, heading, ins, distance: json.dumps(
            {"path_id": pid, "scan": scan, "path": path, "heading": heading, "instructions": ins, **distance}
        ).encode(),
        st.integers(-3, 12) | st.sampled_from([2**63 - 1, 2**63, -(2**63) - 1]) | st.booleans(),
        st.sampled_from(["s1", "s2", "", "q"]),
        st.lists(st.sampled_from(["a", "b", "c", "d", "e", "q", ""]), max_size=4),
        st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.booleans(),
        st.lists(st.sampled_from(["go", "", "left"]), max_size=2),
        st.just({})
        | st.builds(lambda d: {"distance": d}, st.floats(allow_nan=False, allow_infinity=False) | st.none()),
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(reference_line, min_size=1, max_size=14), st.sampled_from([b"\n", b"\r\n"]), st.integers(1, 400))
def test_property_typed_reference_reading_equals_the_general_path(lines, newline, chunk_bytes):
    """Both fast paths (msgspec, and orjson plus bulk checks) read what the whole-file record parser reads.

    Good records come first and outnumber the others: a file holding one JSON object, or whose lines
    are mostly broken, is one file-level error for the whole-file reader and record errors for the
    line reader (both loud; the module docstring names these two differences)."""
    data = newline.join([GOOD_RECORD] * (len(lines) + 1) + lines) + newline
    want, _ = _read_references(data, chunk_bytes, None)
    got, _ = _read_references(data, chunk_bytes, reference_chunk)
    assert got == want
    rows, errors = want
    assert (rows, errors) == _parse_r2r_result(data)


def test_reference_chunk_decodes_columns():
    chunk = reference_chunk(
        [GOOD_RECORD, b'{"instructions": ["a"], "heading": -1, "path": ["d"], "scan": "s2", "path_id": -9}']
    )
    assert chunk.path_id.tolist() == [4, -9] and chunk.scans == ["s1", "s2"]
    assert chunk.instructions.tolist() == [2, 1] and chunk.lengths.tolist() == [3, 1]
    assert chunk.viewpoints == ["a", "zz", "c", "d"]
    assert reference_chunk([GOOD_RECORD.replace(b'"heading": 0.5', b'"heading": false')]) is None
    assert reference_chunk([]) is None


def test_a_broken_crlf_line_is_worded_as_the_whole_file_reader_words_it():
    data = b"\r\n".join([GOOD_RECORD, GOOD_RECORD, b'{"path_id": 4, "scan": "s1",', GOOD_RECORD]) + b"\r\n"
    (_, errors), _ = _read_references(data, 1 << 20, None)
    assert errors == _parse_r2r_result(data)[1] and "column 29" in errors[0].reason
