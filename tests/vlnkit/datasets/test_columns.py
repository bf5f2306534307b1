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


@pytest.mark.real_data
def test_vocabulary_reading_gives_the_general_parse_on_every_scan(connectivity_dir):
    """The typed two-field decoding keeps exactly the ids a whole parse keeps, on all 90 scans."""
    import glob

    import orjson

    from vlnkit.datasets.columns import _included_ids

    files = sorted(glob.glob(f"{connectivity_dir}/*_connectivity.json"))
    assert len(files) == 90
    for path in files:
        text = open(path, "rb").read()
        assert _included_ids(text) == [str(e["image_id"]) for e in orjson.loads(text) if bool(e["included"])]


@pytest.mark.parametrize(
    "text, ids",
    [
        (b'[{"image_id": "a", "included": true, "pose": [1]}, {"image_id": "b", "included": false}]', ["a"]),
        (b'[{"image_id": 7, "included": true}, {"image_id": "b", "included": 1}]', ["7", "b"]),  # loose types
        (b'[{"image_id": "a", "included": true, "height": NaN}]', ["a"]),  # json accepts NaN, msgspec does not
    ],
)
def test_vocabulary_reading_falls_back_to_the_general_parse(text, ids):
    from vlnkit.datasets.columns import _included_ids

    assert _included_ids(text) == ids


def test_vocabulary_reading_of_a_broken_file_raises():
    from vlnkit.datasets.columns import _included_ids

    with pytest.raises(ValueError):
        _included_ids(b'[{"image_id": "a", "included": tr')
    with pytest.raises(KeyError):
        _included_ids(b'[{"id": "a"}]')
