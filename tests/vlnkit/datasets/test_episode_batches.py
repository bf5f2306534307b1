"""Chunked, columnar reading against the whole-file record readers it replaces."""

import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.datasets.episode_batches import (
    Paths,
    PredictionBatch,
    ReferenceChunk,
    SubmissionChunk,
    Vocabulary,
    _fast_submission,
    bucket_of,
    canonical_instr_ids,
    exact_item,
    json_chunks,
    json_line_range,
    plan_line_ranges,
    prediction_batch,
    reference_batch,
    reference_chunk,
    split_by_bucket,
    submission_chunk,
)
from vlnkit.datasets.r2r import RecordError, json_items, parse_r2r
from vlnkit.datasets.trajectories import parse_predictions

VOCAB = Vocabulary(["s1", "s2"], [["a", "b", "c"], ["d", "e"]])


def chunked(data: bytes, chunk_bytes: int, what="predictions"):
    """json_chunks as a flat list of (index, item) / RecordError, like json_items."""
    out = []
    for c in json_chunks(io.BytesIO(data), "f", what, chunk_bytes=chunk_bytes):
        if isinstance(c, RecordError):
            out.append(c)
        else:
            start, items, _ = c
            exact = [exact_item(items, n) for n in range(len(items))]  # what the record parsers see
            out += [x if isinstance(x, RecordError) else (start + n, x) for n, x in enumerate(exact)]
    return out


def ranged(data: bytes, range_bytes: int, chunk_bytes: int = 5):
    """The chunks of every planned range, flattened like `chunked`, or None when the plan reads whole."""
    plan = plan_line_ranges(io.BytesIO(data), range_bytes)
    if plan is None:
        return None
    assert plan[0].start in (0, 3) and plan[-1].end == len(data)  # after a byte-order mark, to the end
    assert all(a.end == b.start for a, b in zip(plan, plan[1:]))  # contiguous, whole lines
    out = []
    for r in plan:
        for c in json_line_range(io.BytesIO(data), r, "f", chunk_bytes):
            if isinstance(c, RecordError):
                out.append(c)
            else:
                start, items, _ = c
                out += [
                    x if isinstance(x, RecordError) else (start + n, exact_item(items, n)) for n, x in enumerate(items)
                ]
    return out


TRICKY = [
    b"",
    b"   \n\n",
    b'[{"a": 1}, {"b": 2}]',
    b"  \n [1, 2, 3]\n",
    b'{"a": 1}\n\n{"b": 2}\n  \n{"c": 3}',
    b'{"a": 1}\r\n{"b": 2}\r\n',
    b'{"a": 1}\rnot json\r{"c": NaN}\n',
    b'{"a": 1}\n{broken\n{"c": [1, 2]}\n',
    b'{"a": 12345678901234567890123}\n{"b": 1e400}\n-9223372036854775809\n',
    '{"a": "x"}\u2028{"b": 1}\n\u3000\n{"c": 2}\n'.encode(),
    b'{"a": 1}\x0c{"b": 2}\x1c{"c": 3}\n',
    b"\xef\xbb\xbf" + b'{"a": 1}\n',
    b'{"a": 1}\n\xff\n',
    b'[{"a": 1}, ',
    b'{"a": 1}',
    b'{"a": 1}\n[1]\n"s"\n',
]


@pytest.mark.parametrize("data", TRICKY)
@pytest.mark.parametrize("chunk_bytes", [1, 7, 1 << 20])
def test_chunks_give_the_items_of_the_whole_file_reader(data, chunk_bytes):
    want = list(json_items(data, "f", "predictions"))
    got = chunked(data, chunk_bytes)
    if data == b'{"a": 1}\n\xff\n' and got != want:
        # The one documented difference: bad UTF-8 after the first chunk ends the file there.
        assert got[0] == (0, {"a": 1}) and isinstance(got[-1], RecordError) and "not UTF-8" in got[-1].reason
        return
    assert got == want


