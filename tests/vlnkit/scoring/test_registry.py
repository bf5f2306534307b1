"""The registry picks one task per run from what its dataset files hold: a continuous layout the input
checks found first (without reading a record), then a task's own `detect`, then the records' format."""

import json

import pytest

from vlnkit.scoring.registry import TASKS, task_of_files
from vlnkit.scoring.task import R2R_TASK
from vlnkit.scoring.vlnce import VLNCE


def test_every_dataset_the_score_job_reads_is_a_registered_task():
    assert set(TASKS) == {"r2r", "reverie", "cvdn", "vlnce"} and TASKS["vlnce"] is VLNCE


def test_a_continuous_layout_takes_the_run_without_reading_a_record(tmp_path):
    episodes = tmp_path / "missing.json.gz"  # never opened: its layout, as the checks found it, decides
    r2r = tmp_path / "r2r.json"
    r2r.write_text(json.dumps([{"path_id": 1, "instructions": ["go"]}]))
    assert task_of_files([str(episodes)], {str(episodes): "episodes"}) is VLNCE
    assert task_of_files([str(episodes), str(r2r)], {str(episodes): "episodes", str(r2r): None}) is VLNCE
    assert task_of_files([str(r2r)], {str(r2r): None}) is R2R_TASK
    assert task_of_files([str(r2r)]) is R2R_TASK


def test_vlnce_options_are_the_continuous_flags():
    class Args:
        dtw, fastdtw_rules, ce_reference, goal_distance, ce_gt = "fastdtw", "python", "reference_path", None, None

    assert VLNCE.options_of(Args, []).to_dict() == {
        "dtw": "fastdtw",
        "fastdtw_rules": "python",
        "ce_reference": "reference_path",
        "goal_distance": None,
        "ce_gt": "auto",
    }
    Args.dtw = "soft"
    with pytest.raises(ValueError, match="--dtw must be one of"):
        VLNCE.options_of(Args, [])


def test_a_task_says_how_each_metric_it_adds_is_shown():
    """A metric a task adds without its label and unit is refused where the task is declared (it would be
    shown in the wrong scale); every registered task says them, and its summary block carries them."""
    from vlnkit.evaluation.common import METRICS, RATE
    from vlnkit.evaluation.leaderboard import OWN, OwnMetric
    from vlnkit.evaluation.schemas import EPISODE_SCORES
    from vlnkit.scoring.task import Task, TaskOptions

    with pytest.raises(ValueError, match=r"own_metrics must say, in order, its metrics \['hit'\], got \[\]"):
        Task("x", ("x",), EPISODE_SCORES, (*METRICS, "hit"))
    task = Task("x", ("x",), EPISODE_SCORES, (*METRICS, "hit"), own_metrics=(OwnMetric("hit", "HIT", RATE, True),))
    assert task.leaderboard_extra == ("hit",)
    assert task.describe(TaskOptions())[OWN] == [{"metric": "hit", "label": "HIT", "unit": "%", "leaderboard": True}]
    for t in TASKS.values():
        assert [o.metric for o in t.own_metrics] == [m for m in t.metrics if m not in METRICS]
