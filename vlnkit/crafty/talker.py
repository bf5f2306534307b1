"""Crafty's Talker: the high-level templates of appendix B.4 over the Observer's fixations.

Steps that fixate the same object are one group (google-research/crafty `talk.py`,
`group_observation_steps`); every group but the last is said with a single-step template (start, intra
for a turn in place, inter for a step) or, for several steps, the multi-step template whose moves are
collapsed (consecutive equal directions said once, joined by "and") and whose object clause depends on
where the object ends up; the last group gets an end-of-path template. Each template and phrase is chosen
by the caller's seeded `numpy.random.Generator`, so a path's instruction is the same on every runner.

A path along which no object is seen (no landmark to name) gets the fallback: its collapsed moves and a
stop command (`fallback`), counted by the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

import numpy as np

from vlnkit.crafty.phrases import MOVES, ORIENTATIONS, object_phrase
from vlnkit.crafty.wheel import Direction

START = (
    "you should see a {obj} {orient}.",
    "you are near a {obj}, {orient}.",
    "{orient} there's a {obj}.",
    "there is a {obj} {orient}.",
    "there is a {obj} when you look {orient}.",
    "a {obj} is {orient}.",
)
INTRA = (
    "{move}. you should see a {obj} {orient}.",
    "{move}.",
    "{move}. a {obj} is {orient}.",
    "{move}. there is a {obj} {orient}.",
    "you'll see a {obj} {orient} as you {move}.",
)
INTER = (
    "{move}, with the {obj} {orient}.",
    "you'll see a {obj} {orient} as you {move}.",
    "a {obj} is {orient} as you {move}.",
    "{move}, going along to the {obj} {orient}.",
    "{move}. a {obj} is {orient}.",
)
END = (
    "{move} and stop by the {obj}.",
    "{move}. stop when you get near the {obj}.",
    "{move}. wait next to the {obj}.",
    "{move}, then wait by the {obj}.",
    "{move} to the {obj} and stop there.",
    "{move} to the {obj}. you're done.",
)
START_CONTINUE = "{move}, so that it is {orient}."


@dataclass(frozen=True)
class Step:
    """One motion as the Talker sees it: how one moved, where the fixated object is, which object."""

    move: Direction
    inter: bool  # a step between viewpoints (else a turn in place)
    object_direction: Direction
    category: str
    landmark: int  # the object's id (the `.house` / REVERIE objId)


class Talker:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def pick(self, options: tuple[str, ...]) -> str:
        return options[int(self.rng.integers(len(options)))]

    def move(self, d: Direction) -> str:
        return self.pick(MOVES[d])

    def orient(self, d: Direction) -> str:
        return self.pick(ORIENTATIONS[d])

    def phrases(self, step: Step) -> dict:
        # movement, object, orientation are drawn in this order for every template, as BasePhrases does
        return {
            "move": self.move(step.move),
            "obj": object_phrase(step.category),
            "orient": self.orient(step.object_direction),
        }

    def single(self, step: Step) -> str:
        words = self.phrases(step)
        if step.move == Direction.STOP:
            return self.pick(START).format(**words)
        return self.pick(INTER if step.inter else INTRA).format(**words)

    def multi(self, group: list[Step]) -> str:
        if group[0].move == Direction.STOP:
            first = self.single(group[0])
            words = self.phrases(group[1])
            return f"{first} {START_CONTINUE.format(**words)}"
        moves = " and ".join(self.move(d) for d, _ in groupby(s.move for s in group))
        last = group[-1]
        words = self.phrases(last)
        obj, orient = words["obj"], words["orient"]
        d = last.object_direction
        if d == Direction.STRAIGHT:
            clause = f"heading toward the {obj}"
        elif d == Direction.AROUND:
            clause = f"leaving the {obj} behind you"
        elif d in (Direction.SLIGHT_LEFT, Direction.SLIGHT_RIGHT):
            clause = f"approaching the {obj} {orient}"
        else:
            clause = f"passing the {obj} {orient}"
        return f"{moves}, {clause}."

    def end(self, group: list[Step]) -> str:
        return self.pick(END).format(**self.phrases(group[-1]))

    def sentences(self, steps: list[Step]) -> list[str]:
        groups = [list(g) for _, g in groupby(steps, key=lambda s: s.landmark)]
        out = [self.single(g[0]) if len(g) == 1 else self.multi(g) for g in groups[:-1]]
        out.append(self.end(groups[-1]))
        return out

    def fallback(self, moves: list[Direction]) -> list[str]:
        """No landmark anywhere on the path: the collapsed moves, then a stop command."""
        said = [d for d, _ in groupby(m for m in moves if m != Direction.STOP)]
        out = [f"{self.move(d)}." for d in said]
        out.append(f"{self.move(Direction.STOP)}.")
        return out


def groups_of(steps: list[Step]) -> list[list[Step]]:
    return [list(g) for _, g in groupby(steps, key=lambda s: s.landmark)]
