"""A small synthetic navigation environment: the jittered grid from docs/design.md.

Used as the built-in default input of the jobs (so a new user sees them work without any
data), and by tests and benchmarks that need many paths per scan. Everything is seeded.
"""

from __future__ import annotations

import json
import os

import numpy as np
from scipy.sparse.csgraph import shortest_path as _csgraph_shortest_path

SIZE = 15
JITTER = 0.3
EDGE_RADIUS = 1.4
CAMERA_HEIGHT = 1.5


def grid_connectivity(seed: int, size: int = SIZE) -> list[dict]:
    """Connectivity entries (the Matterport JSON layout) of one jittered grid."""
    rng = np.random.default_rng(seed)
    ii, jj = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    xy = np.stack([ii.ravel(), jj.ravel()], axis=1).astype(float)
    xy += rng.uniform(-JITTER, JITTER, size=xy.shape)
    dist = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))
    adjacent = (dist <= EDGE_RADIUS) & ~np.eye(len(xy), dtype=bool)
    entries = []
    for k, (x, y) in enumerate(xy):
        pose = [1.0, 0.0, 0.0, float(x), 0.0, 1.0, 0.0, float(y), 0.0, 0.0, 1.0, CAMERA_HEIGHT, 0.0, 0.0, 0.0, 1.0]
        entries.append(
            {
                "image_id": f"vp_{k // size:02d}_{k % size:02d}",
                "pose": pose,
                "included": True,
                "visible": adjacent[k].tolist(),
                "unobstructed": adjacent[k].tolist(),
                "height": CAMERA_HEIGHT,
            }
        )
    return entries


def grid_paths(entries: list[dict], scan: str, count: int, seed: int, first_path_id: int = 0, instructions: int = 3):
    """R2R-style records: each path repeatedly hops to a node two or three edges away by a shortest path."""
    rng = np.random.default_rng(seed)
    ids = [e["image_id"] for e in entries]
    xy = np.array([[e["pose"][3], e["pose"][7]] for e in entries])
    adj = np.array([e["unobstructed"] for e in entries], dtype=bool)
    weights = np.where(adj, np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1)), 0.0)
    dist, pred = _csgraph_shortest_path(weights, method="D", directed=False, return_predecessors=True)
    hops = _csgraph_shortest_path(adj.astype(float), method="D", directed=False, unweighted=True)
    records = []
    for n in range(count):
        node = int(rng.integers(len(ids)))
        path = [node]
        for _ in range(int(rng.integers(2, 4))):
            choices = np.flatnonzero(np.isin(hops[node], (2, 3)) & ~np.isin(np.arange(len(ids)), path))
            if len(choices) == 0:
                break
            target = int(rng.choice(choices))
            leg = [target]
            while leg[-1] != node:
                leg.append(int(pred[node, leg[-1]]))
            path.extend(reversed(leg[:-1]))
            node = target
        length = float(sum(dist[a, b] for a, b in zip(path[:-1], path[1:])))
        # Face along the first step (a lone viewpoint, possible on tiny grids, faces +y).
        dx, dy = xy[path[1]] - xy[path[0]] if len(path) > 1 else (0.0, 1.0)
        words = [ids[path[0]], ids[path[-1]]]
        records.append(
            {
                "distance": length,
                "scan": scan,
                "path_id": first_path_id + n,
                "path": [ids[k] for k in path],
                "heading": float(np.arctan2(dx, dy) % (2 * np.pi)),
                "instructions": [
                    f"Walk from {words[0]} to {words[1]}, variant {v}, taking {len(path) - 1} steps. "
                    for v in range(instructions)
                ],
            }
        )
    return records


def make_environment(scans: int = 3, paths_per_scan: int = 40, seed: int = 0, instructions: int = 3):
    """(connectivity by scan, R2R records) of a small synthetic dataset."""
    connectivity, records = {}, []
    for s in range(scans):
        scan = f"synthetic_grid_{s:02d}"
        connectivity[scan] = grid_connectivity(seed * 1000 + s)
        records += grid_paths(
            connectivity[scan], scan, paths_per_scan, seed * 1000 + 500 + s, len(records), instructions
        )
    return connectivity, records


def write_environment(directory: str, **kwargs) -> tuple[str, str]:
    """Write the synthetic environment as files; returns (r2r_path, connectivity_dir)."""
    connectivity, records = make_environment(**kwargs)
    conn_dir = os.path.join(directory, "connectivity")
    os.makedirs(conn_dir, exist_ok=True)
    for scan, entries in connectivity.items():
        with open(os.path.join(conn_dir, f"{scan}_connectivity.json"), "w") as f:
            json.dump(entries, f)
    r2r_path = os.path.join(directory, "R2R_synthetic.json")
    with open(r2r_path, "w") as f:
        json.dump(records, f)
    return r2r_path, conn_dir
