"""The task seam holds: a task declared here only (its detection, rule, own column with its label and unit,
counter, schema, success line and license note) is scored end to end by the score job, with no edit of any
other module.

The toy task: R2R records marked `"stop_exactly": true`, where success is stopping on the goal viewpoint
itself (not within d_th of it), with an own column `exact` (a rate, labelled "EXACT STOP" on the
leaderboard and in the console), an own column `gap` (metres from the stop to the goal, in the console only)
and a per-agent count of exact stops.
"""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import score
from vlnkit.evaluation.common import METRES, METRICS, RATE
from vlnkit.evaluation.leaderboard import OwnMetric
from vlnkit.evaluation.schemas import task_episode_scores
from vlnkit.scoring import registry
from vlnkit.scoring.task import Decision, Task

TOY_SCHEMA = task_episode_scores(
    "toy_episode_scores",
    1,
    [pa.field("exact", pa.float64(), nullable=True), pa.field("gap", pa.float64(), nullable=True)],
    {"exact": "1 if the agent stopped on the goal viewpoint itself, else 0", "gap": "metres from the stop to the goal"},
)
TOY_OWN = (OwnMetric("exact", "EXACT STOP", RATE, leaderboard=True), OwnMetric("gap", "GAP", METRES))


def toy_rule(pairs, context) -> Decision:
    goals = pairs.reference_nodes.values[pairs.reference_nodes.offsets[1:] - 1]
    exact = (pairs.last_nodes() == goals).astype(np.float64)
    gap = pairs.distance(pairs.last_nodes(), goals)
    columns = {"exact": exact, "gap": gap}
    return Decision(success=exact, counts={"exact_stops": pairs.agent[exact > 0]}, columns=columns)


def toy_success(options: dict) -> str:
    return "Success: the agent stops on the goal viewpoint itself (toy task)."


TOY = Task(
    "toy",
    ("toy",),
    TOY_SCHEMA,
    (*METRICS, "exact", "gap"),
    decide=toy_rule,
    counters=("exact_stops",),
    own_metrics=TOY_OWN,
    detect=lambda record: record.get("stop_exactly") is True,
    success=toy_success,
    license=("Toy (this test's)", "CC0: made up by this test"),
)


def test_a_task_declared_in_a_test_is_scored_end_to_end(shared_data, connectivity_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(registry.TASKS, TOY.name, TOY)
    records = json.loads((shared_data / "r2r" / "R2R_val_seen.json").read_text())[:60]
    dataset = tmp_path / "toy.json"
    dataset.write_text(json.dumps([{**r, "stop_exactly": True} for r in records]))
    predictions, expected = [], {}
    for n, r in enumerate(records):
        # Every third record's agents stop one viewpoint short of the goal (when the path has two or more).
        path = r["path"][:-1] if n % 3 == 0 and len(r["path"]) > 1 else r["path"]
        for k in range(len(r["instructions"])):
            iid = f"{r['path_id']}_{k}"
            predictions.append({"instr_id": iid, "trajectory": [[v, 0.0, 0.0] for v in path]})
            expected[iid] = float(path[-1] == r["path"][-1])
    (tmp_path / "preds.json").write_text(json.dumps(predictions))
    out = tmp_path / "out"

    summary = score.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={out}",
            f"--dataset={dataset}",
            f"--predictions={tmp_path / 'preds.json'}",
            f"--connectivity_dir={connectivity_dir}",
            "--bootstrap=0",
        ]
    )

    assert summary["options"]["task"] == "toy" and summary["task"]["success"] == toy_success({})
    assert summary["count"] == len(expected) and summary["agents"]["preds"]["exact_stops"] == sum(expected.values())
    assert summary["metrics"]["sr"] == pytest.approx(sum(expected.values()) / len(expected))
    rows = pq.read_table(list(out.glob("episodes-*.parquet"))).to_pylist()
    assert pq.read_schema(next(out.glob("episodes-*.parquet"))).metadata[b"vlnkit.schema"] == b"toy_episode_scores"
    assert {r["instr_id"]: (r["exact"], r["sr"]) for r in rows} == {i: (e, e) for i, e in expected.items()}
    board = (out / "leaderboard.md").read_text().splitlines()
    assert board[0] == toy_success({})
    # Its own metric on the leaderboard, under its own label, in its own unit (a rate: in %); `gap` not shown.
    (head,) = [line for line in board if line.startswith("| rank |")]
    assert head.endswith("| OSR (%) | EXACT STOP (%) |") and "GAP" not in head
    exact_cell = board[-1].rsplit("|", 2)[1].strip()
    assert exact_cell == f"{100 * sum(expected.values()) / len(expected):.2f}"
    assert pq.read_table(list(out.glob("episodes-*.parquet")), columns=["gap"])["gap"].null_count == 0
    # The console's table shows both under their labels and units.
    console = capsys.readouterr().out
    assert "EXACT STOP (%)" in console and "GAP (m)" in console
    card = (out / "README.md").read_text().splitlines()  # the inputs table: | `file` | bytes | sha256 | ...
    (row,) = [line for line in card if line.startswith(f"| `{dataset}` | ")]
    assert row.endswith("| Toy (this test's) | CC0: made up by this test |")
