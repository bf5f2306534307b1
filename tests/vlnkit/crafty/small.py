"""A small hand-built scan for Crafty's tests: a corridor with a left turn, a flight of stairs, objects."""

from __future__ import annotations

import numpy as np

from vlnkit.crafty.appraiser import Appraiser
from vlnkit.crafty.objects import ScanObjects
from vlnkit.crafty.observer import Observer, ScanModel
from vlnkit.navigation.graph import NavGraph

#                    f (2, 8, 1.6): up the stairs from e, 45 degrees to the right
#                   /
#            e (0, 6, 0)
#            |
#            d (0, 4, 0)
#            |
#  i -- g -- c (0, 2, 0)      g (-2, 2, 0) and i (-4, 2, 0): a left turn at c when walking +y
#            |
#            a (0, 0, 0)                  h (9, 9, 0) is joined to nothing
VIEWPOINTS = ("a", "c", "d", "e", "f", "g", "h", "i")
POSITIONS = np.array(
    [[0, 0, 0], [0, 2, 0], [0, 4, 0], [0, 6, 0], [2, 8, 1.6], [-2, 2, 0], [9, 9, 0], [-4, 2, 0]], dtype=np.float64
)
EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [1, 5], [5, 7]])


def graph() -> NavGraph:
    return NavGraph("small", VIEWPOINTS, POSITIONS, EDGES)


# objects: a sofa by a, a lamp by c, a table by d and e, a piano upstairs, a clock between g and i;
# each viewpoint sees one object, so the Observer's choice is forced and the sentences can be worked by hand
OBJ_IDS = np.array([10, 11, 12, 13, 14])
CENTRES = np.array([[0.5, 1.0, 0.5], [-1.5, 2.5, 1.0], [0.5, 4.5, 0.5], [2.5, 8.5, 2.0], [-3.0, 3.0, 1.0]])
CATEGORIES = np.array(["sofa", "lamp", "table", "piano", "clock"], dtype=object)
MPCAT40 = np.array(["sofa", "lighting", "table", "furniture", "objects"], dtype=object)
VISIBLE = np.array(
    [
        [1, 0, 0, 0, 0],  # a
        [0, 1, 0, 0, 0],  # c
        [0, 0, 1, 0, 0],  # d
        [0, 0, 1, 0, 0],  # e
        [0, 0, 0, 1, 0],  # f
        [0, 0, 0, 0, 1],  # g
        [0, 0, 0, 0, 0],  # h
        [0, 0, 0, 0, 1],  # i
    ],
    dtype=bool,
)


def objects(visible=VISIBLE) -> ScanObjects:
    return ScanObjects("small", VIEWPOINTS, OBJ_IDS, CENTRES, CATEGORIES, MPCAT40, np.asarray(visible, dtype=bool))


def appraiser() -> Appraiser:
    return Appraiser({"sofa": 1.5, "lamp": 1.0, "table": 0.8, "piano": 3.0, "clock": 2.0}, documents=8)


def model(visible=VISIBLE) -> tuple[ScanModel, Observer]:
    obs = Observer(appraiser())
    return ScanModel.build(graph(), objects(visible), obs.params), obs
