"""Shuffle buckets: how many a shuffle uses, and which bucket each path_id goes to.

Jobs that must bring every record of one path together (deduplication, the score job's join of
predictions and references) shuffle by a stable bucket of the path_id rather than by the path_id
itself: a bucket is one key holding many paths, so a shuffle moves a few large groups, and the
number of buckets (`bucket_count`, from the size of the inputs) bounds what one group holds in
memory however large the inputs are.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from vlnkit.hashing import stable_hash_array
from vlnkit.io import fileio

BUCKET_BYTES = 16 << 20  # input bytes per shuffle bucket: bounds what one bucket holds in memory
MAX_BUCKETS = 4096
COMPRESSION_FACTOR = 5  # a .gz / .bz2 file counts as this many times its size


def bucket_count(files: list[str], bucket_bytes: int = BUCKET_BYTES) -> int:
    """How many buckets a shuffle of these inputs uses: one per `bucket_bytes` of input, 1..MAX_BUCKETS.

    Buckets bound memory: each holds about `bucket_bytes` of input, however large the whole is.

        bucket_count(["predictions.jsonl"])  # a 330 MB file -> 21
    """
    total = 0
    for path, size in fileio.match(files) if files else []:
        total += size * (COMPRESSION_FACTOR if path.endswith((".gz", ".bz2")) else 1)
    return max(1, min(MAX_BUCKETS, math.ceil(total / bucket_bytes)))


def bucket_of(path_id: np.ndarray, buckets: int) -> np.ndarray:
    """A stable bucket in [0, buckets) per path_id: `vlnkit.hashing.stable_bucket` of each id, in numpy.

    >>> bucket_of(np.array([0, 1, 2, 3]), 4).tolist()
    [0, 2, 1, 2]
    >>> from vlnkit.hashing import stable_bucket
    >>> [stable_bucket(i, buckets=4) for i in range(4)]
    [0, 2, 1, 2]
    """
    return (stable_hash_array(np.asarray(path_id)) % np.uint64(buckets)).astype(np.int64)


def split_by_bucket(batch, buckets: int) -> Iterator[tuple[int, object]]:
    """(bucket, the batch's rows of that bucket) for each bucket the batch touches."""
    if len(batch) == 0:
        return
    b = bucket_of(batch.path_id, buckets)
    order = np.argsort(b, kind="stable")
    cuts = np.flatnonzero(np.diff(b[order])) + 1
    for rows in np.split(order, cuts):
        yield int(b[rows[0]]), batch.take(rows)
