"""Scoring NDH (CVDN) predictions in one process, as the official evaluator scores them, with dead letters
where it stops.

`score_ndh_split(instances, predictions, graphs, target)` takes the records `vlnkit.datasets.ndh.parse_ndh`
and `vlnkit.datasets.trajectories.parse_predictions` give (RecordErrors among them pass through as dead
letters) and returns an `NDHSplitScores`: one row per scored episode with every metric of
`vlnkit.evaluation.ndh`, the instr_ids without a prediction, and the dead letters. Episodes are scored a
scan at a time (`score_ndh`), never one by one.

What the evaluator (mmurray/cvdn `tasks/NDH/eval.py`, "eval.py:N") does with each case, and what happens here:

| case | eval.py | here (dead-letter stage) |
| --- | --- | --- |
| two instances with one inst_idx | the last is kept (27) | the first is kept, the others are dead letters ("dedupe") |
| two predictions for one instance | the first is scored, the others ignored (104-106) | the same, and the others are dead letters ("match") |
| a prediction for no instance | ignored (104) | a dead letter ("match") |
| an instance without prediction | stops (107) | counted in `missing` |
| a viewpoint not in the scan's graph | stops (KeyError in its distance table) | a dead letter ("reference" for the instance's paths and end panos, "viewpoint" for the trajectory) |
| a goal or end pano unreachable from the start | stops (KeyError) | a dead letter ("reference") |
| a trajectory starting elsewhere than the target path | stops (62) | a dead letter ("start") |
| a move between viewpoints that share no edge | stops, naming both (83-91) | a dead letter ("edge") naming the instance and both viewpoints |

    >>> import numpy as np
    >>> from vlnkit.navigation.graph import GraphStore, NavGraph
    >>> line = NavGraph("s", ("a", "b", "c"), np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]), np.array([[0, 1], [1, 2]]))
    >>> from vlnkit.datasets.ndh import ndh_record
    >>> inst = ndh_record({"inst_idx": 5, "scan": "s", "planner_path": ["a", "b"], "player_path": ["a"],
    ...                    "end_panos": ["c"]}, "val.json", 0)
    >>> preds = [{"instr_id": "5", "path": ["a", "c"], "_source": "p.json", "_index": 0}]
    >>> result = score_ndh_split([inst], preds, GraphStore("", {"s": line}))
    >>> result.table.num_rows, [d.reason for d in result.dead]
    (0, ["trajectory moves from 'a' to 'c' (step 0), but the navigation graph of scan 's' has no edge between them"])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from vlnkit.datasets.ndh import DEFAULT_TARGET_PATH, check_target_path, ndh_label, target_path
from vlnkit.evaluation.ndh import NDH_METRICS, first_non_edges, flat_indices, score_ndh
from vlnkit.io.dead_letters import RecordError
from vlnkit.navigation.graph import GraphError
from vlnkit.scoring.reading import MATCH, unknown_id

EDGE = "edge"  # the dead-letter stage of a trajectory that moves between viewpoints sharing no edge


@dataclass
class NDHSplitScores:
    """The scored episodes, a scan at a time (`table`: instr_id, scan, every metric of `NDH_METRICS`, the
    trajectory as given), the instr_ids with no prediction, and every dead letter."""

    parts: list[pa.Table] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    dead: list[RecordError] = field(default_factory=list)

    @property
    def table(self) -> pa.Table:
        return pa.concat_tables(self.parts) if self.parts else SPLIT_SCHEMA.empty_table()

    def column(self, metric: str) -> np.ndarray:
        return self.table.column(metric).to_numpy()


SPLIT_SCHEMA = pa.schema(
    [
        pa.field("instr_id", pa.string()),
        pa.field("scan", pa.string()),
        *(pa.field(m, pa.float64()) for m in NDH_METRICS),
        pa.field("path", pa.list_(pa.string())),
    ]
)


def _pred_label(pred: dict) -> str:
    return f"#{pred['_index']} (instr_id={pred['instr_id']})"


def _refused(pred: dict, stage: str, reason: str) -> RecordError:
    return RecordError(pred["_source"], _pred_label(pred), reason, stage)


def _first_of_each(items: list[dict], key: str, stage: str, what: str) -> tuple[dict, list[RecordError]]:
    """{key: the first item with it (in the given order)}, and a dead letter for each later one."""
    kept: dict = {}
    dead = []
    for item in items:
        first = kept.setdefault(item[key], item)
        if first is not item:
            where = f"{first['_source']} #{first['_index']}"
            label = _pred_label(item) if stage == MATCH else ndh_label(item, item["_index"])
            reason = f"duplicate {what} {item[key]!r} (kept {where})"
            dead.append(RecordError(item["_source"], label, reason, stage))
    return kept, dead


def score_ndh_split(instances, predictions, graphs, target: str = DEFAULT_TARGET_PATH) -> NDHSplitScores:
    """Score an agent's predictions of an NDH split (see the module docstring); `graphs` is a `GraphStore`,
    `target` one of `vlnkit.datasets.ndh.TARGET_PATHS`."""
    check_target_path(target)
    out = NDHSplitScores()
    records = [r for r in instances if not isinstance(r, RecordError)]
    preds = [p for p in predictions if not isinstance(p, RecordError)]
    out.dead += [r for r in instances if isinstance(r, RecordError)]
    out.dead += [p for p in predictions if isinstance(p, RecordError)]
    by_id, dead = _first_of_each(records, "instr_id", "dedupe", "inst_idx")
    out.dead += dead
    pred_of, dead = _first_of_each(preds, "instr_id", MATCH, "prediction for instr_id")
    out.dead += dead
    for iid, pred in pred_of.items():
        if iid not in by_id:
            out.dead.append(unknown_id(pred["_source"], pred["_index"], iid))
    episodes = [r for r in by_id.values() if r["instr_id"] in pred_of]
    out.missing = [r["instr_id"] for r in by_id.values() if r["instr_id"] not in pred_of]
    for scan in dict.fromkeys(r["scan"] for r in episodes):
        mine = [(r, pred_of[r["instr_id"]]) for r in episodes if r["scan"] == scan]
        try:
            graph = graphs.get(scan)
        except GraphError as exc:
            out.dead += [_refused(p, "graph", str(exc)) for _, p in mine]
            continue
        _score_scan(graph, mine, target, out)
    return out


def _reference_problem(graph, record: dict, target: list[str]) -> str | None:
    """Why an instance cannot be scored on its scan's graph (a viewpoint outside it, an unreachable goal)."""
    index = graph.index
    named = {"target path": target, "planner path": record["planner_path"], "end panos": record["end_panos"]}
    for what, viewpoints in named.items():
        for v in viewpoints:
            if v not in index:
                return f"{what} viewpoint {v!r} is not an included viewpoint of scan {graph.scan!r}"
    row = graph.distances[index[target[0]]]
    for what, v in (
        ("goal", target[-1]),
        ("planner goal", record["planner_path"][-1]),
        *(("end pano", e) for e in record["end_panos"]),
    ):
        if not np.isfinite(row[index[v]]):
            return f"{what} {v!r} is unreachable from the start {target[0]!r} on scan {graph.scan!r}"
    return None


