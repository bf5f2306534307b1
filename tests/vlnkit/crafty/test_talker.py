"""The Talker's templates, worked by hand: every possible output of a step is enumerated from B.4's sets."""

import itertools
import re

import numpy as np
import pytest

from vlnkit.crafty.phrases import MOVES, ORIENTATIONS
from vlnkit.crafty.talker import END, INTER, INTRA, START, Step, Talker
from vlnkit.crafty.wheel import Direction

D = Direction


def outputs(templates, move, obj, orient):
    return {
        t.format(move=m, obj=obj, orient=o)
        for t, m, o in itertools.product(templates, MOVES[move], ORIENTATIONS[orient])
    }


def talker(seed=0):
    return Talker(np.random.default_rng(seed))


def test_phrase_sets_are_the_appendix_sets():
    assert len(MOVES[D.LEFT]) == 7 and "make a left" in MOVES[D.LEFT]
    assert set(MOVES[D.SLIGHT_RIGHT]) == {"bear right", "curve right", "go slightly right"}
    assert len(MOVES[D.STRAIGHT]) == 12 and "proceed forward" in MOVES[D.STRAIGHT]
    assert len(MOVES[D.UP]) == 24 and "walk up the staircase" in MOVES[D.UP]
    assert MOVES[D.AROUND] == ("turn around",)
    assert set(MOVES[D.STOP]) == {"stop there", "stop", "end", "wait"}
    assert set(ORIENTATIONS[D.LEFT]) == {"to your left", "to the left", "on your left", "on the left", "left of you"}
    assert len(ORIENTATIONS[D.SLIGHT_LEFT]) == 20 and "a bit to your left" in ORIENTATIONS[D.SLIGHT_LEFT]
    assert set(ORIENTATIONS[D.DOWN]) == {"below you", "at your feet"}


@pytest.mark.parametrize("seed", range(20))
def test_single_step_templates(seed):
    t = talker(seed)
    start = Step(D.STOP, False, D.RIGHT, "sofa", 1)
    assert t.single(start) in outputs(START, D.STOP, "sofa", D.RIGHT)
    turn = Step(D.LEFT, False, D.STRAIGHT, "lamp", 2)
    assert t.single(turn) in outputs(INTRA, D.LEFT, "lamp", D.STRAIGHT)
    step = Step(D.UP, True, D.SLIGHT_LEFT, "kitchen_island", 3)
    assert t.single(step) in outputs(INTER, D.UP, "kitchen island", D.SLIGHT_LEFT)
    assert t.end([step]) in outputs(END, D.UP, "kitchen island", D.SLIGHT_LEFT)


@pytest.mark.parametrize("seed", range(10))
def test_repeated_moves_collapse(seed):
    # straight, straight, straight, left, left with one object: two move phrases, then the object clause
    group = [Step(d, i % 2 == 1, D.LEFT, "table", 7) for i, d in enumerate([D.STRAIGHT] * 3 + [D.LEFT] * 2)]
    text = talker(seed).multi(group)
    moves, clause = text.split(", ", 1)
    first, second = moves.split(" and ")
    assert first in MOVES[D.STRAIGHT] and second in MOVES[D.LEFT]
    assert re.fullmatch(r"passing the table (.+)\.", clause).group(1) in ORIENTATIONS[D.LEFT]


@pytest.mark.parametrize(
    "where, clause",
    [(D.STRAIGHT, "heading toward the bed."), (D.AROUND, "leaving the bed behind you.")],
)
def test_object_clause_by_final_direction(where, clause):
    group = [Step(D.STRAIGHT, True, D.RIGHT, "bed", 1), Step(D.STRAIGHT, False, where, "bed", 1)]
    assert talker().multi(group).endswith(", " + clause)
    slight = [Step(D.STRAIGHT, True, D.SLIGHT_RIGHT, "bed", 1)] * 2
    assert ", approaching the bed " in talker().multi(slight)


def test_start_group_continues():
    group = [Step(D.STOP, False, D.AROUND, "piano", 4), Step(D.RIGHT, False, D.LEFT, "piano", 4)]
    first, second = talker(3).multi(group).split(". ", 1)
    assert first + "." in outputs(START, D.STOP, "piano", D.AROUND)
    m = re.fullmatch(r"(.+), so that it is (.+)\.", second)
    assert m.group(1) in MOVES[D.RIGHT] and m.group(2) in ORIENTATIONS[D.LEFT]


def test_sentences_group_by_landmark_and_end():
    steps = [
        Step(D.STOP, False, D.STRAIGHT, "sofa", 1),
        Step(D.STRAIGHT, False, D.STRAIGHT, "sofa", 1),
        Step(D.STRAIGHT, True, D.LEFT, "lamp", 2),
        Step(D.LEFT, False, D.STRAIGHT, "table", 3),
        Step(D.STRAIGHT, True, D.STRAIGHT, "table", 3),
    ]
    out = talker(5).sentences(steps)
    assert len(out) == 3  # sofa group, lamp step, table group said as the end
    assert out[1] in outputs(INTER, D.STRAIGHT, "lamp", D.LEFT)
    assert out[2] in outputs(END, D.STRAIGHT, "table", D.STRAIGHT)


def test_fallback_collapses_and_stops():
    out = talker(1).fallback([D.STOP, D.STRAIGHT, D.STRAIGHT, D.LEFT, D.STRAIGHT])
    assert len(out) == 4
    assert out[0][:-1] in MOVES[D.STRAIGHT] and out[1][:-1] in MOVES[D.LEFT] and out[3][:-1] in MOVES[D.STOP]


def test_same_seed_same_words():
    steps = [Step(D.STOP, False, D.RIGHT, "sofa", 1), Step(D.RIGHT, True, D.LEFT, "lamp", 2)]
    assert talker(9).sentences(steps) == talker(9).sentences(steps)
    assert len({" ".join(talker(s).sentences(steps)) for s in range(30)}) > 5
