"""Prediction chunks -> batches: the typed decoder and the chunk check against the record parser."""

import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.vlnkit.datasets.chunk_streams import VOCAB, read_stream
from vlnkit.datasets.json_chunks import json_chunks
from vlnkit.datasets.prediction_batches import canonical_instr_ids, prediction_batch, submission_chunk
from vlnkit.datasets.r2r import RecordError
from vlnkit.datasets.records import SUBMISSION
from vlnkit.datasets.trajectories import parse_predictions


def test_prediction_batches_equal_the_record_parser():
    preds = [
        {"instr_id": "1_0", "trajectory": [["a", 0, 0.5], ["b", 1, 2]]},
        {"instr_id": "2_1", "trajectory": ["d", "zz", "e"]},  # viewpoints layout, unknown id kept by string
        {"instr_id": "x_1", "trajectory": [["a", 0, 0]]},  # valid but can never match
        {"instr_id": "3_0", "trajectory": []},  # empty
        {"instr_id": 7, "trajectory": [["a", 0, 0]]},  # int ids are read as text: "7", an RxR instruction id
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
            (
                int(batch.index[r]),
                f"{batch.path_id[r]}_{batch.k[r]}".removesuffix("_-1"),
                batch.paths.viewpoints(r, VOCAB),
            )
            for r in range(len(batch))
        ]
        assert (batch.rank == 3).all() and batch.agent == "agent"
    assert got_errors == errors
    assert unknown == [(2, "x_1"), (7, "007_0")]
    assert rows == [(p["_index"], p["instr_id"], p["path"]) for p in good if p["instr_id"] not in ("x_1", "007_0")]


def test_fast_path_equals_the_record_parser_on_a_big_submission_chunk():
    rng = np.random.default_rng(0)
    vps = ["a", "b", "c", "d", "e", "q"]
    preds = [
        {"instr_id": f"{i}_{i % 3}", "trajectory": [[vps[v], 0.1, -0.2] for v in rng.integers(0, 6, 1 + i % 9)]}
        for i in range(2000)
    ]
    data = "\n".join(json.dumps(p) for p in preds).encode()
    ((start, items, strict),) = list(json_chunks(io.BytesIO(data + b"\n"), "f", "predictions"))
    assert strict and SUBMISSION.convert_all(items) is not None  # the chunk check, not the record parser
    batch, errors, unknown = prediction_batch(items, start, "f", "a", 0, VOCAB, strict)
    assert not errors and not unknown and len(batch) == 2000
    for r, p in enumerate(preds):
        assert batch.paths.viewpoints(r, VOCAB) == [e[0] for e in p["trajectory"]]
    assert set(batch.paths.strings) == {r for r, p in enumerate(preds) if any(e[0] == "q" for e in p["trajectory"])}


def test_canonical_instr_ids():
    ok, pid, k = canonical_instr_ids(["1_2", "-3_0", "01_2", "1_02", "1_2_3", "x", "9" * 19 + "_0", "0_0"])
    assert ok.tolist() == [True, True, False, False, False, False, False, True]
    assert pid[ok].tolist() == [1, -3, 0] and k[ok].tolist() == [2, 0, 0]
    # RxR: one integer is an instruction_id (k = -1), alone or mixed with R2R ids.
    ok, pid, k = canonical_instr_ids(["26", "4_1", "026", "9" * 19, "0", "26_"])
    assert ok.tolist() == [True, True, False, False, True, False]
    assert pid[ok].tolist() == [26, 4, 0] and k[ok].tolist() == [-1, 1, -1]


def test_rxr_predictions_read_alike_on_every_path():
    lines = [
        {"instruction_id": 26, "path": ["a", "b"]},
        {"instruction_id": 27, "path": ["c"], "metrics": {"sr": 1.0}, "demonstration_id": 27},
        {"instr_id": "28", "trajectory": [["d", 0, 0]]},
    ]
    want = [(0, 26, -1, ["a", "b"]), (1, 27, -1, ["c"]), (2, 28, -1, ["d"])]
    for strict in (True, False):
        rows, errors, unknown = _batch_result(lines, strict)
        assert rows == want and not errors and not unknown
    chunk = submission_chunk([json.dumps(x).encode() for x in lines[:2]])
    assert chunk.path_id.tolist() == [26, 27] and chunk.k.tolist() == [-1, -1]
    rows, errors, _ = _batch_result([{"instruction_id": "26", "path": ["a"]}, {"instruction_id": 5, "path": []}], False)
    assert not rows and [e.reason for e in errors] == [
        "'instruction_id' must be an integer, got '26'",
        "empty trajectory (no viewpoints)",
    ]


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


def _prediction_rows(items, start, strict):
    batch, errors, unknown = prediction_batch(items, start, "f", "a", 0, VOCAB, strict)
    rows = [
        (int(batch.index[r]), int(batch.path_id[r]), int(batch.k[r]), batch.paths.viewpoints(r, VOCAB))
        for r in range(len(batch))
    ]
    return rows, errors, unknown


def _read_predictions(data: bytes, chunk_bytes: int, typed):
    return read_stream(data, chunk_bytes, typed, "predictions", _prediction_rows)


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
    assert chunk.path_id.tolist() == [4, 5] and chunk.k.tolist() == [1, 0] and chunk.lengths.tolist() == [3, 1]
    assert chunk.viewpoints == ["a", "zz", "e", "b"]
    assert submission_chunk([b'{"instr_id": "5_0", "trajectory": [["b", false, 0]]}']) is None
    assert submission_chunk([]) is None