line = st.one_of(
    st.just(b""),
    st.just(b"  "),
    st.just(b"{bad"),
    st.just(b"NaN"),
    st.builds(
        lambda d: json.dumps(d).encode(), st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=4))
    ),
    st.sampled_from([b"\r", b"\x0b", "\u2028".encode(), b"\x85"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(line, max_size=12), st.sampled_from([b"\n", b"\r\n"]), st.integers(1, 64))
def test_property_chunked_json_lines_equal_json_items(lines, newline, chunk_bytes):
    data = newline.join(lines)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return
    whole = list(json_items(data, "f", "predictions"))
    got = chunked(data, chunk_bytes)
    if (
        got != whole
        and len(whole) == 1
        and isinstance(whole[0], RecordError)
        and whole[0].reason.startswith("neither a JSON list")
    ):
        # The one documented difference: a file whose first line is a JSON object but whose lines are
        # mostly broken is refused whole by the whole-file reader (it sees every line first); the streaming
        # reader cannot know that in advance, so it dead-letters each broken line. Nothing is dropped: every
        # non-blank line is either an item (the record parsers judge it next) or an error naming its line.
        assert len(got) == sum(1 for line in data.decode().splitlines() if line.strip())
        assert all(x.record.startswith("line ") for x in got if isinstance(x, RecordError))
        assert sum(isinstance(x, RecordError) for x in got) >= 2
        return
    assert got == whole


def test_prediction_batches_equal_the_record_parser():
    preds = [
        {"instr_id": "1_0", "trajectory": [["a", 0, 0.5], ["b", 1, 2]]},
        {"instr_id": "2_1", "trajectory": ["d", "zz", "e"]},  # viewpoints layout, unknown id kept by string
        {"instr_id": "x_1", "trajectory": [["a", 0, 0]]},  # valid but can never match
        {"instr_id": "3_0", "trajectory": []},  # empty
        {"instr_id": 7, "trajectory": [["a", 0, 0]]},  # int ids are read as text
        {"instr_id": "-4_2", "trajectory": [["c"], [], ["a", "b"]]},
        {"instr_id": "5_0", "trajectory": [["a", True, 0]]},  # bool is not an angle
        {"instr_id": "007_0", "trajectory": [["a", 0, 0]]},  # not the canonical text of 7_0
    ]
    data = "\n".join(json.dumps(p) for p in preds).encode()
    old = list(parse_predictions(data, "f"))
    good = [p for p in old if not isinstance(p, RecordError)]
    errors = [p for p in old if isinstance(p, RecordError)]
    rows, got_errors, unknown = [], [], []
    for start, items, strict in json_chunks(io.BytesIO(data), "f", "predictions", chunk_bytes=40):
        batch, e, u = prediction_batch(items, start, "f", "agent", 3, VOCAB, strict)
        got_errors += e
        unknown += u
        rows += [
            (int(batch.index[r]), f"{batch.path_id[r]}_{batch.k[r]}", batch.paths.viewpoints(r, VOCAB))
            for r in range(len(batch))
        ]
        assert (batch.rank == 3).all() and batch.agent == "agent"
    assert got_errors == errors
    assert unknown == [(2, "x_1"), (4, "7"), (7, "007_0")]
    assert rows == [(p["_index"], p["instr_id"], p["path"]) for p in good if p["instr_id"] not in ("x_1", "7", "007_0")]


def test_fast_path_equals_the_record_parser_on_a_big_submission_chunk():
    rng = np.random.default_rng(0)
    vps = ["a", "b", "c", "d", "e", "q"]
    preds = [
        {"instr_id": f"{i}_{i % 3}", "trajectory": [[vps[v], 0.1, -0.2] for v in rng.integers(0, 6, 1 + i % 9)]}
        for i in range(2000)
    ]
    data = "\n".join(json.dumps(p) for p in preds).encode()
    ((start, items, strict),) = list(json_chunks(io.BytesIO(data + b"\n"), "f", "predictions"))
    assert strict and _fast_submission(items) is not None  # the bulk path, not the record parser
    batch, errors, unknown = prediction_batch(items, start, "f", "a", 0, VOCAB, strict)
    assert not errors and not unknown and len(batch) == 2000
    for r, p in enumerate(preds):
        assert batch.paths.viewpoints(r, VOCAB) == [e[0] for e in p["trajectory"]]
    assert set(batch.paths.strings) == {r for r, p in enumerate(preds) if any(e[0] == "q" for e in p["trajectory"])}


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


def test_canonical_instr_ids():
    ok, pid, k = canonical_instr_ids(["1_2", "-3_0", "01_2", "1_02", "1_2_3", "x", "9" * 19 + "_0", "0_0"])
    assert ok.tolist() == [True, True, False, False, False, False, False, True]
    assert pid[ok].tolist() == [1, -3, 0] and k[ok].tolist() == [2, 0, 0]


def test_buckets_are_stable_and_split_batches_without_losing_rows():
    pid = np.arange(-50, 1000, dtype=np.int64)
    b = bucket_of(pid, 7)
    assert b.min() >= 0 and b.max() < 7 and (bucket_of(pid, 7) == b).all()
    assert len(np.unique(b)) == 7  # spread over every bucket
    paths = Paths.from_lists([["a"] * (1 + i % 4) + ["zz"] * (i % 2) for i in range(len(pid))], VOCAB)
    batch = PredictionBatch("a", np.zeros(len(pid), np.int64), np.arange(len(pid)), pid, pid % 3, paths)
    parts = list(split_by_bucket(batch, 7))
    assert sorted(x for _, part in parts for x in part.index.tolist()) == list(range(len(pid)))
    for bucket, part in parts:
        assert (bucket_of(part.path_id, 7) == bucket).all()
        for r in range(len(part)):
            assert part.paths.viewpoints(r, VOCAB) == paths.viewpoints(int(part.index[r]), VOCAB)
    joined = PredictionBatch.concat("a", [part for _, part in parts])
    assert len(joined) == len(pid) and len(joined.paths.strings) == len(paths.strings)


def test_vocabulary_numbers_and_ambiguous_ids():
    v = Vocabulary(["s1", "s2"], [["a", "b"], ["b", "c"]])  # "b" in two scans: resolved by string
    assert v.numbers(["a", "b", "c", "x"]).tolist() == [0, -1, 3, -1]
    assert v.scan_of.tolist() == [0, 0, 1, 1] and v.local.tolist() == [0, 1, 0, 1]


@pytest.mark.real_data
def test_vocabulary_matches_the_graphs(connectivity_dir):
    from vlnkit.navigation.graph import GraphStore

    v = Vocabulary.load(str(connectivity_dir))
    store = GraphStore(str(connectivity_dir))
    assert len(v.scans) == 90
    for scan in v.scans[:5]:
        g = store.get(scan)
        nums = v.numbers(list(g.viewpoints))
        assert (v.scan_of[nums] == v.scan_ids[scan]).all() and v.local[nums].tolist() == list(range(len(g)))


def _batch_result(items, strict):
    batch, errors, unknown = prediction_batch(items, 0, "f", "a", 0, VOCAB, strict)
    rows = [
        (int(batch.index[r]), int(batch.path_id[r]), int(batch.k[r]), batch.paths.viewpoints(r, VOCAB))
        for r in range(len(batch))
    ]
    return rows, errors, unknown


ODD = [
    {"instr_id": "", "trajectory": [["a", 0, 0]]},  # empty id: a read error, not an unknown id
    {"instr_id": 12, "trajectory": [["a", 0, 0]]},
    {"instr_id": "9_0", "path": [["a", 0, 0]]},
    {"instr_id": "9_0"},
    {"instr_id": "9_0", "trajectory": "ab"},
    {"instr_id": "9_0", "trajectory": {"a": 1}},
    {"instr_id": "9_0", "trajectory": []},
    {"instr_id": "9_0", "trajectory": [["a", 0]]},
    {"instr_id": "9_0", "trajectory": [["a", 0, False]]},
    {"instr_id": "9_0", "trajectory": [["a", "0", 0]]},
    {"instr_id": "9_0", "trajectory": [["", 0, 0]]},
    {"instr_id": "9_0", "trajectory": [[5, 0, 0]]},
    {"instr_id": "9_0", "trajectory": [["a", 0, 0], "b"]},
    {"instr_id": "x_0", "trajectory": [["a", 0, 0]]},
    ["not", "an", "object"],
]


@pytest.mark.parametrize("odd", ODD)
def test_bulk_check_gives_what_the_record_parser_gives(odd):
    """One odd record among good ones: the bulk path (strict) must refuse the chunk or agree record for record."""
    good = [{"instr_id": f"{i}_0", "trajectory": [["a", 0.5, -1], ["b", 1, 0]]} for i in range(5)]
    items = json.loads(json.dumps(good[:2] + [odd] + good[2:]))
    assert _batch_result(items, True) == _batch_result(items, False)


@pytest.mark.parametrize("data", TRICKY)
@pytest.mark.parametrize("range_bytes", [1, 9, 1 << 20])
def test_byte_ranges_give_the_chunks_of_the_whole_file(data, range_bytes):
    got = ranged(data, range_bytes)
    if got is not None:
        assert got == chunked(data, 1 << 20)


@settings(max_examples=300, deadline=None)
@given(st.lists(line, max_size=14), st.sampled_from([b"\n", b"\r\n"]), st.integers(1, 80), st.booleans())
def test_property_byte_ranges_equal_json_chunks(lines, newline, range_bytes, bom):
    data = (b"\xef\xbb\xbf" if bom else b"") + newline.join(lines)
    got = ranged(data, range_bytes)
    if got is None:
        return
    assert got == chunked(data, 1 << 20)


def test_a_plain_json_lines_file_is_planned_in_ranges_with_item_and_line_numbers():
    data = b'{"a": 1}\n\n  \n{"b": 2}\r\n{"c": 3}\n{"d": 4}'
    plan = plan_line_ranges(io.BytesIO(data), 12)
    # ranges: line 1 and blank line 2; whitespace line 3 (no item); line 4 (CRLF); line 5; line 6 (no final break)
    assert [(r.index, r.lineno) for r in plan] == [(0, 1), (1, 3), (1, 4), (2, 5), (3, 6)]
    assert plan_line_ranges(io.BytesIO(b'{"a": 1}\r{"b": 2}\n' * 3), 12) is None  # str.splitlines rules
    assert plan_line_ranges(io.BytesIO(b'{"a": 1}\n\xff\n' * 3), 12) is None  # not UTF-8
    assert plan_line_ranges(io.BytesIO(b'[{"a": 1},\n{"b": 2}]\n'), 4) is None  # a JSON list
    assert plan_line_ranges(io.BytesIO(b'{"a": 1}\n{"b": 2}\n'), 1 << 20) is None  # one range only


def _read_stream(data: bytes, chunk_bytes: int, typed, what: str, read_chunk):
    """Every batch row and read error of a stream (and, for predictions, unknown ids), and how many
    chunks `typed` took; `read_chunk(items, start, strict)` -> (rows, errors, unknown)."""
    rows, errors, unknown, typed_chunks = [], [], [], 0
    for c in json_chunks(io.BytesIO(data), "f", what, chunk_bytes=chunk_bytes, typed=typed):
        if isinstance(c, RecordError):
            errors.append(c)
            continue
        start, items, strict = c
        typed_chunks += isinstance(items, (SubmissionChunk, ReferenceChunk))
        r, e, u = read_chunk(items, start, strict)
        rows += r
        errors += e
        unknown += u
    return (rows, errors, unknown), typed_chunks


def _prediction_rows(items, start, strict):
    batch, errors, unknown = prediction_batch(items, start, "f", "a", 0, VOCAB, strict)
    rows = [
        (int(batch.index[r]), int(batch.path_id[r]), int(batch.k[r]), batch.paths.viewpoints(r, VOCAB))
        for r in range(len(batch))
    ]
    return rows, errors, unknown


def _read_predictions(data: bytes, chunk_bytes: int, typed):
    return _read_stream(data, chunk_bytes, typed, "predictions", _prediction_rows)


GOOD_LINE = b'{"instr_id": "4_1", "trajectory": [["a", 0.5, -1], ["zz", 1e-3, 0], ["e", 2, 3.25]]}'
ODD_LINES = [
    *(json.dumps(odd).encode() for odd in ODD),
    b'{"instr_id": "4_1", "trajectory": [["a", 1, 0]]} {"instr_id": "4_2", "trajectory": [["b", 1, 0]]}',
    b'{"instr_id": "4_1", "trajectory":',
    b'[["a", 1, 0]]}',
    b'{"instr_id": "4_1", "trajectory": [["a", 1e400, 0]]}',
    b'{"instr_id": "4_1", "trajectory": [["a", ' + b"9" * 400 + b", 0]]}",
    b'{"instr_id": "4_1", "trajectory": [["a", NaN, 0]]}',
    b'{"instr_id": "4_1", "trajectory": [["a", -Infinity, 0]]}',
    b'{"instr_id": "4_1", "trajectory": [["\\ud800", 1, 0]]}',
    b'{"instr_id": "4_1", "trajectory": [["\\u0061", 1, 0]]}',
    b'{"instr_id": "4_1", "instr_id": 5, "trajectory": [["a", 1, 0]]}',
    b'{"instr_id": "4_1", "trajectory": [["a", 1, 0]], "trajectory": []}',
    b'{"instr_id": "4_1", "trajectory": [["a", 1, 0]], "path": 3, "extra": {"x": [null]}}',
    b'{"instr_id": "4_1", "trajectory": [["a", 1, 0, 5]]}',
    b'{"instr_id": "04_1", "trajectory": [["a", 1, 0]]}',
    b'{"instr_id": "99999999999999999999_1", "trajectory": [["a", 1, 0]]}',
    b"  ",
    b"\t",
    b"[]",
    b"null",
    b'"4_1"',
]


@pytest.mark.parametrize("odd", ODD_LINES)
def test_typed_submission_lines_read_what_the_record_parser_reads(odd):
    """An odd line among good ones: the msgspec path refuses its chunk or agrees line for line."""
    data = b"\n".join([GOOD_LINE] * 3 + [odd] + [GOOD_LINE] * 2) + b"\n"
    for chunk_bytes in (1 << 20, 97):
        want, _ = _read_predictions(data, chunk_bytes, None)
        got, typed_chunks = _read_predictions(data, chunk_bytes, submission_chunk)
        assert got == want
    assert typed_chunks >= 1  # chunks of good lines alone do go the msgspec way


submission_line = st.one_of(
    st.just(GOOD_LINE),
    st.sampled_from(ODD_LINES),
    st.builds(
        lambda i, k, entries: json.dumps({"instr_id": f"{i}_{k}", "trajectory": entries}).encode(),
        st.integers(-3, 12),
        st.integers(0, 3),
        st.lists(
            st.tuples(
                st.sampled_from(["a", "b", "c", "d", "e", "q", ""]),
                st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.booleans(),
                st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5),
            ),
            max_size=4,
        ),
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(submission_line, min_size=1, max_size=14), st.sampled_from([b"\n", b"\r\n"]), st.integers(1, 400))
def test_property_typed_submission_reading_equals_the_general_path(lines, newline, chunk_bytes):
    data = newline.join(lines) + newline
    want, _ = _read_predictions(data, chunk_bytes, None)
    got, _ = _read_predictions(data, chunk_bytes, submission_chunk)
    assert got == want


def test_submission_chunk_decodes_columns():
    chunk = submission_chunk([GOOD_LINE, b'{"trajectory": [["b", 0, 0]], "instr_id": "5_0"}'])
    assert chunk.ids == ["4_1", "5_0"] and chunk.lengths.tolist() == [3, 1]
    assert chunk.viewpoints == ["a", "zz", "e", "b"]
    assert submission_chunk([b'{"instr_id": "5_0", "trajectory": [["b", false, 0]]}']) is None
    assert submission_chunk([]) is None


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
    (rows, errors, _), typed_chunks = _read_stream(data, chunk_bytes, typed, "records", _reference_rows)
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
