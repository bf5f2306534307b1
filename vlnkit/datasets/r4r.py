"""R4R: joining pairs of R2R paths into longer paths (docs/design.md, "R4R").

Path A joins path B (same scan) when d(a_last, b_first) <= distance_threshold and, when a
heading threshold is given, A's final direction of travel and B's starting heading differ by
at most heading_threshold. The join is keyed: A is keyed by every viewpoint within the
threshold of its end, B by its start, so the work grows with the output, not with the
square of the input. `join_paths` runs that join in memory; the Beam transform
(`transforms.r4r.JoinR4R`) runs the same functions as a distributed keyed join.

Heading conventions
-------------------
`simulator` (default): headings are radians clockwise from +y (atan2(dx, dy)), as in the
Matterport3D simulator and in R2R's `heading` field; the difference is wrapped to [0, pi].
`published_generator`: the published R4R generator's check, abs(b_heading - atan2(dy, dx) mod 2pi),
which measures A's direction counter-clockwise from +x and does not wrap around, so it
compares angles in different conventions and treats 359 deg vs 1 deg as far apart. Use it
only to reproduce files made by that generator with a heading threshold.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from vlnkit.io.exactsum import exact_mean, exact_sum
from vlnkit.navigation.graph import GraphError, NavGraph, angle_difference, simulator_heading

HEADING_CONVENTIONS = ("simulator", "published_generator")

# path_id of a joined path = first_path_id * PAIR_ID_BASE + second_path_id: stable on any
# runner, and both source ids can be read back from it.
PAIR_ID_BASE = 1_000_000


class JoinError(ValueError):
    """A pair that passed the rule cannot be joined (for example, unreachable viewpoints)."""


@dataclass(frozen=True)
class JoinConfig:
    distance_threshold: float = 3.0
    heading_threshold: float | None = None
    heading_convention: str = "simulator"

    def __post_init__(self) -> None:
        if not (self.distance_threshold >= 0 and math.isfinite(self.distance_threshold)):
            raise ValueError(f"distance_threshold must be a finite number >= 0, got {self.distance_threshold}")
        if self.heading_threshold is not None and not self.heading_threshold >= 0:
            raise ValueError(f"heading_threshold must be >= 0 radians, got {self.heading_threshold}")
        if self.heading_convention not in HEADING_CONVENTIONS:
            raise ValueError(
                f"heading_convention must be one of {HEADING_CONVENTIONS}, got {self.heading_convention!r}"
            )


def pair_path_id(first_path_id: int, second_path_id: int) -> int:
    for pid in (first_path_id, second_path_id):
        if not 0 <= pid < PAIR_ID_BASE:
            raise JoinError(f"path_id {pid} is outside [0, {PAIR_ID_BASE}); cannot form a stable joined path_id")
    return first_path_id * PAIR_ID_BASE + second_path_id


def final_heading(graph: NavGraph, record: dict) -> float:
    """A's direction of travel on its last edge (simulator convention); its own heading if it has one viewpoint."""
    path = record["path"]
    if len(path) < 2:
        return float(record["heading"])
    return graph.heading_of_step(path[-2], path[-1])


def heading_difference(graph: NavGraph, first: dict, second: dict, convention: str = "simulator") -> float:
    """How far B's starting heading is from A's final direction of travel, in radians."""
    if convention == "published_generator":
        path = first["path"]
        if len(path) < 2:
            return abs(second["heading"] - first["heading"])
        d = graph.positions[graph.idx(path[-1])] - graph.positions[graph.idx(path[-2])]
        return abs(second["heading"] - math.atan2(d[1], d[0]) % (2 * math.pi))
    return angle_difference(final_heading(graph, first), second["heading"])


def path_problem(graph: NavGraph, record: dict) -> str | None:
    """Why a record's reference path cannot take part in a join on this graph, or None.

    Every viewpoint must be an included viewpoint of the scan and consecutive viewpoints must be
    joined by an edge: a joined path is A + connector + B, so a jump inside A or B would make an
    R4R path that no agent can follow (the real R2R train / val paths have no such step).

        >>> import numpy as np
        >>> g = NavGraph("s", ("a", "b", "c"), np.zeros((3, 3)), np.array([[0, 1], [1, 2]]))
        >>> path_problem(g, {"path": ["a", "c"]})
        "path step 0 -> 1 ('a' -> 'c') is not an edge of scan 's' (consecutive viewpoints must be adjacent)"
    """
    return graph.walk_problem(record["path"])


def end_keys(graph: NavGraph, record: dict, distance_threshold: float) -> list[str]:
    """Viewpoints within the threshold of the path's end: the keys under which it meets second paths."""
    return graph.within(record["path"][-1], distance_threshold)


def passes_heading(graph: NavGraph, first: dict, second: dict, config: JoinConfig) -> bool:
    if config.heading_threshold is None:
        return True
    return heading_difference(graph, first, second, config.heading_convention) <= config.heading_threshold


