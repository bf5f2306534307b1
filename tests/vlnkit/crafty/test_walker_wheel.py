"""The wheel's cuts and the Walker's motions, worked by hand on the small scan."""

import math

import numpy as np
import pytest

from tests.vlnkit.crafty.small import graph
from vlnkit.crafty.guide import motion_directions
from vlnkit.crafty.walker import WalkError, walk
from vlnkit.crafty.wheel import Direction, heading_change_type, heading_to, move_type

D = Direction


@pytest.mark.parametrize(
    "degrees, expected",
    [
        (0, D.STRAIGHT),
        (22.4, D.STRAIGHT),
        (22.6, D.SLIGHT_RIGHT),
        (67.4, D.SLIGHT_RIGHT),
        (67.6, D.RIGHT),
        (134.9, D.RIGHT),
        (135.1, D.AROUND),
        (180, D.AROUND),
        (224.9, D.AROUND),
        (225.1, D.LEFT),
        (292.4, D.LEFT),
        (292.6, D.SLIGHT_LEFT),
        (337.4, D.SLIGHT_LEFT),
        (337.6, D.STRAIGHT),
        (359.9, D.STRAIGHT),
        (-90, D.LEFT),
    ],
)
def test_wheel_cuts(degrees, expected):
    # a tenth of a degree either side of each cut (22.5, 67.5, 135, 225, 292.5, 337.5)
    assert heading_change_type(math.radians(degrees), 0.0) == expected
    # relative: the same change from any base heading
    assert heading_change_type(math.radians(degrees) + 1.0, 1.0) == expected


def test_stairs_beat_heading():
    up, down = math.radians(15), math.radians(-15)
    assert move_type(up, 2.0, 0.0) == D.UP
    assert move_type(down, 0.0, 0.0) == D.DOWN
    assert move_type(math.radians(14.9), 0.0, 0.0) == D.STRAIGHT


def test_heading_is_the_simulators():
    # +y is heading 0, +x is pi/2 (clockwise), -x is 3pi/2
    assert heading_to([0, 0, 0], [0, 1, 0]) == pytest.approx(0)
    assert heading_to([0, 0, 0], [1, 0, 0]) == pytest.approx(math.pi / 2)
    assert heading_to([0, 0, 0], [-1, 0, 0]) == pytest.approx(3 * math.pi / 2)
    # valan's convention for a zero displacement, which the reference's self-transitions see
    assert heading_to([1, 1, 1], [1, 1, 1]) == pytest.approx(math.pi / 2)


def test_left_turn_walk_by_hand():
    w = walk(graph(), ["a", "c", "g"], 0.0)
    assert w.steps == 5
    assert w.source.tolist() == [0, 0, 1, 1, 2]
    assert w.goal.tolist() == [0, 1, 1, 2, 2]
    np.testing.assert_allclose(w.enter, [0, 0, 3 * math.pi / 2])
    np.testing.assert_allclose(w.exit, [0, 3 * math.pi / 2, 3 * math.pi / 2])
    np.testing.assert_allclose(w.heading, [0, 0, 0, 3 * math.pi / 2, 3 * math.pi / 2])
    # turn in place at a (none), step to c, turn left at c, step to g
    assert [D(m) for m in motion_directions(w)] == [D.STOP, D.STRAIGHT, D.STRAIGHT, D.LEFT, D.STRAIGHT]


def test_initial_heading_turn():
    # facing +x (pi/2) at a, the path goes +y: a left turn in place first
    w = walk(graph(), ["a", "c"], math.pi / 2)
    assert [D(m) for m in motion_directions(w)] == [D.STOP, D.LEFT, D.STRAIGHT]


def test_stairs_walk_by_hand():
    w = walk(graph(), ["d", "e", "f"], 0.0)
    # e -> f rises 1.6 m over 2.83 m: pitch 29.5 degrees, UP; the turn at e is 45 degrees right: SLIGHT_RIGHT
    assert [D(m) for m in motion_directions(w)] == [D.STOP, D.STRAIGHT, D.STRAIGHT, D.SLIGHT_RIGHT, D.UP]


def test_disconnected_and_unknown():
    with pytest.raises(WalkError, match="not an edge"):
        walk(graph(), ["a", "h"], 0.0)
    with pytest.raises(WalkError, match="not an included viewpoint"):
        walk(graph(), ["a", "zz"], 0.0)
    with pytest.raises(WalkError, match="empty"):
        walk(graph(), [], 0.0)


def test_single_viewpoint_path():
    w = walk(graph(), ["a"], 1.0)
    assert w.steps == 1 and w.heading.tolist() == [1.0]
