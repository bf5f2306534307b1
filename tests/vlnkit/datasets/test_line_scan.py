"""The compiled line scanners against the typed decoders they accelerate.

A scanner may refuse a block (None: it is then read the general way), but when it accepts one it must give
exactly what the typed decoder gives for those lines (`submission_chunk` / `reference_chunk`, then the
vocabulary's numbering): the same ids, the same lengths, the same viewpoint numbers, the same strings for
ids the vocabulary does not number. Lines are generated valid and then broken in every way a line can be.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vlnkit.datasets.columns import Paths, Vocabulary
from vlnkit.datasets.line_scan import ByteTable, scan_records, scan_submissions
from vlnkit.datasets.prediction_batches import submission_chunk
from vlnkit.datasets.reference_batches import reference_chunk

VOCAB = Vocabulary(["s1", "s2"], [["a", "bb", "c0ffee", "dup"], ["d", "e", "dup"]])  # "dup" numbers nowhere
IDS = ["a", "bb", "c0ffee", "dup", "d", "e", "zz", "unknown-id"]


def _utf8(block: bytes) -> bool:
    """The typed decoders are only given valid UTF-8 (the chunk readers check it first)."""
    try:
        block.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def expected_predictions(block: bytes):
    if not _utf8(block):
        return None
    lines = [line for line in block.split(b"\n") if line]
    chunk = submission_chunk(lines)
    if chunk is None:
        return None
    paths = Paths.from_flat(chunk.lengths, chunk.viewpoints, VOCAB)
    return chunk.path_id, chunk.k, paths


def expected_records(block: bytes):
    if not _utf8(block):
        return None
    lines = [line for line in block.split(b"\n") if line]
    chunk = reference_chunk(lines)
    if chunk is None:
        return None
    return (
        chunk.path_id,
        np.asarray(chunk.scans, dtype=str),
        chunk.instructions,
        Paths.from_flat(chunk.lengths, chunk.viewpoints, VOCAB),
    )


def same_paths(a: Paths, b: Paths) -> bool:
    return np.array_equal(a.offsets, b.offsets) and np.array_equal(a.values, b.values) and a.strings == b.strings


def check_predictions(block: bytes) -> bool:
    """Asserts agreement; returns whether the scanner accepted the block."""
    got, want = scan_submissions(block, VOCAB), expected_predictions(block)
    if got is None:
        return False
    assert want is not None, block
    assert np.array_equal(got.path_id, want[0]) and np.array_equal(got.k, want[1]), block
    assert same_paths(got.paths, want[2]), block
    return True


def check_records(block: bytes) -> bool:
    got, want = scan_records(block, VOCAB), expected_records(block)
    if got is None:
        return False
    assert want is not None, block
    assert np.array_equal(got.path_id, want[0]) and got.scans.tolist() == want[1].tolist(), block
    assert np.array_equal(got.instructions, want[2]) and same_paths(got.paths, want[3]), block
    return True


def test_byte_table():
    keys = [f"vp{i:05d}" for i in range(5000)]
    table = ByteTable.of(keys, range(5000))
    assert [table.get(k.encode()) for k in keys[::97]] == list(range(0, 5000, 97))
    assert table.get(b"vp5000") == -1 and table.get(b"") == -1 and table.get(b"vp0000") == -1


# ----------------------------------------------------------------------------- hand-made lines
ACCEPTED_PREDICTIONS = [
    b'{"instr_id": "7_0", "trajectory": [["a", 0.5, 0], ["bb", 1, -2e3]]}',
    b'{"trajectory":[["zz",1.5,-0.25]],"instr_id":"-3_12"}',  # key order, unknown viewpoint
    b'\t{ "instr_id" : "26" , "trajectory" : [ [ "dup" , 0 , 0 ] ] }  ',  # RxR id, spaces, tab
    b'{"instr_id": "1_0", "trajectory": [["a", 0, 0]], "extra": {"x": [1, 2.5e-3, "s\\u00e9", null, true]}}',
    b'{"instr_id": "9223372036854775807_1", "trajectory": [["e", -0.0, 1E+02]]}',  # 19 digits
    b'{"instr_id": "-9223372036854775808", "trajectory": [["e", 0, 0]]}',
]
REFUSED_PREDICTIONS = [
    b'{"instr_id": "7_0", "trajectory": []}',  # empty
    b'{"instr_id": "07_0", "trajectory": [["a", 0, 0]]}',  # not canonical
    b'{"instr_id": "9223372036854775808_0", "trajectory": [["a", 0, 0]]}',  # beyond 64 bits
    b'{"instr_id": 7, "trajectory": [["a", 0, 0]]}',  # an integer id (read by the general path)
    b'{"instr_id": "7_0", "trajectory": [["a", "0.5", 0]]}',  # angle as text
    b'{"instr_id": "7_0", "trajectory": [["a", 0]]}',  # two entries
    b'{"instr_id": "7_0", "trajectory": [["a", 0, 0, 0]]}',  # four
    b'{"instr_id": "7_0", "trajectory": [["", 0, 0]]}',  # empty viewpoint
    b'{"instr_id": "7_0", "trajectory": [["a", 01, 0]]}',  # not JSON
    b'{"instr_id": "7_0", "trajectory": [["a", 1e999, 0]]}',  # infinite
    b'{"instr_id": "7_0", "trajectory": [["a", NaN, 0]]}',
    b'{"instr_id": "7_0", "trajectory": [["a", true, 0]]}',
    b'{"instr_id": "7_0", "trajectory": [["a\\u0062", 0, 0]]}',  # an escape in an id: read the general way
    b'{"instr_id": "7_0", "instr_id": "8_0", "trajectory": [["a", 0, 0]]}',  # repeated key
    b'{"instr_id": "7_0"}',
    b'{"instr_id": "7_0", "trajectory": [["a", 0, 0]]} x',
    b'{"instr_id": "7_0", "trajectory": [["a", 0, 0]],}',
    b"   ",
    b"[1, 2]",
    b'{"instr_id": "7_0", "trajectory": [["a", 0, 0]], "x": [1, }',
]


@pytest.mark.parametrize("line", ACCEPTED_PREDICTIONS)
def test_prediction_lines_the_scanner_reads(line):
    assert check_predictions(line + b"\n")


@pytest.mark.parametrize("line", REFUSED_PREDICTIONS)
def test_prediction_lines_left_to_the_general_reader(line):
    good = ACCEPTED_PREDICTIONS[0]
    assert scan_submissions(good + b"\n" + line + b"\n" + good + b"\n", VOCAB) is None


def test_blank_lines_take_no_index_and_unknown_ids_keep_their_strings():
    block = b"\n" + ACCEPTED_PREDICTIONS[1] + b"\n\n" + ACCEPTED_PREDICTIONS[0]  # no final newline
    got = scan_submissions(block, VOCAB)
    assert got.path_id.tolist() == [-3, 7] and got.paths.strings == {0: ["zz"]}
    assert check_predictions(block)


RECORD = {"distance": 9.5, "scan": "s1", "path_id": 12, "path": ["a", "bb"], "heading": 1.5, "instructions": ["Go."]}
ACCEPTED_RECORDS = [
    json.dumps(RECORD).encode(),
    json.dumps({**RECORD, "instructions": ['Walk \u201cforward\u201d \\ "now"\n', ""]}).encode(),  # escapes
    json.dumps({**RECORD, "instructions": ["Tourne à droite, 走"]}, ensure_ascii=False).encode(),  # UTF-8
    json.dumps({**RECORD, "scan": "s9", "path": ["zz", "a"], "chain": [[1, 2], {"a": None}]}).encode(),
    b'{"scan":"s2","path_id":-5,"path":["d"],"heading":0,"instructions":["x"]}',  # no distance
]
REFUSED_RECORDS = [
    json.dumps({**RECORD, "path": []}).encode(),
    json.dumps({**RECORD, "instructions": []}).encode(),
    json.dumps({**RECORD, "scan": ""}).encode(),
    json.dumps({**RECORD, "path_id": 1.0}).encode(),
    json.dumps({**RECORD, "path_id": 2**63}).encode(),
    json.dumps({**RECORD, "distance": -1.0}).encode(),
    json.dumps({**RECORD, "distance": None}).encode(),
    json.dumps({**RECORD, "heading": "1"}).encode(),
    json.dumps({k: v for k, v in RECORD.items() if k != "heading"}).encode(),
    json.dumps({**RECORD, "instructions": ["\ud800"]}).encode(),  # a lone surrogate escape
    b'{"scan":"s1","path_id":1,"path":["a"],"heading":0,"instructions":["x"],"scan":"s2"}',
]


@pytest.mark.parametrize("line", ACCEPTED_RECORDS)
def test_record_lines_the_scanner_reads(line):
    assert check_records(line + b"\n")


@pytest.mark.parametrize("line", REFUSED_RECORDS)
def test_record_lines_left_to_the_general_reader(line):
    good = ACCEPTED_RECORDS[0]
    assert scan_records(good + b"\n" + line + b"\n", VOCAB) is None


def test_invalid_utf8_is_left_to_the_general_reader():
    line = json.dumps({**RECORD, "instructions": ["x"]}).encode().replace(b'"x"', b'"\xff"')
    assert scan_records(line + b"\n", VOCAB) is None
    line = json.dumps({**RECORD, "instructions": ["x"]}).encode().replace(b'"x"', b'"\xed\xa0\x80"')  # surrogate
    assert scan_records(line + b"\n", VOCAB) is None


def test_a_large_block_is_scanned_on_threads_with_the_same_result(monkeypatch):
    import vlnkit.datasets.line_scan as line_scan
    import vlnkit.parallel as parallel

    rng = np.random.default_rng(1)
    lines = [
        json.dumps({"instr_id": f"{i}_{i % 3}", "trajectory": [[IDS[v], 0.25, 0] for v in rng.integers(0, 8, 4)]})
        for i in range(3000)
    ]
    block = ("\n".join(lines) + "\n").encode()
    one = scan_submissions(block, VOCAB)
    monkeypatch.setattr(line_scan, "PARALLEL_BYTES", 4096)
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert len(line_scan._pieces(np.frombuffer(block, np.uint8))) == 3
    many = scan_submissions(block, VOCAB)
    assert np.array_equal(one.path_id, many.path_id) and same_paths(one.paths, many.paths)
    assert check_predictions(block)


# ----------------------------------------------------------------------------- generated lines
def _sometimes(valid, odd):
    """Mostly `valid`, now and then `odd` (so that about half of the generated lines are accepted)."""
    return st.integers(0, 9).flatmap(lambda i: odd if i == 7 else valid)  # not 0 or 9: hypothesis favours the ends


def _number():
    ints = st.one_of(st.integers(-1000, 1000), st.integers(-(10**25), 10**25)).map(str)
    floats = st.one_of(st.floats(-10.0, 10.0), st.floats(allow_nan=False, allow_infinity=False)).map(repr)
    odd = st.sampled_from(["-0", "0.0", "1e5", "1E-05", "2.5e+300", "1e999", "01", "1.", ".5", "-", "1e", "+1",
                           "NaN", "Infinity", "0x1", "1_0", "00", "-0.0e-0", "123456789012345678901"])  # fmt: skip
    return _sometimes(_sometimes(st.one_of(ints, floats), odd), st.one_of(ints, floats))


def _ws():
    return st.sampled_from(["", " ", "  ", "\t", " \t "])


def _id_text():
    num = _sometimes(st.integers(-(10**6), 10**6), st.integers(-(2**63) - 5, 2**63 + 5)).map(str)
    part = _sometimes(num, st.sampled_from(["0", "00", "007", "", "-0", "x"]))
    return _sometimes(
        st.one_of(st.tuples(part, st.integers(0, 99).map(str)).map("_".join), part),
        st.one_of(
            st.tuples(part, st.integers(-2, 2**63 + 2).map(str)).map("_".join),
            st.text(alphabet="0123456789_-x", max_size=12),
        ),
    )


@st.composite
def prediction_line(draw) -> bytes:
    w = draw(_ws())
    viewpoint = _sometimes(st.sampled_from(IDS), st.just(""))
    steps = draw(_sometimes(st.lists(st.tuples(viewpoint, _number(), _number()), min_size=1, max_size=5), st.just([])))
    traj = "[" + ",".join(f'{w}["{v}",{w}{a}{w},{b}]' for v, a, b in steps) + "]"
    members = [f'"instr_id"{w}:{w}"{draw(_id_text())}"', f'"trajectory":{w}{traj}']
    if draw(st.integers(0, 3)) == 0:
        members.append(draw(st.sampled_from(['"x": 1', '"x": [{"a": "b"}]', '"x": "\\n"', '"trajectory": []'])))
    order = draw(st.permutations(members))
    line = w + "{" + f",{w}".join(order) + "}" + draw(_ws())
    return line.encode()


def _mutate(draw, line: bytes) -> bytes:
    """A broken variant of a line: a byte deleted, changed or inserted (from JSON's own characters)."""
    if not line or draw(st.integers(0, 2)) > 0:
        return line
    at = draw(st.integers(0, len(line) - 1))
    byte = draw(st.sampled_from(b'"{}[],:0-.e\\ aZ\t\x00\xc3\xff'))
    how = draw(st.sampled_from(["delete", "replace", "insert"]))
    if how == "delete":
        return line[:at] + line[at + 1 :]
    if how == "replace":
        return line[:at] + bytes([byte]) + line[at + 1 :]
    return line[:at] + bytes([byte]) + line[at:]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_prediction_blocks_scan_as_the_typed_decoder_reads_them(data):
    lines = [_mutate(data.draw, data.draw(prediction_line())) for _ in range(data.draw(st.integers(1, 4)))]
    for line in lines:
        check_predictions(line + b"\n")
    check_predictions(b"\n".join(lines) + b"\n")


@st.composite
def record_line(draw) -> bytes:
    w = draw(_ws())
    number = _sometimes(st.one_of(st.floats(-1e6, 1e6), st.integers(-(10**20), 10**20)), st.sampled_from(["1", None]))
    record = {
        "scan": draw(_sometimes(st.sampled_from(["s1", "s2", "s9"]), st.just(""))),
        "path_id": draw(
            _sometimes(st.integers(-(2**63) - 2, 2**63 + 2), st.sampled_from([1.0, "1", None, 2**64, -(2**64)]))
        ),
        "path": draw(_sometimes(st.lists(st.sampled_from(IDS), min_size=1, max_size=4), st.just(["a", ""]))),
        "heading": draw(number),
        "instructions": draw(_sometimes(st.lists(st.text(max_size=8), min_size=1, max_size=3), st.just([]))),
    }
    if draw(st.booleans()):
        record["distance"] = draw(_sometimes(st.floats(0, 1e6), st.sampled_from([-0.0, -1, None, float("inf")])))
    if draw(st.integers(0, 3)) == 0:
        record["chain"] = draw(st.sampled_from([[1, [2, {"a": "b"}]], {}, [], "x\\y"]))
    keys = draw(st.permutations(list(record)))
    ascii_only = draw(st.booleans())
    text = "{" + f",{w}".join(f'"{k}":{w}{json.dumps(record[k], ensure_ascii=ascii_only)}' for k in keys) + "}"
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_record_blocks_scan_as_the_typed_decoder_reads_them(data):
    lines = [_mutate(data.draw, data.draw(record_line())) for _ in range(data.draw(st.integers(1, 3)))]
    for line in lines:
        check_records(line + b"\n")
    check_records(b"\n".join(lines) + b"\n")


def test_the_scanners_read_the_usual_files_whole(shared_data):
    """Real and benchmark-style lines are read by the scanners, not left to the general reader."""
    from benchmarks.make_scale_data import make

    records = json.load(open(shared_data / "r2r" / "R2R_val_unseen.json"))
    vocab = Vocabulary.load(str(shared_data / "connectivity"))
    block = b"\n".join(json.dumps(r).encode() for r in records) + b"\n"
    got = scan_records(block, vocab)
    assert got is not None and len(got) == len(records) and not got.paths.strings
    assert got.instructions.sum() == 2349
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        preds, _ = make(tmp, 3000, str(shared_data))
        got = scan_submissions(open(preds, "rb").read(), vocab)
    assert got is not None and len(got) == 3000 and not got.paths.strings