def build_joined(graph: NavGraph, first: dict, second: dict) -> dict:
    """The joined record exactly as the published generator builds it, plus the join distance."""
    a_last, b_first = first["path"][-1], second["path"][0]
    gap = graph.distance(a_last, b_first)
    if not math.isfinite(gap):
        raise JoinError(f"scan {graph.scan!r}: {b_first!r} is unreachable from {a_last!r}")
    connector = graph.shortest_path(a_last, b_first)
    start, goal = first["path"][0], second["path"][-1]
    sp_distance = graph.distance(start, goal)
    if not math.isfinite(sp_distance):
        raise JoinError(f"scan {graph.scan!r}: goal {goal!r} is unreachable from start {start!r}")
    return {
        "path_id": pair_path_id(first["path_id"], second["path_id"]),
        "scan": graph.scan,
        "path": first["path"][:-1] + connector + second["path"][1:],
        "distance": first["distance"] + gap + second["distance"],
        "heading": first["heading"],
        "instructions": [x + y for x in first["instructions"] for y in second["instructions"]],
        "first_path_id": first["path_id"],
        "second_path_id": second["path_id"],
        "shortest_path": graph.shortest_path(start, goal),
        "shortest_path_distance": sp_distance,
        "join_distance": gap,
    }


@dataclass
class FirstJoins:
    """What one first path A made in its scan's join: the joined records and the pairs that failed."""

    first: dict
    joined: list[dict]
    seconds: list[dict]  # the second path B of each joined record
    errors: list[tuple[dict, str]]  # (second path B, why A + B could not be built)
    passed_distance: int = 0
    filtered_heading: int = 0


def join_firsts(graph: NavGraph, records: list[dict], config: JoinConfig = JoinConfig()) -> Iterator[FirstJoins]:
    """The keyed join of one scan's usable records, one `FirstJoins` per first path, in record order.

    A is looked up under every viewpoint within the threshold of its end, B under its start, so
    the work grows with the output, not with the square of the scan's paths. Records must have
    passed `path_problem`; a pair that passes the rule but cannot be built is reported in
    `errors`, not raised, so one bad pair never stops a scan.

        >>> import numpy as np
        >>> g = NavGraph("s", ("a", "b"), np.array([[0, 0, 0], [1, 0, 0]]), np.array([[0, 1]]))
        >>> recs = [{"path_id": 1, "path": ["a", "b"], "distance": 1.0, "heading": 0.0, "instructions": ["x"]},
        ...         {"path_id": 2, "path": ["b", "a"], "distance": 1.0, "heading": 0.0, "instructions": ["y"]}]
        >>> [len(f.joined) for f in join_firsts(g, recs, JoinConfig(distance_threshold=0.5))]
        [1, 1]
    """
    by_start: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        by_start[rec["path"][0]].append(rec)
    for first in records:
        out = FirstJoins(first, [], [], [])
        for key in end_keys(graph, first, config.distance_threshold):
            for second in by_start.get(key, ()):
                out.passed_distance += 1
                if not passes_heading(graph, first, second, config):
                    out.filtered_heading += 1
                    continue
                try:
                    joined = build_joined(graph, first, second)
                except (JoinError, GraphError) as exc:
                    out.errors.append((second, str(exc)))
                    continue
                out.joined.append(joined)
                out.seconds.append(second)
        yield out


def join_paths(graph: NavGraph, records: list[dict], config: JoinConfig = JoinConfig()) -> tuple[list[dict], dict]:
    """Join every qualifying pair of one scan's records in memory. Returns (joined, counts).

    A record whose path is unusable (see `path_problem`), or a pair that cannot be built, raises
    JoinError: the Beam transform dead-letters such records and pairs instead.
    """
    for rec in records:
        problem = path_problem(graph, rec)
        if problem is not None:
            raise JoinError(f"path_id={rec.get('path_id')!r}: {problem}")
    joined, passed_distance, filtered_heading = [], 0, 0
    for part in join_firsts(graph, records, config):
        if part.errors:
            raise JoinError(part.errors[0][1])
        joined += part.joined
        passed_distance += part.passed_distance
        filtered_heading += part.filtered_heading
    counts = {
        "pairs_considered": len(records) ** 2,
        "filtered_distance": len(records) ** 2 - passed_distance,
        "filtered_heading": filtered_heading,
        "joined": len(joined),
    }
    return joined, counts


def group_totals(records: list[dict]) -> dict:
    """Joined records' contribution to the dataset statistics (sums, distances exact; see `summarize`)."""
    return {
        "paths": len(records),
        "instructions": sum(len(r["instructions"]) for r in records),
        "distance": exact_sum([r["distance"] for r in records]),
        "shortest_path_distance": exact_sum([r["shortest_path_distance"] for r in records]),
        "steps": sum(len(r["path"]) for r in records),
        "shortest_path_steps": sum(len(r["shortest_path"]) for r in records),
    }


def add_totals(into: dict, other: dict) -> dict:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v
    return into


def summarize(totals: dict) -> dict:
    """Counts and means of a join from summed `group_totals` (means are None when nothing joined)."""
    n = totals.get("paths", 0)

    def mean(key: str) -> float | None:
        return totals.get(key, 0) / n if n else None

    return {
        "paths": int(n),
        "instructions": int(totals.get("instructions", 0)),
        "mean_distance": exact_mean(totals.get("distance", 0), n),
        "mean_shortest_path_distance": exact_mean(totals.get("shortest_path_distance", 0), n),
        "mean_steps": mean("steps"),
        "mean_shortest_path_steps": mean("shortest_path_steps"),
    }


__all__ = [
    "HEADING_CONVENTIONS",
    "PAIR_ID_BASE",
    "JoinConfig",
    "FirstJoins",
    "JoinError",
    "add_totals",
    "build_joined",
    "end_keys",
    "final_heading",
    "group_totals",
    "heading_difference",
    "join_firsts",
    "join_paths",
    "pair_path_id",
    "path_problem",
    "summarize",
    "passes_heading",
    "simulator_heading",
]
