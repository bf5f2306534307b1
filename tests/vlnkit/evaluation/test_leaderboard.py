"""The leaderboard: the ranking rule, its CSV/Markdown text (rebuilt from a summary read back from JSON) and
the console's per-language table, on hand-made blocks."""

import csv
import io
import json

import pytest

from vlnkit.evaluation.common import COUNT, METRES, METRICS, RATE, UNITS
from vlnkit.evaluation.leaderboard import (
    LANGUAGE_METRICS,
    OWN,
    OwnMetric,
    aligned,
    language_rows,
    leaderboard,
    leaderboard_options,
    leaderboard_text,
    metric_rows,
    own_metrics,
    write_leaderboard,
)


def block(count, spl, sr, languages=None, unusable=0):
    return {
        "count": count,
        "without_usable_prediction": unusable,
        "metrics": {"spl": spl, "sr": sr, "ne": 2.5, "pl": 10.0},
        "by_language": {
            language: {"count": n, "metrics": {"sr": v, "spl": v / 2, "ndtw": None, "sdtw": v}}
            for language, (n, v) in (languages or {}).items()
        },
    }


def test_ranking_is_spl_then_sr_then_name_with_unscored_agents_last():
    blocks = {
        "b": block(3, 0.5, 0.6),
        "a": block(3, 0.5, 0.6),
        "c": block(3, 0.5, 0.9),
        "d": block(3, None, None),
        "e": block(3, 0.7, 0.1),
    }
    rows = leaderboard(blocks)
    assert [r["agent"] for r in rows] == ["e", "c", "a", "b", "d"]
    assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert rows[-1]["spl"] is None and rows[0]["ne"] == 2.5


def test_languages_give_columns_for_every_agent_and_none_where_an_agent_has_no_such_episode():
    blocks = {
        "x": block(4, 0.5, 0.5, {"te-IN": (2, 0.5), "en-US": (2, 1.0)}),
        "y": block(2, 0.2, 0.2, {"te-IN": (2, 0.0)}),
    }
    rows = {r["agent"]: r for r in leaderboard(blocks)}
    assert rows["x"]["sr_en-US"] == 1.0 and rows["x"]["spl_te-IN"] == 0.25
    assert rows["y"]["sr_en-US"] is None and rows["y"]["sr_te-IN"] == 0.0
    assert sum(k.endswith("_te-IN") for k in rows["y"]) == len(LANGUAGE_METRICS)


def test_text_is_the_same_from_rows_read_back_from_json_and_holds_intervals_and_ties():
    blocks = {"x": block(4, 0.5, 0.5, {"hi-IN": (4, 0.5)}), "y": block(4, 0.25, 0.25, {"hi-IN": (4, 0.25)})}
    rows = leaderboard(blocks)
    for r, tie in zip(rows, (False, True)):
        r.update({"sr_ci": [0.125, 0.875], "spl_ci": None, "tied_with_above": tie})
    summary = {"options": {"success_distance": 3.0, "success_rule": "lt"}, "bootstrap": {"bootstrap": 200}}
    options = leaderboard_options(summary)
    csv_text, md = leaderboard_text(rows, options)
    again = json.loads(json.dumps(rows, sort_keys=True))  # summary.json's rows, keys sorted
    assert leaderboard_text(again, options) == (csv_text, md)
    lines = md.splitlines()
    assert lines[0].startswith("Success: NE < 3.0 m") and "(200 replicates, unit: episode)" in lines[2]
    assert lines[-2].startswith("| 1 | x | 4 | 0 | 50.00 [12.50, 87.50] | 50.00 | ")
    assert lines[-1].startswith("| \u22482 | y |") and lines[-1].endswith("| 25.00 | 12.50 | n/a | 25.00 |")
    assert "SR hi-IN (%)" in lines[4]
    table = list(csv.DictReader(io.StringIO(csv_text)))
    assert table[1]["sr_ci"] == "0.125;0.875" and table[1]["spl_ci"] == "" and table[1]["tied_with_above"] == "True"
    assert table[0]["ndtw_hi-IN"] == "" and float(table[0]["spl"]) == 0.5


