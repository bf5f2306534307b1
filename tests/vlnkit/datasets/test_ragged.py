"""The compiled ragged passes against plain Python over a list of lists, and `Paths.take` built on the gather."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.datasets.columns import Paths
from vlnkit.datasets.ragged import bits_along, gather_rows

ragged = st.lists(st.lists(st.integers(-5, 10_000), max_size=6), max_size=20)


@settings(deadline=None)  # the first example compiles the kernel when numba's cache is cold
@given(ragged, st.data())
def test_gather_rows_is_the_rows_in_the_given_order(rows, data):
    picks = data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=30)) if rows else []
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    values = np.array([v for r in rows for v in r], np.int32)
    got_offsets, got_values = gather_rows(offsets, values, np.array(picks, np.int64))
    want = [rows[p] for p in picks]
    assert got_values.dtype == np.int32
    assert [got_values[a:b].tolist() for a, b in zip(got_offsets[:-1], got_offsets[1:])] == want


def test_paths_take_keeps_the_rows_resolved_by_string():
    paths = Paths(np.array([0, 1, 3, 4]), np.array([7, -1, 8, 9], np.int32), {1: ["x", "y"]})
    taken = paths.take(np.array([1, 1, 2]))
    assert taken.offsets.tolist() == [0, 2, 4, 5] and taken.values.tolist() == [-1, 8, -1, 8, 9]
    assert taken.strings == {0: ["x", "y"], 1: ["x", "y"]}


@settings(deadline=None)
@given(st.lists(st.lists(st.integers(-3, 6), min_size=1, max_size=5), max_size=12), st.data())
def test_bits_along_looks_up_each_rows_last_value_and_any_value(rows, data):
    """A row's values offset by its base are lines of a bit table, its column the bit within a line."""
    stride, lines = data.draw(st.integers(1, 4)), 12
    table = data.draw(st.lists(st.booleans(), min_size=stride * lines, max_size=stride * lines))
    base = data.draw(st.lists(st.integers(-2, 5), min_size=len(rows), max_size=len(rows)))
    column = data.draw(st.lists(st.integers(-1, stride), min_size=len(rows), max_size=len(rows)))
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    values = np.array([v for r in rows for v in r], np.int32)
    bits = np.packbits(np.array(table, bool), bitorder="little")
    last, anywhere = bits_along(offsets, values, np.array(base), np.array(column), bits, stride)

    def bit(b, v, c):
        line = b + v if b >= 0 else -1
        return line >= 0 and 0 <= c < stride and table[line * stride + c]

    assert last.tolist() == [bit(b, r[-1], c) for r, b, c in zip(rows, base, column)]
    assert anywhere.tolist() == [any(bit(b, v, c) for v in r) for r, b, c in zip(rows, base, column)]
