"""Compiled passes over the rows of a ragged array (offsets and flat values, as `vlnkit.datasets.columns.Paths`
holds paths): rows gathered in a given order (`gather_rows`), and a bit table looked up along each row
(`bits_along`).

Why compiled: in numpy the gather needs three temporaries as long as the values (each value's source
start repeated per row, a running index, their sum) before the gather itself; for a batch of 131,072
paths that is 38 ms, most of it writing and paging in those temporaries, against 7 ms for one pass
that copies each row's values in place (`split_by_bucket` gathers every batch the score job reads,
and the join every bucket it scores).

    >>> import numpy as np
    >>> offsets, values = gather_rows(np.array([0, 2, 3, 6]), np.array([1, 2, 3, 4, 5, 6], np.int32), np.array([2, 0]))
    >>> offsets.tolist(), values.tolist()
    ([0, 3, 5], [4, 5, 6, 1, 2])

`bits_along` answers REVERIE's visibility (is the target seen from where the agent stops, from anywhere on
its way) in one pass over the trajectories' viewpoints: in numpy the same took five temporaries as long as
the viewpoints (each step's owner, its global number, its target, its bit's index, the bits), twice the time.
"""

from __future__ import annotations

import numpy as np

from vlnkit.compiled import njit

__all__ = ["bits_along", "gather_rows"]


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


@njit(cache=True, nogil=True)
def _bits_along(offsets, values, base, column, bits, stride, last, anywhere):
    for r in range(len(base)):
        last[r] = False
        anywhere[r] = False
        b, c = base[r], column[r]
        if b < 0 or c < 0 or c >= stride:
            continue
        for j in range(offsets[r], offsets[r + 1]):
            v = b + values[j]
            if v >= 0:
                at = v * stride + c
                if (bits[at >> 3] >> (at & 7)) & 1:
                    anywhere[r] = True
                    break
        v = b + values[offsets[r + 1] - 1]
        if v >= 0:
            at = v * stride + c
            last[r] = (bits[at >> 3] >> (at & 7)) & 1 == 1


def bits_along(
    offsets: np.ndarray, values: np.ndarray, base: np.ndarray, column: np.ndarray, bits: np.ndarray, stride: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per row r (non-empty), whether bit (base[r] + v) * stride + column[r] of the table `bits` (np.packbits,
    little bit order, `stride` bits a line) is set for the row's last value v, and for any of its values; a
    line below 0 (base[r] < 0, or base[r] + v < 0) or a column outside [0, stride) has no bit set.

    >>> bits = np.packbits(np.array([0, 1, 0, 0, 1, 0], bool), bitorder="little")  # 3 lines of 2 bits
    >>> offsets, values = np.array([0, 2, 3]), np.array([0, 1, 2])  # rows [0, 1] and [2]
    >>> last, anywhere = bits_along(offsets, values, np.array([0, 0]), np.array([1, 1]), bits, 2)
    >>> last.tolist(), anywhere.tolist()
    ([False, False], [True, False])
    """
    n = len(base)
    last, anywhere = np.empty(n, np.bool_), np.empty(n, np.bool_)
    _bits_along(
        np.asarray(offsets, np.int64),
        values,
        np.asarray(base, np.int64),
        np.asarray(column, np.int64),
        bits,
        np.int64(stride),
        last,
        anywhere,
    )
    return last, anywhere