def test_written_files_are_the_text(tmp_path):
    summary = {"options": {"success_distance": 3.0}, "leaderboard": leaderboard({"a": block(1, 1.0, 1.0)})}
    write_leaderboard(str(tmp_path), summary)
    csv_text, md = leaderboard_text(summary["leaderboard"], summary["options"])
    assert (tmp_path / "leaderboard.csv").read_text() == csv_text and (tmp_path / "leaderboard.md").read_text() == md


def test_language_rows_per_agent_in_leaderboard_order_and_none_without_languages():
    blocks = {
        "x": block(4, 0.2, 0.2, {"te-IN": (3, 0.5), "en-US": (1, 1.0)}),
        "y": block(3, 0.9, 0.9, {"te-IN": (3, 0.0)}),
    }
    summary = {"agents": blocks, "leaderboard": leaderboard(blocks)}
    rows = language_rows(summary)
    assert rows[0] == ["language", "agent", "episodes", "SR (%)", "SPL (%)", "NDTW (%)", "SDTW (%)"]
    assert rows[1:] == [
        ["en-US", "x", "1", "100.00", "50.00", "n/a", "100.00"],
        ["te-IN", "y", "3", "0.00", "0.00", "n/a", "0.00"],  # y ranks first
        ["te-IN", "x", "3", "50.00", "25.00", "n/a", "50.00"],
    ]
    one = {"agents": {"x": blocks["x"]}, "leaderboard": leaderboard({"x": blocks["x"]})}
    assert language_rows(one)[0][:2] == ["language", "episodes"] and len(language_rows(one)) == 3
    plain = {"agents": {"x": block(1, 0.1, 0.1)}, "leaderboard": []}
    assert language_rows(plain) == []
    text = aligned(rows).splitlines()
    assert len({len(line) for line in text}) == 1 and text[1].split() == ["-" * len(h) for h in rows[0]]


def test_own_metrics_come_from_the_summary_with_their_labels_and_units():
    """A task's own metric is a column only where its summary declares it for the leaderboard, under its label,
    in its unit (a rate in %, metres as given), with its interval; rebuilt from JSON the same."""
    own = [
        {"metric": "hit", "label": "HIT RATE", "unit": RATE, "leaderboard": True},
        {"metric": "gap", "label": "GAP", "unit": METRES, "leaderboard": True},
        {"metric": "moves", "label": "MOVES", "unit": COUNT, "leaderboard": False},
    ]
    blocks = {"a": block(2, 0.5, 0.5), "b": block(2, 0.25, 0.5)}
    for b, hit in zip(blocks.values(), (0.25, 0.75)):
        b["metrics"].update({"hit": hit, "gap": 1.5, "moves": 4.0})
    static = {"task": {OWN: own}}
    rows = leaderboard(blocks, own_metrics(static))
    assert "hit" in rows[0] and "gap" in rows[0] and "moves" not in rows[0]
    assert "hit" not in leaderboard(blocks)[0]  # without the declaration, no column: no table of them here
    rows[0]["hit_ci"], rows[0]["sr_ci"] = [0.125, 0.5], [0.25, 0.75]
    summary = json.loads(json.dumps({"options": {"success_distance": 3.0}, "leaderboard": rows, **static}))
    _, md = leaderboard_text(summary["leaderboard"], leaderboard_options(summary))
    head, _, first, second = md.splitlines()[-4:]  # two agents: a (SPL 50%) first
    assert head.endswith("| OSR (%) | HIT RATE (%) | GAP (m) |")
    assert first.endswith("| 25.00 [12.50, 50.00] | 1.50 |") and second.endswith("| 75.00 | 1.50 |")
    assert metric_rows({"moves": 4.0, "hit": 0.25}, own=own_metrics(static)) == [("MOVES", 4.0), ("HIT RATE (%)", 25.0)]


def test_the_shared_metrics_units_are_declared_once_and_a_unit_is_one_of_three():
    assert set(UNITS) == set(METRICS) and set(UNITS.values()) == {RATE, METRES}
    with pytest.raises(ValueError, match="unit must be one of"):
        OwnMetric("x", "X", "km")
