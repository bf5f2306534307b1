"""Crafty's guide: walk a path, observe its landmarks, say it (appendix B; google-research/crafty `guide.py`).

`Guide.describe` gives one instruction for one path and draw number with everything that explains it: the
move at each motion, the landmark fixated, the template sentences. Its random choices come from a
generator seeded by `stable_hash(path key, draw, seed=seed)`, so the output depends on the seed and the
path alone, never on the runner, the worker or the order of records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.crafty.observer import Observer, ScanModel
from vlnkit.crafty.talker import Step, Talker
from vlnkit.crafty.walker import Walk, walk
from vlnkit.crafty.wheel import Direction, heading_change_type, heading_to, move_type, pitch_to
from vlnkit.hashing import stable_hash


@dataclass(frozen=True)
class PathInstruction:
    instruction: str
    moves: list[str]  # Direction name per motion (STOP first)
    landmarks: list[int]  # objId fixated per motion (-1 for the fallback)
    categories: list[str]  # its clean category ("" for the fallback)
    fallback: bool  # no object seen along the path

    @property
    def words(self) -> int:
        return len(self.instruction.split())


def motion_directions(w: Walk) -> np.ndarray:
    """Direction code of each motion: STOP first, then the wheel (or UP/DOWN) from the previous heading."""
    src = w.source
    prev, cur = w.positions[src[:-1]], w.positions[src[1:]]
    moves = move_type(pitch_to(prev, cur), w.heading[1:], w.heading[:-1])
    return np.concatenate([[int(Direction.STOP)], moves]).astype(np.int64)


@dataclass(frozen=True)
class Guide:
    observer: Observer

    def steps(self, scan: ScanModel, w: Walk) -> list[Step] | None:
        tags = self.observer.decode(scan, w)
        if tags is None:
            return None
        moves = motion_directions(w)
        pano = w.positions[w.source]
        obj_dir = heading_change_type(heading_to(pano, scan.objects.centres[tags]), w.heading)
        inter = np.concatenate([[False], w.source[1:] != w.source[:-1]])
        ids, cats = scan.objects.obj_ids[tags], scan.objects.categories[tags]
        return [
            Step(Direction(int(moves[j])), bool(inter[j]), Direction(int(obj_dir[j])), str(cats[j]), int(ids[j]))
            for j in range(w.steps)
        ]

    def describe(self, scan: ScanModel, path, heading: float, key, draw: int = 0, seed: int = 0) -> PathInstruction:
        """One instruction for `path` (raises WalkError when the graph does not connect it)."""
        w = walk(scan.graph, path, heading)
        return self.describe_walk(scan, w, self.steps(scan, w), key, draw, seed)

    def describe_walk(self, scan: ScanModel, w: Walk, steps, key, draw: int = 0, seed: int = 0) -> PathInstruction:
        talker = Talker(np.random.default_rng(stable_hash(key, draw, seed=seed)))
        if steps is None:
            moves = [Direction(int(m)) for m in motion_directions(w)]
            text = " ".join(talker.fallback(moves))
            return PathInstruction(text, [m.name for m in moves], [-1] * len(moves), [""] * len(moves), True)
        text = " ".join(talker.sentences(steps))
        return PathInstruction(
            text, [s.move.name for s in steps], [s.landmark for s in steps], [s.category for s in steps], False
        )
