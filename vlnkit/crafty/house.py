"""Crafty's own object rule, read from a Matterport3D `.house` file: a panorama names the objects of its region.

Only two scans' `.house` files are public (valan's test data); they are the yardstick for the
visibility approximation `objects.py` uses everywhere else. The reader takes what the reference does
(valan `r2r/house_parser.py`, `R2RHouseParser.get_pano_objects`): the panorama's region from its `P`
line, every `O` object of that region whose category (`C` line -> `category_mapping.tsv` row) is usable
(`CategoryTable.usable`, the same filter as `objects.py`).

`.house` lines used (ASCII 1.1): `C index mapping_index mapping_name mpcat40_index mpcat40_name ...`,
`O index region_index category_index px py pz ...`, `P name pano_index region_index 0 px py pz ...`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.crafty.objects import CategoryTable, ObjectsError, raw_name
from vlnkit.io import fileio


@dataclass(frozen=True)
class House:
    """Panorama regions and usable objects of one `.house` file."""

    pano_region: dict[str, int]
    pano_centre: dict[str, tuple[float, float, float]]
    object_region: dict[int, int]
    object_centre: dict[int, tuple[float, float, float]]
    object_category: dict[int, str]  # clean category of each usable object

    def region_objects(self, pano: str) -> set[int]:
        """The usable objects of the panorama's region: Crafty's rule."""
        region = self.pano_region.get(pano)
        return {o for o, r in self.object_region.items() if r == region and o in self.object_category}


def read_house(path: str, categories: CategoryTable) -> House:
    # The category table is keyed by raw name; `.house` spells the same name with '#' for spaces.
    by_mapping_index = {}
    try:
        text = fileio.read_bytes(path).decode("utf-8", "replace")
    except OSError as exc:
        raise ObjectsError(f"{path}: cannot read .house file ({exc})") from exc
    cat_name: dict[int, str] = {}
    pano_region, pano_centre, obj_region, obj_centre, obj_raw = {}, {}, {}, {}, {}
    for n, line in enumerate(text.splitlines()):
        f = line.split()
        if not f:
            continue
        try:
            if f[0] == "C":
                cat_name[int(f[1])] = raw_name(f[3])
                by_mapping_index[int(f[2])] = raw_name(f[3])
            elif f[0] == "O":
                oid = int(f[1])
                obj_region[oid] = int(f[2])
                obj_centre[oid] = (float(f[4]), float(f[5]), float(f[6]))
                obj_raw[oid] = int(f[3])
            elif f[0] == "P":
                pano_region[f[1]] = int(f[3])
                pano_centre[f[1]] = (float(f[5]), float(f[6]), float(f[7]))
        except (IndexError, ValueError) as exc:
            raise ObjectsError(f"{path}: line {n + 1}: malformed {f[0]} line ({exc})") from exc
    object_category = {}
    for oid, c in obj_raw.items():
        name = cat_name.get(c)
        if name is not None and categories.usable(name):
            object_category[oid] = categories.clean[name]
    return House(pano_region, pano_centre, obj_region, obj_centre, object_category)


def overlap(region: set[int], approx: set[int]) -> tuple[int, int, int]:
    """(|both|, |region only|, |approximation only|) of two object sets of one panorama."""
    return len(region & approx), len(region - approx), len(approx - region)


def jaccard(counts: np.ndarray) -> float:
    """Pooled Jaccard index of summed (both, region only, approximation only) counts."""
    both, r, a = (float(x) for x in counts)
    return both / (both + r + a) if both + r + a else 1.0


def compare(house: House, objects) -> np.ndarray:
    """Summed (both, region only, approximation only) object counts over the panoramas of `objects`
    (a `ScanObjects` whose rows are the graph's viewpoints): how far the approximation is from the rule."""
    total = np.zeros(3, dtype=np.int64)
    for i, v in enumerate(objects.viewpoints):
        approx = set(objects.obj_ids[objects.visible[i]].tolist())
        total += overlap(house.region_objects(v), approx)
    return total