def _score_scan(graph, pairs: list[tuple[dict, dict]], target: str, out: NDHSplitScores) -> None:
    """Check and score one scan's (instance, prediction) pairs, in one `score_ndh` call."""
    index = graph.index
    kept, targets = [], []
    for record, pred in pairs:
        path = target_path(record, target)
        problem = _reference_problem(graph, record, path)
        if problem is not None:
            label = ndh_label(record, record["_index"])
            out.dead.append(_refused(pred, "reference", f"instance {label} of {record['_source']}: {problem}"))
            continue
        unknown = next((v for v in pred["path"] if v not in index), None)
        if unknown is not None:
            why = f"viewpoint {unknown!r} is not an included viewpoint of scan {graph.scan!r}"
            out.dead.append(_refused(pred, "viewpoint", why))
            continue
        if pred["path"][0] != path[0]:
            why = f"trajectory starts at {pred['path'][0]!r} but the {target} path starts at {path[0]!r}"
            out.dead.append(_refused(pred, "start", why))
            continue
        kept.append((record, pred))
        targets.append(graph.indices(path))
    if not kept:
        return
    queries = [graph.indices(p["path"]) for _, p in kept]
    bad = first_non_edges(graph.adjacent, *flat_indices(queries))
    for (_, pred), k in zip(kept, bad.tolist()):
        if k >= 0:
            u, v = pred["path"][k], pred["path"][k + 1]
            why = (
                f"trajectory moves from {u!r} to {v!r} (step {k}), but the navigation graph of scan "
                f"{graph.scan!r} has no edge between them"
            )
            out.dead.append(_refused(pred, EDGE, why))
    good = np.flatnonzero(bad < 0).tolist()
    if not good:
        return
    scores = score_ndh(
        graph.distances,
        [targets[i] for i in good],
        np.asarray([graph.idx(kept[i][0]["planner_path"][-1]) for i in good], np.int64),
        [graph.indices(kept[i][0]["end_panos"]) for i in good],
        [queries[i] for i in good],
    )
    columns = {
        "instr_id": [kept[i][0]["instr_id"] for i in good],
        "scan": [graph.scan] * len(good),
        **scores,
        "path": [kept[i][1]["path"] for i in good],
    }
    out.parts.append(pa.table(columns, schema=SPLIT_SCHEMA))
