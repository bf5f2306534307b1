"""Columnar containers: viewpoint numbering, paths and bucketing."""

import numpy as np
import pytest

from tests.vlnkit.datasets.chunk_streams import VOCAB
from vlnkit.datasets.buckets import bucket_of, split_by_bucket
from vlnkit.datasets.columns import Paths, PredictionBatch, Vocabulary


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


def test_vocabulary_numbers_and_ambiguous_ids():
    v = Vocabulary(["s1", "s2"], [["a", "b"], ["b", "c"]])  # "b" in two scans: resolved by string
    assert v.numbers(["a", "b", "c", "x"]).tolist() == [0, -1, 3, -1]
    assert v.scan_of.tolist() == [0, 0, 1, 1] and v.local.tolist() == [0, 1, 0, 1]


@pytest.mark.real_data
def test_vocabulary_matches_the_graphs(connectivity_dir):
    from vlnkit.navigation.graph import GraphStore

    v = Vocabulary.load(str(connectivity_dir))
    store = GraphStore(str(connectivity_dir))
    assert len(v.scans) == 90
    for scan in v.scans[:5]:
        g = store.get(scan)
        nums = v.numbers(list(g.viewpoints))
        assert (v.scan_of[nums] == v.scan_ids[scan]).all() and v.local[nums].tolist() == list(range(len(g)))
