"""Rows of a ragged array (offsets and flat values, as `vlnkit.datasets.columns.Paths` holds paths) gathered
in a given order, compiled.

Why compiled: in numpy the gather needs three temporaries as long as the values (each value's source
start repeated per row, a running index, their sum) before the gather itself; for a batch of 131,072
paths that is 38 ms, most of it writing and paging in those temporaries, against 7 ms for one pass
that copies each row's values in place (`split_by_bucket` gathers every batch the score job reads,
and the join every bucket it scores).

    >>> import numpy as np
    >>> offsets, values = gather_rows(np.array([0, 2, 3, 6]), np.array([1, 2, 3, 4, 5, 6], np.int32), np.array([2, 0]))
    >>> offsets.tolist(), values.tolist()
    ([0, 3, 5], [4, 5, 6, 1, 2])
"""

from __future__ import annotations

import numpy as np

from vlnkit.compiled import njit

__all__ = ["gather_rows"]


@njit(cache=True, nogil=True)
def _gather(offsets, values, rows, out_offsets, out_values):
    at = 0
    for i in range(len(rows)):
        r = rows[i]
        for j in range(offsets[r], offsets[r + 1]):
            out_values[at] = values[j]
            at += 1
        out_offsets[i + 1] = at


def gather_rows(offsets: np.ndarray, values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values) of rows `rows` (int64 row numbers, any order, repeats allowed) of the ragged array."""
    rows = np.asarray(rows, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = offsets[1:][rows] - offsets[:-1][rows]
    out_offsets = np.zeros(len(rows) + 1, np.int64)
    out_values = np.empty(int(lengths.sum()), values.dtype)
    _gather(offsets, values, rows, out_offsets, out_values)
    return out_offsets, out_values
