"""The per-chain R4R builder the job used before joined paths were built a scan at a time
(`vlnkit.datasets.r4r_batch.build_chains`): one chain, one dict, plain Python over `NavGraph`
look-ups. Kept as the oracle the batched builder must equal, record for record.

Each next source S is appended as `path[:-1] + C + S.path[1:]`, C the shortest path from the path so
far's end to S's start; distances add up left to right; the instructions are every K-way
concatenation, the first source's instruction varying slowest.
"""

from __future__ import annotations

import itertools
import math

from vlnkit.hashing import stable_hash
from vlnkit.navigation.graph import NavGraph

PAIR_ID_BASE = 1_000_000


class ChainError(ValueError):
    """The chain cannot be built (an unreachable junction or goal, a pair id out of range)."""


def chain_path_id(path_ids: list[int]) -> int:
    if len(path_ids) == 2:
        for pid in path_ids:
            if not 0 <= pid < PAIR_ID_BASE:
                raise ChainError(f"path_id {pid} is outside [0, {PAIR_ID_BASE}); cannot form a stable joined path_id")
        return path_ids[0] * PAIR_ID_BASE + path_ids[1]
    return stable_hash(*path_ids) >> 1


def build_chain(graph: NavGraph, sources: list[dict]) -> dict:
    """The joined record of `sources` (K >= 2 R2R records, in order), with `_landmark`."""
    first = sources[0]
    path, distance, gaps = list(first["path"]), first["distance"], []
    sub_paths = [list(first["path"])]
    for source in sources[1:]:
        end, start = path[-1], source["path"][0]
        gap = graph.distance(end, start)
        if not math.isfinite(gap):
            raise ChainError(f"scan {graph.scan!r}: {start!r} is unreachable from {end!r}")
        leg = graph.shortest_path(end, start) + source["path"][1:]
        path = path[:-1] + leg
        sub_paths.append(leg)
        distance = distance + gap + source["distance"]
        gaps.append(gap)
    start, goal = first["path"][0], sources[-1]["path"][-1]
    sp_distance = graph.distance(start, goal)
    if not math.isfinite(sp_distance):
        raise ChainError(f"scan {graph.scan!r}: goal {goal!r} is unreachable from start {start!r}")
    path_ids = [s["path_id"] for s in sources]
    return {
        "path_id": chain_path_id(path_ids),
        "scan": graph.scan,
        "path": path,
        "distance": distance,
        "heading": first["heading"],
        "instructions": ["".join(parts) for parts in itertools.product(*(s["instructions"] for s in sources))],
        "first_path_id": path_ids[0],
        "second_path_id": path_ids[1],
        "path_ids": path_ids,
        "shortest_path": graph.shortest_path(start, goal),
        "shortest_path_distance": sp_distance,
        "join_distance": max(gaps),
        "join_distances": gaps,
        "_landmark": {
            "path": sub_paths,
            "headings": [s["heading"] for s in sources],
            "instructions": [list(s["instructions"]) for s in sources],
        },
    }
