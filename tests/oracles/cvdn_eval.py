"""A test oracle: CVDN's evaluation written plainly from the rules of mmurray/cvdn `tasks/NDH/eval.py`.

Written without `vlnkit` on purpose: graphs are networkx graphs built from connectivity entries the way the
evaluator's `load_nav_graphs` builds them (an edge per `unobstructed` pair of included viewpoints, weighted
by the euclidean distance of the pose translations), distances are networkx's Dijkstra, and every rule is a
Python loop over one episode's viewpoints. Like the evaluator it stops on what it cannot score: an
AssertionError for a trajectory that does not start at the target path's start or a missing prediction,
a KeyError for a move along no edge or an unknown viewpoint.

>>> entries = [{"image_id": v, "included": True, "unobstructed": [abs(i - j) == 1 for j in range(3)],
...             "pose": [1, 0, 0, i * 2.0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]} for i, v in enumerate("abc")]
>>> inst = {"inst_idx": 1, "scan": "s", "planner_path": ["a", "b"], "player_path": ["a", "b", "c"], "end_panos": ["c"]}
>>> summary, _ = PlainCVDNEvaluation({"s": entries}, [inst]).score([{"inst_idx": 1, "trajectory": [["a", 0, 0], ["b", 0, 0]]}])
>>> summary["success_rate"], summary["dist_to_end_reduction"]
(1.0, 2.0)
"""

from __future__ import annotations

import networkx as nx

MARGIN = 3.0
PATH_KEYS = {"planner": "planner_path", "player": "player_path", "trusted": "trusted_path"}


def nav_graph(entries: list[dict]) -> nx.Graph:
    graph = nx.Graph()
    for a in entries:
        if not a["included"]:
            continue
        for j, linked in enumerate(a["unobstructed"]):
            b = entries[j]
            if linked and b["included"]:
                dx = a["pose"][3] - b["pose"][3]
                dy = a["pose"][7] - b["pose"][7]
                dz = a["pose"][11] - b["pose"][11]
                graph.add_edge(a["image_id"], b["image_id"], weight=(dx * dx + dy * dy + dz * dz) ** 0.5)
    return graph


class PlainCVDNEvaluation:
    """The evaluator's `Evaluation` for one set of instances, with `path_type` "planner", "player" or "trusted"."""

    def __init__(self, connectivity: dict[str, list[dict]], instances: list[dict], path_type: str = "planner"):
        self.key = PATH_KEYS[path_type]
        self.gt = {}
        for inst in instances:
            inst = dict(inst)
            if path_type == "trusted":
                reached = inst["planner_path"][-1] in inst["player_path"][1:]
                inst["trusted_path"] = list(inst["player_path"] if reached else inst["planner_path"])
            self.gt[inst["inst_idx"]] = inst
        scans = {inst["scan"] for inst in instances}
        self.graphs = {s: nav_graph(connectivity[s]) for s in scans}
        self.dist = {s: dict(nx.all_pairs_dijkstra_path_length(g)) for s, g in self.graphs.items()}

    def episode(self, inst_idx: int, trajectory: list) -> dict:
        """One episode's raw values, as the evaluator appends them to its score lists."""
        gt = self.gt[inst_idx]
        d = self.dist[gt["scan"]]
        target = gt[self.key]
        start, goal, planner_goal = target[0], target[-1], gt["planner_path"][-1]
        assert trajectory[0][0] == start, "the trajectory must start at the target path's start"
        final = trajectory[-1][0]
        nearest_goal = min(d[step[0]][goal] for step in trajectory)
        nearest_planner = min(d[step[0]][planner_goal] for step in trajectory)
        from_start = min(d[start][e] for e in gt["end_panos"])
        from_final = min(d[final][e] for e in gt["end_panos"])
        length = 0.0
        for before, after in zip(trajectory, trajectory[1:]):
            if before[0] != after[0]:
                self.graphs[gt["scan"]][before[0]][after[0]]  # KeyError: not an edge
            length += d[before[0]][after[0]]
        return {
            "inst_idx": inst_idx,
            "nav_error": d[final][goal],
            "oracle_error": nearest_goal,
            "oracle_plan_error": nearest_planner,
            "dist_to_end_reduction": from_start - from_final,
            "length": length,
            "shortest": d[start][goal],
        }

    def score(self, predictions: list[dict]) -> tuple[dict, list[dict]]:
        """(the summary the evaluator returns, plus `sc_dr`; the per-episode values with their spl)."""
        todo = set(self.gt)
        episodes = []
        for pred in predictions:
            if pred["inst_idx"] in todo:
                todo.discard(pred["inst_idx"])
                episodes.append(self.episode(pred["inst_idx"], pred["trajectory"]))
        assert not todo, f"no trajectory for {sorted(todo)}"
        for e in episodes:
            ok = e["nav_error"] < MARGIN
            if not ok:
                e["spl"] = 0.0
            elif e["shortest"] > 0:
                e["spl"] = e["shortest"] / max(e["length"], e["shortest"])
            else:
                e["spl"] = 1.0 if e["length"] == 0 else 0.0
            e["success"] = float(ok)
        n = len(episodes)
        summary = {
            "length": sum(e["length"] for e in episodes) / n,
            "nav_error": sum(e["nav_error"] for e in episodes) / n,
            "oracle success_rate": sum(e["oracle_error"] < MARGIN for e in episodes) / n,
            "success_rate": sum(e["nav_error"] < MARGIN for e in episodes) / n,
            "spl": sum(e["spl"] for e in episodes) / n,
            "oracle path_success_rate": sum(e["oracle_plan_error"] < MARGIN for e in episodes) / n,
            "dist_to_end_reduction": sum(e["dist_to_end_reduction"] for e in episodes) / n,
            "sc_dr": sum(e["dist_to_end_reduction"] for e in episodes if e["success"]) / n,
        }
        return summary, episodes
