"""An independent check of joined chains (R4R, R6R, R8R), and an independent count of them.

Written without `vlnkit` on purpose: distances come from networkx on the connectivity files
(`r4r_generator.load_graph`), the chains are counted by plain recursion over successor lists,
and a joined path is checked by finding its source paths in it, in order, intact.
"""

from __future__ import annotations

import math

import networkx as nx

TOLERANCE = 1e-9


class Distances:
    """Shortest-path lengths on one networkx graph, one Dijkstra per source viewpoint (cached)."""

    def __init__(self, graph: nx.Graph):
        self.graph = graph
        self.rows: dict[str, dict[str, float]] = {}

    def __call__(self, u: str, v: str) -> float:
        if u not in self.rows:
            self.rows[u] = nx.single_source_dijkstra_path_length(self.graph, u, weight="weight")
        return self.rows[u].get(v, math.inf)


def count_chains(records: list[dict], distance: Distances, threshold: float, k: int) -> int:
    """How many ordered chains of k records (all distinct when k >= 3) have every junction within threshold."""
    successors = {
        a["path_id"]: [b["path_id"] for b in records if distance(a["path"][-1], b["path"][0]) <= threshold]
        for a in records
    }
    if k == 2:
        return sum(len(s) for s in successors.values())

    def extend(chain: list[int]) -> int:
        if len(chain) == k:
            return 1
        return sum(extend(chain + [n]) for n in successors[chain[-1]] if n not in chain)

    return sum(extend([pid]) for pid in successors)


def chain_problems(joined: dict, sources: dict[int, dict], distance: Distances, threshold: float) -> list[str]:
    """Why `joined` is not a valid chain of its `path_ids` (empty when it is).

    Valid: the first source path is a prefix of the joined path; each next source path follows, intact,
    after a connector from the previous source's last viewpoint that is a walk along graph edges, a
    shortest path, and at most `threshold` long; the last source ends the joined path; no source repeats
    (for three or more); distances, shortest path and instructions are what the sources make.
    """
    ids, path = joined["path_ids"], joined["path"]
    problems = []
    if len(ids) >= 3 and len(set(ids)) != len(ids):
        problems.append(f"a source path is used twice: {ids}")
    first = sources[ids[0]]["path"]
    if path[: len(first)] != first:
        return problems + [f"does not start with source {ids[0]}"]
    end, total = len(first) - 1, sources[ids[0]]["distance"]
    for pid in ids[1:]:
        src = sources[pid]["path"]
        starts = [q for q in range(end, len(path) - len(src) + 1) if path[q : q + len(src)] == src]
        if not starts:
            return problems + [f"source {pid} is not found intact after position {end}"]
        q = starts[0]
        connector = path[end : q + 1]
        steps = list(zip(connector, connector[1:]))
        if not all(distance.graph.has_edge(u, v) for u, v in steps):
            problems.append(f"connector before source {pid} leaves the graph's edges")
        length = sum(distance.graph[u][v]["weight"] for u, v in steps)
        if abs(length - distance(connector[0], connector[-1])) > TOLERANCE:
            problems.append(f"connector before source {pid} is not a shortest path")
        if length > threshold + TOLERANCE:
            problems.append(f"junction before source {pid} is {length:.3f} m > {threshold} m")
        total += length + sources[pid]["distance"]
        end = q + len(src) - 1
    if end != len(path) - 1:
        problems.append("the joined path goes on after its last source")
    if abs(total - joined["distance"]) > 1e-6:
        problems.append(f"distance {joined['distance']} != {total}")
    if abs(distance(path[0], path[-1]) - joined["shortest_path_distance"]) > 1e-6:
        problems.append("shortest_path_distance is not d(start, goal)")
    expected = [""]
    for pid in ids:
        expected = [x + y for x in expected for y in sources[pid]["instructions"]]
    if joined["instructions"] != expected:
        problems.append("instructions are not every concatenation, one of each source in order")
    return problems
