"""The objects a Crafty guide can name: each scan's object centres, clean categories and per-viewpoint visibility.

Crafty (Zhao et al. 2021, appendix B) reads Matterport3D's `.house` files and takes, for a panorama, "the
objects of the panorama's region". Only two scans' `.house` files are public here (`house.py` reads them);
for every scan this module builds the same per-viewpoint object lists from public derived data:

- `objpos.json` (REVERIE v2): the 3D centre of every object, keyed by its `.house` index (`objId`);
- REVERIE's `BBox/<scan>_<viewpoint>.json`: which objects a viewpoint sees (non-empty `visible_pos`; the
  release lists objects within 3 m) and each object's raw category name;
- Matterport3D's `category_mapping.tsv`: raw name -> clean category (the part before '/', lower case, as
  valan's `house_parser._load_cat_map` takes it) and mpcat40 class.

The approximation of the region rule is "the objects REVERIE marks visible from the viewpoint, and every
object REVERIE names somewhere in the scan within 3 m of it" (`NEAR`, the radius of REVERIE's own lists). REVERIE names only the objects its
annotators could see within 3 m of some viewpoint (39 of 82 usable objects of GdvgFV5R1Z5, 21 of 95 of
YmJkqBEsHnH), so far objects of a large room are out of reach: `docs/jobs/build_crafty.md` gives the
measured overlap with the region rule on the two `.house` scans for several radii. Objects
are filtered as the reference reader filters them (valan `r2r/house_parser.py`, `_BANNED_MP40_CAT_INDEX =
{0, 40, 41}` and category names containing 'unknown'). A scan is loaded once into dense (viewpoint, object)
arrays, so everything downstream is array indexing.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field

import numpy as np

from vlnkit.io import fileio

BANNED_MPCAT40 = frozenset({0, 40, 41})  # void, misc, unlabeled: valan r2r/house_parser.py `_BANNED_MP40_CAT_INDEX`


class ObjectsError(ValueError):
    """A scan has no object data (missing from objpos.json) or an object file is malformed."""


@dataclass(frozen=True)
class CategoryTable:
    """Raw Matterport3D category name -> (clean category, mpcat40 index, mpcat40 name)."""

    clean: dict[str, str]
    mpcat40_index: dict[str, int]
    mpcat40_name: dict[str, str]

    @classmethod
    def read(cls, path: str) -> CategoryTable:
        text = fileio.read_bytes(path).decode("utf-8")
        clean, idx, name = {}, {}, {}
        for row in csv.DictReader(io.StringIO(text), delimiter="\t"):
            raw = row["raw_category"].strip().lower()
            clean[raw] = row["category"].split("/")[0].strip().lower()
            idx[raw] = int(row["mpcat40index"]) if row["mpcat40index"] else 0
            name[raw] = row["mpcat40"].strip().lower()
        return cls(clean, idx, name)

    def usable(self, raw: str) -> bool:
        """The reference reader's filter: a known category, not 'unknown', not void/misc/unlabeled."""
        raw = raw.lower()
        return raw in self.clean and "unknown" not in raw and self.mpcat40_index[raw] not in BANNED_MPCAT40


def raw_name(bbox_name: str) -> str:
    """REVERIE spells a raw category with '#' where Matterport3D has a space."""
    return bbox_name.replace("#", " ").strip().lower()


@dataclass(frozen=True, eq=False)
class ScanObjects:
    """One scan's nameable objects and what each viewpoint sees of them.

    `obj_ids` (K,) are `.house` indices; `centres` (K, 3); `categories` (K,) clean category names;
    `mpcat40` (K,) mpcat40 names; `visible` (V, K) booleans over the viewpoints named in `viewpoints`.
    """

    scan: str
    viewpoints: tuple[str, ...]
    obj_ids: np.ndarray
    centres: np.ndarray
    categories: np.ndarray
    mpcat40: np.ndarray
    visible: np.ndarray
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {v: i for i, v in enumerate(self.viewpoints)})

    def seen_from(self, viewpoint: str) -> np.ndarray:
        """Object positions (into the K arrays) visible from a viewpoint; empty for a viewpoint nothing names."""
        i = self.index.get(viewpoint)
        if i is None:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self.visible[i])

    def visible_for(self, viewpoints) -> np.ndarray:
        """(len(viewpoints), K) visibility rows in the given viewpoint order (all False where unknown)."""
        out = np.zeros((len(viewpoints), len(self.obj_ids)), dtype=bool)
        for r, v in enumerate(viewpoints):
            i = self.index.get(v)
            if i is not None:
                out[r] = self.visible[i]
        return out


def read_objpos(path: str) -> dict[str, dict[str, list[float]]]:
    try:
        data = json.loads(fileio.read_bytes(path))
    except (OSError, ValueError) as exc:
        raise ObjectsError(f"{path}: cannot read the object centres ({exc})") from exc
    if not isinstance(data, dict):
        raise ObjectsError(f"{path}: expected {{scan: {{objId: [x, y, z]}}}}")
    return data


