"""The Observer against its plain-loop oracle, and whole instructions on the small scan."""

import re

import numpy as np
import pytest

from tests.oracles.crafty_observer import decode_naive
from tests.vlnkit.crafty.small import CENTRES, POSITIONS, VISIBLE, model
from vlnkit.crafty.guide import Guide
from vlnkit.crafty.phrases import MOVES, ORIENTATIONS
from vlnkit.crafty.walker import WalkError, walk
from vlnkit.crafty.wheel import Direction

PATHS = [
    (["a", "c", "g"], 0.0),
    (["d", "e", "f"], 0.0),
    (["a", "c", "d", "e"], 2.0),
    (["i", "g", "c", "a"], 1.0),
    (["f"], 0.0),
    (["a", "c", "g", "i"], 5.0),
]
# every object within 4.5 m is seen: several states per viewpoint, so the HMM really chooses
RICH = np.linalg.norm(POSITIONS[:, None, :] - CENTRES[None, :, :], axis=-1) < 4.5


@pytest.mark.parametrize("path, heading", PATHS)
def test_vectorised_observer_matches_plain_loop_with_choices(path, heading):
    scan, observer = model(RICH)
    w = walk(scan.graph, path, heading)
    got = observer.decode(scan, w)
    assert got.tolist() == decode_naive(scan, w, observer.appraiser, observer.params)


@pytest.mark.parametrize("path, heading", PATHS)
def test_vectorised_observer_matches_plain_loop(path, heading):
    scan, observer = model()
    w = walk(scan.graph, path, heading)
    got = observer.decode(scan, w)
    assert got.tolist() == decode_naive(scan, w, observer.appraiser, observer.params)


@pytest.mark.parametrize("path, heading", PATHS)
def test_fixations_are_seen_where_they_are_said(path, heading):
    scan, observer = model()
    w = walk(scan.graph, path, heading)
    tags = observer.decode(scan, w)
    for m, k in enumerate(tags):
        assert VISIBLE[w.nodes[w.source[m]], k], (m, k)


def alternatives(d):
    return "|".join(re.escape(p) for p in MOVES[d])


@pytest.mark.parametrize("seed", range(5))
def test_left_turn_instruction(seed):
    scan, observer = model()
    out = Guide(observer).describe(scan, ["a", "c", "g", "i"], 0.0, key="left", seed=seed)
    assert out.moves == ["STOP", "STRAIGHT", "STRAIGHT", "LEFT", "STRAIGHT", "STRAIGHT", "STRAIGHT"]
    assert out.categories == ["sofa", "sofa", "lamp", "lamp", "clock", "clock", "clock"]
    # three groups: the start (sofa), the turn (lamp: straight and left collapsed), the end (clock)
    lamp = rf"({alternatives(Direction.STRAIGHT)}) and ({alternatives(Direction.LEFT)}), heading toward the lamp\."
    end = rf"({alternatives(Direction.STRAIGHT)})[ ,.].*\bclock\b.*"
    first = r".*\bsofa\b.*\. " + rf"({alternatives(Direction.STRAIGHT)}), so that it is .+\."
    assert re.fullmatch(f"{first} {lamp} {end}", out.instruction), out.instruction


def test_turn_in_the_last_group_is_not_said():
    # the reference's end template says only the last move of its group: a turn there goes unsaid
    lamp_at_g = VISIBLE.copy()
    lamp_at_g[5] = [0, 1, 0, 0, 0]
    scan, observer = model(lamp_at_g)
    out = Guide(observer).describe(scan, ["a", "c", "g"], 0.0, key="left", seed=0)
    assert out.moves == ["STOP", "STRAIGHT", "STRAIGHT", "LEFT", "STRAIGHT"]
    assert out.categories == ["sofa", "sofa", "lamp", "lamp", "lamp"]
    assert not any(p in out.instruction for p in MOVES[Direction.LEFT])


def test_stairs_instruction():
    scan, observer = model()
    out = Guide(observer).describe(scan, ["d", "e", "f"], 0.0, key="stairs", seed=1)
    assert out.moves[-1] == "UP"
    assert out.categories[-1] == "piano"
    assert out.moves == ["STOP", "STRAIGHT", "STRAIGHT", "SLIGHT_RIGHT", "UP"]
    assert any(p in out.instruction for p in MOVES[Direction.UP])  # the last group is said with its UP move
    assert any(p in out.instruction for p in ORIENTATIONS[Direction.STOP] + ("piano",))


def test_no_objects_falls_back():
    scan, observer = model(np.zeros_like(VISIBLE))
    out = Guide(observer).describe(scan, ["a", "c", "g"], 0.0, key="empty", seed=0)
    assert out.fallback and out.landmarks == [-1] * 5
    said = out.instruction.split(". ")
    assert len(said) == 4  # straight (two collapsed), left, straight, stop
    assert said[1] in MOVES[Direction.LEFT] and said[3][:-1] in MOVES[Direction.STOP]


def test_disconnected_path_refused():
    scan, observer = model()
    with pytest.raises(WalkError):
        Guide(observer).describe(scan, ["a", "h"], 0.0, key="x")


def test_seeded_per_path():
    scan, observer = model()
    g = Guide(observer)
    a = [g.describe(scan, ["a", "c", "d", "e"], 0.0, key=7, draw=d, seed=3).instruction for d in range(6)]
    b = [g.describe(scan, ["a", "c", "d", "e"], 0.0, key=7, draw=d, seed=3).instruction for d in range(6)]
    assert a == b and len(set(a)) > 1
