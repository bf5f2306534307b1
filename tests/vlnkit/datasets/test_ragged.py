"""The compiled ragged gather against a plain Python list of lists, and `Paths.take` built on it."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.datasets.columns import Paths
from vlnkit.datasets.ragged import gather_rows

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
