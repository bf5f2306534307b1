"""A straightforward single-process R4R generator: the baseline for benchmarks and the oracle for tests.

Written independently of `vlnkit` on purpose: per scan, every (A, B) pair, networkx Dijkstra,
one JSON file, exactly the R4R generator's rule (distance threshold, no heading threshold).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import networkx as nx
import numpy as np


def load_graph(connectivity_dir: str, scan: str) -> nx.Graph:
    with open(os.path.join(connectivity_dir, f"{scan}_connectivity.json")) as f:
        entries = json.load(f)
    graph = nx.Graph()
    pos = {}
    for e in entries:
        if e["included"]:
            graph.add_node(e["image_id"])
            pos[e["image_id"]] = np.array([e["pose"][3], e["pose"][7], e["pose"][11]])
    for i, e in enumerate(entries):
        if not e["included"]:
            continue
        for j, free in enumerate(e["unobstructed"]):
            other = entries[j]
            if free and other["included"] and i != j:
                u, v = e["image_id"], other["image_id"]
                graph.add_edge(u, v, weight=float(np.linalg.norm(pos[u] - pos[v])))
    return graph


def generate(records: list[dict], connectivity_dir: str, distance_threshold: float = 3.0) -> list[dict]:
    by_scan: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_scan[r["scan"]].append(r)
    out = []
    for scan, values in by_scan.items():
        graph = load_graph(connectivity_dir, scan)
        cache = dict(nx.all_pairs_dijkstra(graph, weight="weight"))
        for first in values:
            for second in values:
                gap = cache[first["path"][-1]][0][second["path"][0]]
                if gap > distance_threshold:
                    continue
                out.append(
                    {
                        "path": first["path"][:-1]
                        + cache[first["path"][-1]][1][second["path"][0]]
                        + second["path"][1:],
                        "distance": first["distance"] + gap + second["distance"],
                        "instructions": [x + y for x in first["instructions"] for y in second["instructions"]],
                        "heading": first["heading"],
                        "path_id": len(out),
                        "scan": scan,
                        "shortest_path_distance": cache[first["path"][0]][0][second["path"][-1]],
                        "shortest_path": cache[first["path"][0]][1][second["path"][-1]],
                        "first_path_id": first["path_id"],
                        "second_path_id": second["path_id"],
                    }
                )
    return out


def main(input_path: str, connectivity_dir: str, output_path: str) -> int:
    with open(input_path) as f:
        records = json.load(f)
    out = generate(records, connectivity_dir)
    with open(output_path, "w") as f:
        json.dump(out, f)
    return len(out)
