"""A plain, separate implementation of REVERIE's scoring rules, written from the two evaluators' text:
the official `tasks/REVERIE/eval_release.py` (YuankaiQi/REVERIE, `Evaluation._score_item` and `score`) and
DUET's `map_nav_src/reverie/env.py` (cshizhe/VLN-DUET, `_eval_item`). It shares nothing with vlnkit: the
graph is read from the connectivity JSON and its distances are found by Dijkstra (heapq), visibility is read
from the BBox files with json, predictions are dicts.
"""

from __future__ import annotations

import heapq
import json
import math
import os


def graph(connectivity_dir: str, scan: str) -> dict[str, dict[str, float]]:
    """Edges {vp: {neighbour: metres}} of the included viewpoints (either direction of `unobstructed`)."""
    data = json.load(open(os.path.join(connectivity_dir, f"{scan}_connectivity.json")))
    edges = {d["image_id"]: {} for d in data if d["included"]}
    for i, a in enumerate(data):
        for j, b in enumerate(data):
            if i != j and a["included"] and b["included"] and (a["unobstructed"][j] or b["unobstructed"][i]):
                pa, pb = a["pose"], b["pose"]
                d = math.sqrt((pa[3] - pb[3]) ** 2 + (pa[7] - pb[7]) ** 2 + (pa[11] - pb[11]) ** 2)
                edges[a["image_id"]][b["image_id"]] = d
    return edges


class Distances:
    """Shortest-path distances by Dijkstra from each source asked for (cached)."""

    def __init__(self, connectivity_dir: str):
        self.dir, self.graphs, self.cache = connectivity_dir, {}, {}

    def __call__(self, scan: str, a: str, b: str) -> float:
        if (scan, a) not in self.cache:
            g = self.graphs.setdefault(scan, graph(self.dir, scan))
            dist, todo = {a: 0.0}, [(0.0, a)]
            while todo:
                d, u = heapq.heappop(todo)
                if d > dist[u]:
                    continue
                for v, w in g[u].items():
                    if d + w < dist.get(v, math.inf):
                        dist[v] = d + w
                        heapq.heappush(todo, (d + w, v))
            self.cache[(scan, a)] = dist
        return self.cache[(scan, a)].get(b, math.inf)


def visible_objects(bbox_dir: str, scans: set[str]) -> dict[str, set[str]]:
    """{"<scan>_<viewpoint>": object ids (strings) with a non-empty visible_pos}, as `loadObjProposals` keys
    `objProposals` by the file's name."""
    out = {}
    for name in os.listdir(bbox_dir):
        if name.split("_")[0] in scans:
            data = json.load(open(os.path.join(bbox_dir, name)))
            out[name[: -len(".json")]] = {o for vv in data.values() for o, info in vv.items() if info["visible_pos"]}
    return out


def flat(trajectory) -> list[str]:
    """The viewpoints of a trajectory: the release's [[vp, heading, elevation], ...] or DUET's [[vp, ...], ...]."""
    if (
        trajectory
        and isinstance(trajectory[0], list)
        and len(trajectory[0]) == 3
        and not isinstance(trajectory[0][1], str)
    ):
        return [step[0] for step in trajectory]
    return sum(trajectory, [])


def score(records, predictions, visible, dist, evaluator: str = "official", instr_type: str = "instructions") -> dict:
    """{instr_id: {sr, osr, spl, rgs, rgspl, pl, steps}} of every prediction, by the evaluator's rules."""
    gt = {f"{r['path_id']}_{r['objId']}": r for r in records}
    out = {}
    for item in predictions:
        iid = item["instr_id"]
        r = gt[iid.rsplit("_", 1)[0]]
        scan, obj = r["scan"], str(r["objId"])
        path = flat(item["trajectory"])
        assert path[0] == r["path"][0]
        length = sum(dist(scan, a, b) for a, b in zip(path[:-1], path[1:]))
        seen = [obj in visible.get(f"{scan}_{vp}", set()) for vp in path]
        sr = 1.0 if seen[-1] else 0.0
        osr = 1.0 if any(seen) else 0.0
        pred = item.get("predObjId", item.get("pred_objid"))
        rgs = 1.0 if str(pred) == obj else 0.0
        if evaluator == "official":  # sp / max(length, sp), sp = d(start, goal)
            sp = dist(scan, r["path"][0], r["path"][-1])
            ratio = sp / max(length, sp) if max(length, sp) > 0 else float("nan")
        else:  # DUET: gt_lengths / max(trajectory_lengths, gt_lengths, 0.01)
            gl = sum(dist(scan, a, b) for a, b in zip(r["path"][:-1], r["path"][1:]))
            ratio = gl / max(length, gl, 0.01)
        out[iid] = {
            "sr": sr,
            "osr": osr,
            "spl": sr * ratio if sr else 0.0,
            "rgs": rgs,
            "rgspl": rgs * ratio if rgs else 0.0,
            "pl": length,
            "steps": float(len(path) - 1),
        }
    return out
