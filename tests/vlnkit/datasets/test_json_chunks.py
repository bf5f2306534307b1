"""The chunked JSON reader (whole files and planned byte ranges) against the whole-file reader it replaces."""

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.datasets.json_chunks import exact_item, json_chunks, json_line_range, plan_line_ranges
from vlnkit.datasets.r2r import RecordError, json_items


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


class _Trickle(io.RawIOBase):
    """A stream that gives at most 7 bytes a read (`readinto`), as a pipe or a decompressor may."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def readable(self):
        return True

    def readinto(self, b):
        n = min(7, len(b), len(self.data) - self.pos)
        b[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


class _ReadOnly:
    """A stream with `read` only (no `readinto`)."""

    def __init__(self, data: bytes):
        self.f = io.BytesIO(data)

    def read(self, n=-1):
        return self.f.read(n)


@pytest.mark.parametrize("scan_bytes", [16, 64, 1 << 20])
@pytest.mark.parametrize("stream", [io.BytesIO, _Trickle, _ReadOnly])
def test_a_scanned_file_reads_into_one_buffer_and_gives_every_block_whole(monkeypatch, scan_bytes, stream):
    """The scanner's blocks (`_scanned_lines` filling one reused buffer) are whole lines of at most
    SCAN_BYTES (or more, when their first line is longer), in order, covering the file, whatever the
    stream gives per read;
    a block the scanner refuses is read the general way, and both ways give the file's items."""
    import vlnkit.datasets.json_chunks as json_chunks_module

    monkeypatch.setattr(json_chunks_module, "SCAN_BYTES", scan_bytes)
    lines = [json.dumps({"i": i, "text": "x" * (i % 50)}) for i in range(120)] + ['{"i": "odd"}']
    data = ("\n".join(lines) + "\n").encode()
    seen = []

    class Scanned(list):
        newlines = 0

    def scan(view):
        block = bytes(view)
        seen.append(block)
        if b"odd" in block:
            return None  # refused: the general reader takes the block
        got = Scanned(json.loads(line) for line in block.splitlines() if line.strip())
        got.newlines = block.count(b"\n")
        return got

    items = []
    for c in json_chunks(stream(data), "f", "records", chunk_bytes=5, scan=scan):
        assert not isinstance(c, RecordError)
        start, found, _ = c
        assert start == len(items)
        items += [dict(x) if isinstance(x, dict) else x for x in found]
    assert [x["i"] for x in items] == list(range(120)) + ["odd"]
    head_end = data.index(b"\n", 5) + 1  # the sniffed first line comes before the first fill
    assert b"".join(seen) == data and seen[0] == data[:head_end]
    assert all(b.endswith(b"\n") and (len(b) <= scan_bytes or b.index(b"\n") >= scan_bytes) for b in seen)
