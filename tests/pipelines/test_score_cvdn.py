"""Scoring CVDN end to end: two agents on val_seen with intervals, paired comparisons and breakdowns of
CVDN's own metrics, versioned episode rows, a non-edge trajectory dead-lettered by the job, the flags that do
not apply refused, and the report's comparison page naming the metrics."""

import json
import re

import pyarrow.parquet as pq
import pytest

from pipelines import report, score
from vlnkit.evaluation.cvdn import EVALUATOR_KEYS
from vlnkit.scoring.cvdn import CVDN_METRICS

pytestmark = pytest.mark.real_data
AGENT = "cvdn/agent_outputs/val-seq2seq-all-trusted_path-40-sample-imagenet_val_seen_iter_100.json"


def run(out, *flags):
    return score.main(["--runner=DirectRunner", f"--output_dir={out}", *flags])


@pytest.fixture(scope="module")
def scored(shared_data, connectivity_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cvdn_score")
    dataset = shared_data / "cvdn" / "val_seen.json"
    instances = json.loads(dataset.read_text())
    walker = [{"inst_idx": r["inst_idx"], "trajectory": [[v, 0.0, 0.0] for v in r["planner_path"]]} for r in instances]
    # The first instance's trajectory jumps from the start to the planner's goal: no edge (when it is no neighbour).
    first = instances[0]
    walker[0]["trajectory"] = [[first["planner_path"][0], 0, 0], [first["planner_path"][-1], 0, 0]]
    (tmp / "walker.json").write_text(json.dumps(walker))
    summary = run(
        tmp / "out",
        f"--dataset={dataset}",
        f"--predictions=seq2seq={shared_data / AGENT}",
        f"--predictions=walker={tmp / 'walker.json'}",
        f"--connectivity_dir={connectivity_dir}",
        "--target_path=trusted",
        "--bootstrap=200",
    )
    return tmp, summary, instances


def test_two_agents_with_intervals_comparisons_and_breakdowns_of_cvdn_metrics(scored, shared_data):
    tmp, summary, instances = scored
    assert summary["options"]["task"] == "cvdn" and summary["options"]["target_path"] == "trusted"
    assert summary["options"]["success_rule"] == "lt" and summary["schema_version"] == "1"
    seq2seq = summary["agents"]["seq2seq"]
    assert seq2seq["count"] == len(instances) == 382
    log = shared_data / "cvdn" / "agent_outputs" / "val-seq2seq-all-trusted_path-40-sample-imagenet-log.csv"
    header, row = [line.split(",") for line in log.read_text().splitlines()[:2]]
    logged = dict(zip(header, row))
    for metric, key in EVALUATOR_KEYS.items():
        assert seq2seq["metrics"][metric] == pytest.approx(float(logged[f"val_seen {key}"]), abs=1e-9), key
    rows = {r["agent"]: r for r in summary["leaderboard"]}
    for metric in ("ops", "gp", "sr", "spl"):
        low, high = rows["seq2seq"][f"{metric}_ci"]
        assert low <= seq2seq["metrics"][metric] <= high
    compared = {(c["metric"], c["a"], c["b"]) for c in summary["comparisons"]}
    assert {("ops", "seq2seq", "walker"), ("gp", "seq2seq", "walker")} <= compared
    assert set(summary["breakdowns"]) == {"scan", "reference_length"}
    leaderboard = (tmp / "out" / "leaderboard.md").read_text()
    assert "| OPS (%) | GP (m) |" in leaderboard and "NE < 3 m to the goal of the trusted path" in leaderboard


def test_episode_rows_are_versioned_and_a_jump_is_a_dead_letter(scored):
    tmp, summary, instances = scored
    schema = pq.read_schema(next((tmp / "out").glob("episodes-*.parquet")))
    assert schema.metadata[b"vlnkit.schema"] == b"cvdn_episode_scores"
    assert schema.metadata[b"vlnkit.schema_version"] == b"1"
    assert set(CVDN_METRICS) <= set(schema.names)
    walker = summary["agents"]["walker"]
    dead = [json.loads(line) for line in (tmp / "out" / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    first = instances[0]
    if len(first["planner_path"]) > 2:  # start and goal are no neighbours: the jump is refused
        (letter,) = dead
        assert letter["stage"] == "rule" and letter["record"] == f"#0 (instr_id={first['inst_idx']})"
        assert re.fullmatch(
            r"trajectory moves from '\w+' to '\w+' \(step 0\), but the navigation graph .*", letter["reason"]
        )
        assert first["planner_path"][0] in letter["reason"] and first["planner_path"][-1] in letter["reason"]
        assert walker["count"] == 381 and walker["without_usable_prediction"] == 1


@pytest.mark.parametrize(
    "flag, message",
    [
        ("--spl_reference=path", "--spl_reference does not apply to CVDN"),
        ("--success_distance=2.0", "--success_distance does not apply to CVDN"),
    ],
)
def test_flags_that_do_not_apply_are_refused(shared_data, connectivity_dir, tmp_path, flag, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        run(
            tmp_path,
            f"--dataset={shared_data / 'cvdn' / 'val_seen.json'}",
            f"--predictions={shared_data / AGENT}",
            f"--connectivity_dir={connectivity_dir}",
            flag,
        )
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_the_comparison_page_names_cvdn_metrics(scored, connectivity_dir):
    tmp, _, _ = scored
    report.main(
        [
            "--runner=DirectRunner",
            f"--inputs={tmp / 'out'}",
            f"--connectivity_dir={connectivity_dir}",
            f"--output_dir={tmp / 'report'}",
            "--bootstrap=100",
            "--baseline=seq2seq",
            "--draw=0",
        ]
    )
    page = (tmp / "report" / "comparison.html").read_text()
    assert "OPS (%)" in page and "GP (m)" in page and "OPS: agent - seq2seq" in page
