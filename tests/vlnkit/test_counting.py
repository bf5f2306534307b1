"""`unique_ints` against `np.unique`: the counting pass and its fallback for a wide span (outliers)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.counting import unique_ints


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-300, 300), max_size=80),
    st.lists(st.sampled_from([-(2**62), -(10**9), 10**6, 2**62]), max_size=3),
)
def test_unique_ints_equal_numpy_unique(near, far):
    """The counting pass and its fallback give np.unique's values, inverse and counts, of the same dtypes
    (the report's fine bins, the bootstrap's cells)."""
    values = np.array(near + far, dtype=np.int64)
    got = unique_ints(values, return_inverse=True, return_counts=True)
    want = np.unique(values, return_inverse=True, return_counts=True)
    assert [a.tolist() for a in got] == [a.tolist() for a in want]
    assert [a.dtype for a in got] == [a.dtype for a in want]
    assert unique_ints(values).tolist() == np.unique(values).tolist()
