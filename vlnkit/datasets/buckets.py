"""Buckets: how the score job (and the report's path dedupe) spreads work by path_id, and how many it uses.

A batch is split by a stable bucket of each row's path_id (`split_by_bucket`), so the predictions and the
reference path of one episode meet in one group of the shuffle on whichever worker; the number of buckets
(`bucket_count`) is set by the input size, so a bucket holds about BUCKET_BYTES of input however large the
whole is, and a scan with millions of episodes is spread over all buckets instead of being one hot key.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from vlnkit.hashing import stable_hash_array
from vlnkit.io import fileio


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
    """(bucket, the batch's rows of that bucket) for each bucket the batch touches, rows in batch order.

    The batch is gathered once in bucket order (a stable radix sort of the small bucket numbers) and each
    bucket's part is a slice of it, not a gather of its own.
    """
    if len(batch) == 0:
        return
    b = bucket_of(batch.path_id, buckets).astype(np.int16 if buckets <= 1 << 15 else np.int32)
    order = np.argsort(b, kind="stable")
    ordered = batch.take(order)
    cuts = [0, *(np.flatnonzero(np.diff(b[order])) + 1).tolist(), len(order)]
    for start, stop in zip(cuts[:-1], cuts[1:]):
        yield int(b[order[start]]), ordered.slice(start, stop)


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
