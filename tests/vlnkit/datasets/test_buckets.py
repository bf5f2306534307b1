"""Shuffle buckets: their number follows the input size; each path_id has one stable bucket."""

import gzip

import numpy as np

from tests.vlnkit.datasets.chunk_streams import VOCAB
from vlnkit.datasets.buckets import (
    BUCKET_BYTES,
    COMPRESSION_FACTOR,
    MAX_BUCKETS,
    bucket_count,
    bucket_of,
    split_by_bucket,
)
from vlnkit.datasets.columns import Paths, PredictionBatch


def test_buckets_are_stable_and_split_batches_without_losing_rows():
    pid = np.arange(-50, 1000, dtype=np.int64)
    b = bucket_of(pid, 7)
    assert b.min() >= 0 and b.max() < 7 and (bucket_of(pid, 7) == b).all()
    assert len(np.unique(b)) == 7  # spread over every bucket
    paths = Paths.from_lists([["a"] * (1 + i % 4) + ["zz"] * (i % 2) for i in range(len(pid))], VOCAB)
    batch = PredictionBatch("a", np.zeros(len(pid), np.int64), np.arange(len(pid)), pid, pid % 3, paths)
    parts = list(split_by_bucket(batch, 7))
    assert sorted(x for _, part in parts for x in part.index.tolist()) == list(range(len(pid)))
    for bucket, part in parts:
        assert (bucket_of(part.path_id, 7) == bucket).all()
        for r in range(len(part)):
            assert part.paths.viewpoints(r, VOCAB) == paths.viewpoints(int(part.index[r]), VOCAB)
    joined = PredictionBatch.concat("a", [part for _, part in parts])
    assert len(joined) == len(pid) and len(joined.paths.strings) == len(paths.strings)


def test_bucket_count_is_one_bucket_per_bucket_bytes_of_input(tmp_path):
    plain, packed = tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz"
    plain.write_bytes(b"x" * 5000)
    packed.write_bytes(gzip.compress(b"y" * 10))
    size = packed.stat().st_size
    assert bucket_count([]) == 1 and bucket_count([str(plain)]) == 1
    assert bucket_count([str(plain)], bucket_bytes=3000) == 2  # ceil(5000 / 3000)
    assert bucket_count([str(packed)], bucket_bytes=size) == COMPRESSION_FACTOR  # a .gz counts 5 times its size
    assert bucket_count([str(plain), str(packed)], bucket_bytes=1) == MAX_BUCKETS  # 5000 + 5 x size > 4096
    assert BUCKET_BYTES == 16 << 20
