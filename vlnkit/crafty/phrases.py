"""Crafty's low-level phrases (appendix B.4): MOVE commands over the direction wheel, ORIENT phrases, OBJ.

The sets are the appendix's, cross-checked against google-research/crafty `talk.py` (the constants block
after "Basic action commands" and "Basic orientation phrases"). They are held as sorted tuples, so a
seeded choice picks the same phrase on every Python (the reference samples from frozensets, whose order
changes with the process's hash seed).
"""

from __future__ import annotations

from itertools import product

from vlnkit.crafty.wheel import Direction


def _sorted(items) -> tuple[str, ...]:
    return tuple(sorted(set(items)))


SLIGHT_TURN_VERBS = ("bear", "curve", "go slightly")
TURN_VERBS = ("face", "go", "head", "make a", "pivot", "turn", "walk")
MOVE_VERBS = ("continue", "go", "head", "proceed", "travel", "walk")
STRAIGHT_WORDS = ("forward", "straight")
UP_WORDS = ("up", "up the stairs", "up the staircase", "upstairs")
DOWN_WORDS = ("down", "down the stairs", "down the staircase", "downstairs")

MOVES: dict[Direction, tuple[str, ...]] = {
    Direction.SLIGHT_LEFT: _sorted(f"{v} left" for v in SLIGHT_TURN_VERBS),
    Direction.LEFT: _sorted(f"{v} left" for v in TURN_VERBS),
    Direction.SLIGHT_RIGHT: _sorted(f"{v} right" for v in SLIGHT_TURN_VERBS),
    Direction.RIGHT: _sorted(f"{v} right" for v in TURN_VERBS),
    Direction.STRAIGHT: _sorted(f"{v} {w}" for v, w in product(MOVE_VERBS, STRAIGHT_WORDS)),
    Direction.AROUND: ("turn around",),
    Direction.UP: _sorted(f"{v} {w}" for v, w in product(MOVE_VERBS, UP_WORDS)),
    Direction.DOWN: _sorted(f"{v} {w}" for v, w in product(MOVE_VERBS, DOWN_WORDS)),
    Direction.STOP: _sorted(["stop there", "stop", "end", "wait"]),
}

DIRECTION_PRE = ("on the", "on your", "to the", "to your")
DIRECTION_POST = ("of you",)
SLIGHT_MODIFIERS = ("a bit", "a little", "just", "slightly")


def _side(direction: str, slight: bool) -> tuple[str, ...]:
    base = [f"{p} {direction}" for p in DIRECTION_PRE] + [f"{direction} {p}" for p in DIRECTION_POST]
    return _sorted(f"{m} {b}" for m, b in product(SLIGHT_MODIFIERS, base)) if slight else _sorted(base)


ORIENTATIONS: dict[Direction, tuple[str, ...]] = {
    Direction.SLIGHT_LEFT: _side("left", True),
    Direction.LEFT: _side("left", False),
    Direction.SLIGHT_RIGHT: _side("right", True),
    Direction.RIGHT: _side("right", False),
    Direction.STRAIGHT: ("ahead of you", "in front of you"),
    Direction.AROUND: ("behind you", "in back of you"),
    Direction.UP: ("above you",),
    Direction.DOWN: ("at your feet", "below you"),
    Direction.STOP: ("here",),
}


def object_phrase(category: str) -> str:
    """OBJ: the clean category as words."""
    return category.replace("_", " ")
