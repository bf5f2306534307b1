"""Real agents on R2R val_unseen, scored with the library (`score_batch`), as one per-episode table.

The agents of rszia+rpl2024-final-group9 (shortest-path, random walk, stop) wrote one entry per
low-level action; scoring collapses the repeated viewpoints, as the score job does by default.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from vlnkit.evaluation import METRICS, pack_viewpoints, score_batch
from vlnkit.navigation.graph import NavGraph

AGENTS = ("shortest", "random", "stop")
FOLDER = "agent_outputs/rszia+rpl2024-final-group9"


@lru_cache(maxsize=1)
def load_val_unseen(shared_data: str, r2r_dir: str, connectivity_dir: str) -> dict:
    """The table, graphs and reference records (cached: the comparison and page tests share them)."""
    shared_data, r2r_dir = Path(shared_data), Path(r2r_dir)
    episodes = {}
    for record in json.loads((r2r_dir / "R2R_val_unseen.json").read_text()):
        for k in range(len(record["instructions"])):
            episodes[f"{record['path_id']}_{k}"] = record
    graphs = {scan: NavGraph.load(connectivity_dir, scan) for scan in {r["scan"] for r in episodes.values()}}
    table = {name: [] for name in ("agent", "instr_id", "scan", "language", "length_m", "path", *METRICS)}
    for agent in AGENTS:
        predictions = json.loads((shared_data / FOLDER / f"val_unseen_{agent}_agent.json").read_text())
        by_scan: dict[str, list] = {}
        for p in predictions:
            by_scan.setdefault(episodes[p["instr_id"]]["scan"], []).append(p)
        for scan, group in sorted(by_scan.items()):
            graph = graphs[scan]
            paths = [[step[0] for step in p["trajectory"]] for p in group]
            paths = [[v for j, v in enumerate(path) if j == 0 or v != path[j - 1]] for path in paths]
            refs = [episodes[p["instr_id"]]["path"] for p in group]
            scores = score_batch(
                graph.distances, pack_viewpoints(graph.index, refs), pack_viewpoints(graph.index, paths)
            )
            table["agent"] += [agent] * len(group)
            table["instr_id"] += [p["instr_id"] for p in group]
            table["scan"] += [scan] * len(group)
            table["language"] += ["en"] * len(group)
            table["length_m"] += [episodes[p["instr_id"]]["distance"] for p in group]
            table["path"] += paths
            for m in METRICS:
                table[m] += np.where(np.isfinite(scores[m]), scores[m], np.nan).tolist()
    return {"table": table, "graphs": graphs, "references": episodes}
