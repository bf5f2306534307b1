"""Columnar containers: viewpoint numbering and paths."""

import pytest

from vlnkit.datasets.columns import Vocabulary


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
