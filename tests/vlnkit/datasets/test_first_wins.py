"""The first-record-wins rule against a plain Python statement of it: for each key, the record of the
lowest file rank, then the lowest index, is kept, and every other record of that key names it."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from vlnkit.datasets.first_wins import first_of_each

records = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 50)), max_size=40, unique_by=lambda r: (r[1], r[2])
)


@given(records)
def test_first_of_each_keeps_the_first_file_then_the_first_record(rows):
    keys = np.array([r[0] for r in rows], np.int64)
    rank = np.array([r[1] for r in rows], np.int64)
    index = np.array([r[2] for r in rows], np.int64)
    order, first, kept = first_of_each(keys, rank, index)
    winner = {}
    for row, (key, r, i) in enumerate(rows):
        if key not in winner or (r, i) < rows[winner[key]][1:]:
            winner[key] = row
    assert sorted(order.tolist()) == list(range(len(rows)))
    assert [(rows[o][0], rows[o][1], rows[o][2]) for o in order] == sorted(rows)
    assert {int(o) for o, f in zip(order, first) if f} == set(winner.values())
    assert all(int(k) == winner[rows[int(o)][0]] for o, k in zip(order, kept))
