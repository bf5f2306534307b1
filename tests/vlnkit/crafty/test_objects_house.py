"""The public object data against Crafty's own `.house` input, on the two scans that have one."""

import numpy as np
import pytest

from vlnkit.crafty.house import compare, jaccard, read_house
from vlnkit.crafty.objects import CategoryTable, ObjectsError, load_scan_objects, read_objpos
from vlnkit.navigation import NavGraph

HOUSE_SCANS = ("GdvgFV5R1Z5", "YmJkqBEsHnH")


@pytest.fixture(scope="module")
def crafty_data(shared_data):
    d = shared_data / "crafty"
    return CategoryTable.read(str(d / "category_mapping.tsv")), read_objpos(str(d / "objpos.json")), d


def _scan(shared_data, crafty_data, scan, near):
    cats, objpos, d = crafty_data
    graph = NavGraph.load(str(shared_data / "connectivity"), scan)
    objs = load_scan_objects(
        scan, objpos, str(shared_data / "reverie" / "v1" / "BBox"), cats, graph.viewpoints, graph.positions, near
    )
    return objs, read_house(str(d / "house" / f"{scan}.house"), cats)


@pytest.mark.parametrize("scan", HOUSE_SCANS)
def test_house_centres_are_objpos_centres(shared_data, crafty_data, scan):
    _, objpos, _ = crafty_data
    _, house = _scan(shared_data, crafty_data, scan, 0)
    assert len(house.object_centre) in (99, 109)
    for oid, c in house.object_centre.items():
        np.testing.assert_allclose(c, objpos[scan][str(oid)], atol=1e-4)


@pytest.mark.parametrize("scan", HOUSE_SCANS)
def test_categories_agree_with_house(shared_data, crafty_data, scan):
    # REVERIE's names, mapped through the category table, give the .house file's clean category
    objs, house = _scan(shared_data, crafty_data, scan, 0)
    assert len(objs.obj_ids) > 10
    for oid, cat in zip(objs.obj_ids.tolist(), objs.categories.tolist()):
        assert house.object_category.get(oid) == cat, oid


# measured overlap with the region rule (pooled Jaccard over the scan's panoramas); docs/jobs/build_crafty.md
MEASURED = {
    ("GdvgFV5R1Z5", 0.0): 0.395,
    ("GdvgFV5R1Z5", 2.0): 0.431,
    ("GdvgFV5R1Z5", 3.0): 0.313,
    ("YmJkqBEsHnH", 0.0): 0.016,
    ("YmJkqBEsHnH", 2.0): 0.049,
    ("YmJkqBEsHnH", 3.0): 0.092,
}


@pytest.mark.parametrize("scan, near", sorted(MEASURED))
def test_region_rule_against_approximation(shared_data, crafty_data, scan, near):
    objs, house = _scan(shared_data, crafty_data, scan, near)
    counts = compare(house, objs)
    assert jaccard(counts) == pytest.approx(MEASURED[scan, near], abs=0.0015)
    if near == 0.0:
        assert counts[2] == 0  # REVERIE's visible objects all lie in the panorama's region


def test_scan_missing_from_objpos(shared_data, crafty_data):
    cats, _, _ = crafty_data
    with pytest.raises(ObjectsError, match="'nope' has no objects in objpos.json"):
        load_scan_objects("nope", {}, str(shared_data / "reverie" / "v1" / "BBox"), cats)