def bbox_files(bbox_dir: str, scan: str) -> list[str]:
    """The REVERIE BBox files of one scan (`<scan>_<viewpoint>.json`), sorted."""
    if fileio.is_remote(bbox_dir):
        return sorted(p for p, _ in fileio.match(fileio.join(bbox_dir, f"{scan}_*.json")))
    try:
        names = os.listdir(bbox_dir)
    except OSError as exc:
        raise ObjectsError(f"{bbox_dir}: cannot list REVERIE BBox files ({exc})") from exc
    prefix = scan + "_"
    return [os.path.join(bbox_dir, n) for n in sorted(names) if n.startswith(prefix) and n.endswith(".json")]


def read_bbox(path: str) -> tuple[str, dict[int, tuple[str, bool]]]:
    """(viewpoint, {objId: (raw category, visible)}) of one BBox file."""
    try:
        data = json.loads(fileio.read_bytes(path))
        ((viewpoint, objects),) = data.items()
        out = {int(k): (raw_name(str(v.get("name", ""))), bool(v.get("visible_pos"))) for k, v in objects.items()}
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise ObjectsError(
            f"{path}: not a REVERIE BBox file {{viewpoint: {{objId: {{name, visible_pos}}}}}} ({exc})"
        ) from exc
    return viewpoint, out


NEAR = 3.0  # metres: REVERIE lists objects within 3 m of a viewpoint; a named object that near counts as seen


def load_scan_objects(
    scan: str,
    objpos: dict,
    bbox_dir: str,
    categories: CategoryTable,
    viewpoints: tuple[str, ...] | None = None,
    positions: np.ndarray | None = None,
    near: float = NEAR,
) -> ScanObjects:
    """Build a scan's `ScanObjects` from objpos (already parsed), its BBox files and the category table.

    `viewpoints` fixes the row order (a graph's viewpoints); by default the BBox files' viewpoints. With
    their `positions` (V, 3), an object named somewhere in the scan and within `near` metres of a
    viewpoint is seen from it too (0 turns that off). Raises ObjectsError naming the scan when objpos has
    no entry for it.
    """
    centres_by_id = objpos.get(scan)
    if not centres_by_id:
        raise ObjectsError(f"scan {scan!r} has no objects in objpos.json")
    names: dict[int, str] = {}
    seen: dict[str, set[int]] = {}
    for path in bbox_files(bbox_dir, scan):
        viewpoint, objects = read_bbox(path)
        for oid, (name, vis) in objects.items():
            names.setdefault(oid, name)
            if vis:
                seen.setdefault(viewpoint, set()).add(oid)
    keep = sorted(oid for oid, name in names.items() if str(oid) in centres_by_id and categories.usable(name))
    column = {oid: k for k, oid in enumerate(keep)}
    rows = tuple(viewpoints) if viewpoints is not None else tuple(sorted(seen))
    visible = np.zeros((len(rows), len(keep)), dtype=bool)
    for r, v in enumerate(rows):
        for oid in seen.get(v, ()):
            k = column.get(oid)
            if k is not None:
                visible[r, k] = True
    centres = np.asarray([centres_by_id[str(o)] for o in keep], dtype=np.float64).reshape(-1, 3)
    if positions is not None and near > 0 and len(keep):
        d = np.linalg.norm(np.asarray(positions, dtype=np.float64)[:, None, :] - centres[None, :, :], axis=-1)
        visible |= d < near
    return ScanObjects(
        scan=scan,
        viewpoints=rows,
        obj_ids=np.asarray(keep, dtype=np.int64),
        centres=centres,
        categories=np.asarray([categories.clean[names[o]] for o in keep], dtype=object),
        mpcat40=np.asarray([categories.mpcat40_name[names[o]] for o in keep], dtype=object),
        visible=visible,
    )


OBJPOS_FILE = "objpos.json"
CATEGORY_FILE = "category_mapping.tsv"


class ObjectSources:
    """Where a worker reads objects from: `objects_dir` (objpos.json, category_mapping.tsv) and REVERIE's
    BBox folder. The two tables are read once, on first use; each scan is built on demand."""

    def __init__(self, objects_dir: str, bbox_dir: str, near: float = NEAR):
        self.objects_dir, self.bbox_dir, self.near = objects_dir, bbox_dir, near
        self._objpos: dict | None = None
        self._categories: CategoryTable | None = None

    @property
    def objpos(self) -> dict:
        if self._objpos is None:
            self._objpos = read_objpos(fileio.join(self.objects_dir, OBJPOS_FILE))
        return self._objpos

    @property
    def categories(self) -> CategoryTable:
        if self._categories is None:
            path = fileio.join(self.objects_dir, CATEGORY_FILE)
            try:
                self._categories = CategoryTable.read(path)
            except (OSError, KeyError, ValueError) as exc:
                raise ObjectsError(f"{path}: cannot read Matterport3D's category table ({exc})") from exc
        return self._categories

    def scan(self, graph) -> ScanObjects:
        """The scan's objects with rows in the graph's viewpoint order; ObjectsError if objpos lacks it."""
        return load_scan_objects(
            graph.scan, self.objpos, self.bbox_dir, self.categories, graph.viewpoints, graph.positions, self.near
        )
