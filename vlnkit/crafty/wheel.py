"""The direction wheel of Crafty's Figure 4: a heading change -> one of six directions, plus UP and DOWN.

The wheel is cut at 22.5 and 67.5 degrees either side of straight ahead (pi/8 and 3pi/8), with LEFT
and RIGHT running to 135 degrees (6pi/8) and AROUND behind. A step whose pitch is at least 15 degrees
(pi/12) up or down is UP or DOWN whatever its heading. Boundaries follow the reference's if-chain
(google-research/crafty `mp3d.py`, `get_heading_change_type` and `get_direction_type`): an angle on a
cut belongs to the first class tested (STRAIGHT, SLIGHT_RIGHT, RIGHT, SLIGHT_LEFT, LEFT).

Headings are the simulator's (radians clockwise from +y); `heading_to` is valan's
`compute_heading_angle` (pi/2 - atan2(dy, dx)), which also gives a zero displacement pi/2, as the
reference's transitions see it for an object and itself.
"""

from __future__ import annotations

import enum
import math

import numpy as np

TWO_PI = 2.0 * math.pi
STAIRS_PITCH = math.pi / 12.0  # 15 degrees


class Direction(enum.IntEnum):
    STRAIGHT = 0
    SLIGHT_LEFT = 1
    LEFT = 2
    SLIGHT_RIGHT = 3
    RIGHT = 4
    AROUND = 5
    UP = 6
    DOWN = 7
    STOP = 8


def heading_change_type(goal, base) -> np.ndarray:
    """Direction of `goal` seen from `base` (radians, arrays or scalars), as int codes of `Direction`."""
    diff = np.mod(TWO_PI + np.asarray(goal, dtype=np.float64) - np.asarray(base, dtype=np.float64), TWO_PI)
    p8 = math.pi / 8.0
    conditions = [
        (diff <= p8) | (diff >= 15 * p8),
        (diff <= 3 * p8) & (diff >= p8),
        (diff <= 6 * p8) & (diff >= 3 * p8),
        (diff <= 15 * p8) & (diff >= 13 * p8),
        (diff <= 13 * p8) & (diff >= 10 * p8),
    ]
    choices = [Direction.STRAIGHT, Direction.SLIGHT_RIGHT, Direction.RIGHT, Direction.SLIGHT_LEFT, Direction.LEFT]
    return np.select(conditions, [int(c) for c in choices], default=int(Direction.AROUND))


def move_type(pitch, heading, previous_heading) -> np.ndarray:
    """Direction of a move: UP/DOWN by pitch, else the heading change from the previous heading."""
    pitch = np.asarray(pitch, dtype=np.float64)
    turn = heading_change_type(heading, previous_heading)
    return np.where(
        pitch >= STAIRS_PITCH, int(Direction.UP), np.where(pitch <= -STAIRS_PITCH, int(Direction.DOWN), turn)
    )


def heading_to(source, target) -> np.ndarray:
    """Heading from source to target points (..., 3), valan's formula: (pi/2 - atan2(dy, dx)) mod 2pi."""
    d = np.asarray(target, dtype=np.float64) - np.asarray(source, dtype=np.float64)
    return np.mod(0.5 * math.pi - np.arctan2(d[..., 1], d[..., 0]), TWO_PI)


def pitch_to(source, target) -> np.ndarray:
    """Elevation from source to target points (..., 3): atan2(dz, horizontal distance)."""
    d = np.asarray(target, dtype=np.float64) - np.asarray(source, dtype=np.float64)
    return np.arctan2(d[..., 2], np.hypot(d[..., 0], d[..., 1]))
