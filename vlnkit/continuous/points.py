"""Many 3-D paths as two arrays: int64 offsets and (n, 3) float64 points, the columnar form every
continuous reader returns and every kernel takes.

Path p is `points[offsets[p]:offsets[p + 1]]`; a path may be empty (a record without positions is a
dead letter before it gets here, so in practice none is). In Arrow a path column is
`list<fixed_size_list<float64, 3>>` over the same buffers (`to_arrow`, `from_arrow`), so a score job
can carry paths in record batches without copying them point by point.

>>> paths = PointPaths.from_lists([[[0, 0, 0], [1, 0, 0]], [[2, 2, 2]]])
>>> len(paths), paths.lengths().tolist(), paths.path(1).tolist()
(2, [2, 1], [[2.0, 2.0, 2.0]])
>>> PointPaths.from_arrow(paths.to_arrow()).path(0).tolist()
[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np


@dataclass(frozen=True, eq=False)
class PointPaths:
    """Paths of 3-D points: path p is points[offsets[p]:offsets[p + 1]]."""

    offsets: np.ndarray  # int64 (n + 1,), offsets[0] == 0, non-decreasing
    points: np.ndarray  # float64 (offsets[-1], 3), C-contiguous

    def __post_init__(self) -> None:
        offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        points = np.ascontiguousarray(self.points, dtype=np.float64).reshape(-1, 3)
        if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(points):
            raise ValueError(f"offsets must start at 0 and end at the number of points ({len(points)})")
        if len(offsets) > 1 and np.any(np.diff(offsets) < 0):
            raise ValueError("offsets must not decrease")
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "points", points)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        """The number of points of every path."""
        return np.diff(self.offsets)

    def path(self, p: int) -> np.ndarray:
        return self.points[self.offsets[p] : self.offsets[p + 1]]

    @classmethod
    def from_lists(cls, paths) -> PointPaths:
        """Paths given as lists of [x, y, z] (numbers already checked by the caller)."""
        lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
        offsets = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        total = int(offsets[-1])
        flat = np.fromiter(chain.from_iterable(chain.from_iterable(paths)), dtype=np.float64, count=3 * total)
        return cls(offsets, flat.reshape(total, 3))

    @classmethod
    def from_arrow(cls, array) -> PointPaths:
        """From an Arrow `list<fixed_size_list<float64, 3>>` (or large_list) array or chunked array, without nulls."""
        import pyarrow as pa

        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if array.null_count:
            raise ValueError("a path column must not hold nulls")
        offsets = np.asarray(array.offsets, dtype=np.int64)
        values = array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        points = np.asarray(values.flatten(), dtype=np.float64).reshape(-1, 3)
        return cls(offsets - offsets[0], points)

    def to_arrow(self):
        """An Arrow `list<fixed_size_list<float64, 3>>` array over the same buffers."""
        import pyarrow as pa

        values = pa.FixedSizeListArray.from_arrays(pa.array(self.points.reshape(-1)), 3)
        if self.offsets[-1] >= 2**31:  # beyond 32-bit list offsets
            return pa.LargeListArray.from_arrays(pa.array(self.offsets), values)
        return pa.ListArray.from_arrays(pa.array(self.offsets.astype(np.int32)), values)

    def take(self, rows) -> PointPaths:
        """The paths at `rows` (an int array), in that order, gathered without a loop per path."""
        rows = np.asarray(rows, dtype=np.int64)
        starts = self.offsets[rows]
        lengths = self.offsets[rows + 1] - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        index = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        return PointPaths(offsets, self.points[index])

    def collapse_repeats(self) -> PointPaths:
        """The paths with consecutive repeated points dropped (VLN-CE's rule, see `kernels.collapse_repeats`)."""
        from vlnkit.continuous import kernels

        keep = np.empty(len(self.points), dtype=np.bool_)
        offsets = np.empty_like(self.offsets)
        kernels.collapse_repeats(self.points, self.offsets, keep, offsets)
        return PointPaths(offsets, self.points[keep])

    def firsts(self) -> np.ndarray:
        """The first point of every path ((n, 3); every path must be non-empty)."""
        return self.points[self.offsets[:-1]]

    def lasts(self) -> np.ndarray:
        """The last point of every path ((n, 3); every path must be non-empty)."""
        return self.points[self.offsets[1:] - 1]
