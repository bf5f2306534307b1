"""The leaderboard: the ranking rule, its CSV/Markdown text (rebuilt from a summary read back from JSON) and
the console's per-language table, on hand-made blocks."""

import csv
import io
import json

from vlnkit.evaluation.leaderboard import (
    LANGUAGE_METRICS,
    aligned,
    language_rows,
    leaderboard,
    leaderboard_options,
    leaderboard_text,
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
