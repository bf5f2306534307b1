"""Scoring continuous environments (VLN-CE) end to end, on the real R2R-CE v1-2 val_unseen split.

The issue's acceptance run (two CWP agents given as their simulator result files) must give each agent's
means equal to its authors' `stats_ckpt_0_val_unseen.json`, with intervals and the paired comparison, with
and without `--bootstrap_unit=path`. Agents given as positions are checked against independent computations:
a ground-truth path scores nDTW 1 and its own length, exact DTW equals a plain O(nm) DTW and `--dtw=fastdtw`
the `fastdtw` package, on the 420 real trajectories of a third-party agent. Malformed records of every
continuous kind are dead letters with their reasons; files a job does not take are refused with one line.
"""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipelines import score
from tests.oracles.fastdtw_rules import plain_dtw
from vlnkit.comparison.episodes import compare
from vlnkit.continuous import read_episodes
from vlnkit.io.exactsum import exact_mean, exact_sum

pytestmark = pytest.mark.real_data

SPLIT = "vlnce/R2R_VLNCE_v1-2_preprocessed/val_unseen/val_unseen.json.gz"
CWP = "vlnce/cwp_results/{}/stats_ep_ckpt_0_val_unseen_r0_w1.json"
AUTHORS = "vlnce/cwp_results/{}/stats_ckpt_0_val_unseen.json"
MLN = "vlnce/third_party_positions/mln_ce_val_unseen_v1-2_positions.json"
AUTHOR_KEYS = {"steps_taken": "steps", "distance_to_goal": "ne", "success": "sr", "oracle_success": "osr",
               "path_length": "pl", "collisions": "collisions", "spl": "spl", "ndtw": "ndtw"}  # fmt: skip


def run(out, *flags):
    return score.main(["--runner=DirectRunner", f"--output_dir={out}", *flags])


def rows(out) -> list[dict]:
    return pq.read_table(sorted(out.glob("episodes-*-of-*.parquet"))).to_pylist()


def acceptance_flags(shared_data) -> list[str]:
    """The issue's command: the dataset and the two agents' result files, nothing else."""
    d = lambda p: str(shared_data / p)  # noqa: E731
    return [f"--dataset={d(SPLIT)}", f"--predictions=cma={d(CWP.format('cma'))}",
            f"--predictions=vlnbert={d(CWP.format('vlnbert'))}"]  # fmt: skip


@pytest.fixture(scope="module")
def accepted(shared_data, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ce_acceptance")
    by_episode = run(tmp / "episode", *acceptance_flags(shared_data))
    by_path = run(tmp / "path", *acceptance_flags(shared_data), "--bootstrap_unit=path")
    return {"episode": (tmp / "episode", by_episode), "path": (tmp / "path", by_path)}


@pytest.mark.parametrize("agent", ["cma", "vlnbert"])
def test_the_acceptance_run_gives_the_authors_means(accepted, shared_data, agent):
    out, summary = accepted["episode"]
    authors = json.loads((shared_data / AUTHORS.format(agent)).read_text())
    per_episode = json.loads((shared_data / CWP.format(agent)).read_text())
    block = summary["agents"][agent]
    assert block["count"] == 1839 and block["missing_predictions"] == 0 and summary["dead_letters"] == 0
    for key, metric in AUTHOR_KEYS.items():
        values = np.array([float(e[key]) for e in per_episode.values()])
        # the authors summed in file order; ours is the exact sum, correctly rounded: a few ulps apart at most
        assert block["metrics"][metric] == pytest.approx(authors[key], rel=1e-13, abs=1e-15), key
        assert block["metrics"][metric] == exact_mean(exact_sum(values), len(values)), key
    assert block["rows_from"] == {"positions": 0, "results": 1839, "both": 0}
    assert block["inputs"] == {str(shared_data / CWP.format(agent)): "vlnce_stats"}
    assert "cls" not in block["metrics"] and "sdtw" not in block["metrics"]  # a result file has neither


def test_the_acceptance_run_has_intervals_comparisons_and_breakdowns(accepted):
    out, summary = accepted["episode"]
    board = {r["agent"]: r for r in summary["leaderboard"]}
    assert [r["agent"] for r in summary["leaderboard"]] == ["vlnbert", "cma"]  # SPL 0.387 > 0.355
    for row in board.values():
        for m in ("sr", "spl", "ndtw", "ne", "pl", "steps"):
            low, high = row[f"{m}_ci"]
            assert low < row[m] < high if m in ("sr", "spl", "ndtw", "ne") else low <= high
    sr = next(c for c in summary["comparisons"] if c["metric"] == "sr")
    assert (sr["a"], sr["b"], sr["episodes"]) == ("cma", "vlnbert", 1839)
    assert sr["difference"] == pytest.approx(board["cma"]["sr"] - board["vlnbert"]["sr"], abs=1e-12)
    assert {"scan", "reference_length"} <= set(summary["breakdowns"]) and "language" not in summary["breakdowns"]
    text = (out / "leaderboard.md").read_text()
    assert "each agent's own simulator results" in text and "| 1 | vlnbert | 1839 | 0 | 43.83 [" in text
    table = rows(out)
    assert len(table) == 3678 and {r["sources"] for r in table} == {"results"}
    assert all(r["positions"] is None for r in table)
    meta = pq.read_schema(sorted(out.glob("episodes-*.parquet"))[0]).metadata
    assert meta[b"vlnkit.schema"] == b"continuous_episode_scores" and meta[b"vlnkit.schema_version"] == b"1"


def test_rows_are_joined_by_episode_id_and_carry_the_r2r_instr_id(accepted, shared_data):
    out, _ = accepted["episode"]
    episodes, _ = read_episodes(str(shared_data / SPLIT))
    instr = dict(zip(episodes.episode_id.tolist(), episodes.instr_id.tolist()))
    trajectory = dict(zip(episodes.episode_id.tolist(), episodes.trajectory_id.tolist()))
    cma = json.loads((shared_data / CWP.format("cma")).read_text())
    for r in rows(out):
        assert r["instr_id"] == instr[r["episode_id"]] == f"{trajectory[r['episode_id']]}_{r['instr_id'][-1]}"
        if r["agent"] == "cma":
            assert r["sr"] == cma[str(r["episode_id"])]["success"] and r["spl"] == cma[str(r["episode_id"])]["spl"]


def test_the_path_unit_resamples_trajectories(accepted):
    """Three instructions per trajectory: the path unit draws one weight per trajectory. Its comparison
    equals the library's over the episode rows with unit="path", and its intervals are wider."""
    out, summary = accepted["path"]
    _, by_episode = accepted["episode"]
    assert summary["bootstrap"]["bootstrap_unit"] == "path"
    assert [r["metrics"] for r in summary["agents"].values()] == [r["metrics"] for r in by_episode["agents"].values()]
    table = rows(out)
    columns = {k: [r[k] for r in table] for k in ("agent", "instr_id", "scan", "sr", "spl")}
    mine = {(c["metric"]): c for c in summary["comparisons"] if c["metric"] in ("sr", "spl")}
    for c in compare(columns, ["sr", "spl"], unit="path", replicates=1000, seed=0):
        assert c["difference"] == pytest.approx(mine[c["metric"]]["difference"], abs=1e-12)
        assert c["interval"] == pytest.approx(mine[c["metric"]]["interval"], abs=1e-8)

    def width(s, m):
        return sum(r[f"{m}_ci"][1] - r[f"{m}_ci"][0] for r in s["leaderboard"])

    assert all(width(summary, m) > width(by_episode, m) for m in ("sr", "spl", "ndtw"))


# ----------------------------------------------------------------------------- agents given as positions
@pytest.fixture(scope="module")
def positioned(shared_data, tmp_path_factory):
    """The gt paths as an agent, the third-party agent's 420 trajectories, and CMA's results with them."""
    tmp = tmp_path_factory.mktemp("ce_positions")
    gt = json.loads(gzip.decompress((shared_data / SPLIT.replace(".json.gz", "_gt.json.gz")).read_bytes()))
    (tmp / "gt.json").write_text(json.dumps({k: v["locations"] for k, v in gt.items()}))
    mln, cma = shared_data / MLN, shared_data / CWP.format("cma")
    summary = run(
        tmp / "out", f"--dataset={shared_data / SPLIT}", f"--predictions=gt={tmp / 'gt.json'}",
        f"--predictions=mln={mln}", f"--predictions=both={cma},{mln}", "--goal_distance=euclidean", "--bootstrap=0",
    )  # fmt: skip
    return {"out": tmp / "out", "summary": summary, "gt": gt, "mln": json.loads(mln.read_text())}


def collapsed(points) -> np.ndarray:
    p = np.asarray(points, dtype=float)
    keep = np.r_[True, np.any(p[1:] != p[:-1], axis=1)]
    return p[keep]


def test_a_gt_path_given_as_positions_scores_ndtw_1_and_its_own_length(positioned):
    table = [r for r in rows(positioned["out"]) if r["agent"] == "gt"]
    assert len(table) == 1839
    for r in table:
        locations = np.asarray(positioned["gt"][str(r["episode_id"])]["locations"], dtype=float)
        assert r["ndtw"] == 1.0 and r["dtw"] == 0.0 and r["cls"] == pytest.approx(1.0, abs=1e-12)
        length = float(np.linalg.norm(np.diff(collapsed(locations), axis=0), axis=1).sum())
        assert r["pl"] == pytest.approx(length, rel=1e-12, abs=1e-12)


def test_exact_dtw_equals_a_plain_dtw_on_real_trajectories(positioned):
    table = [r for r in rows(positioned["out"]) if r["agent"] == "mln"]
    assert len(table) == 420 and positioned["summary"]["agents"]["mln"]["missing_predictions"] == 1839 - 420
    for r in table:
        gt = np.asarray(positioned["gt"][str(r["episode_id"])]["locations"], dtype=float)
        dtw = plain_dtw(collapsed(positioned["mln"][str(r["episode_id"])]), gt)
        assert r["dtw"] == pytest.approx(dtw, rel=1e-9, abs=1e-9)
        assert r["ndtw"] == pytest.approx(math.exp(-dtw / (3.0 * len(gt))), abs=1e-9)


def test_results_and_positions_of_one_agent_combine_and_their_difference_is_stated(positioned):
    summary = positioned["summary"]
    both = summary["agents"]["both"]
    assert both["rows_from"] == {"positions": 0, "results": 1839 - 420, "both": 420}
    compared = both["results_vs_positions"]
    assert set(compared) == {"ndtw", "pl", "steps"} and compared["ndtw"]["episodes"] == 420
    ours = {r["episode_id"]: r for r in rows(positioned["out"]) if r["agent"] == "mln"}
    mine = {r["episode_id"]: r for r in rows(positioned["out"]) if r["agent"] == "both"}
    worst = max(abs(mine[e]["ndtw"] - ours[e]["ndtw"]) for e in ours)  # the file's nDTW is the one reported
    assert compared["ndtw"]["max_abs_difference"] == worst
    for e, r in ours.items():
        assert mine[e]["sdtw"] == pytest.approx(mine[e]["sr"] * r["ndtw"], abs=1e-15)  # file's success x our nDTW
        assert mine[e]["cls"] == r["cls"] and mine[e]["sources"] == "positions+results"


def test_euclidean_bounds_are_named_so_everywhere_and_ranked_after_geodesic_agents(positioned):
    summary, out = positioned["summary"], positioned["out"]
    assert [r["agent"] for r in summary["leaderboard"]] == ["both", "gt", "mln"]
    gt = summary["agents"]["gt"]["metrics"]
    assert gt["sr"] is None and gt["sr_euclidean"] == 1.0 and 0 < gt["ne_euclidean"] < 3
    for r in rows(out):
        if r["agent"] == "gt":  # the straight line to the goal is never longer than the walk
            assert r["ne_euclidean"] <= 3.0 and r["spl_euclidean"] <= 1.0
    md = (out / "leaderboard.md").read_text()
    assert "SR_EUCLIDEAN (%)" in md and "*_EUCLIDEAN: straight-line bounds" in md
    assert "sr_euclidean" in (out / "leaderboard.csv").read_text().splitlines()[0].split(",")


def test_fastdtw_mode_equals_the_fastdtw_package(shared_data, tmp_path):
    from fastdtw.fastdtw import fastdtw  # the pure-Python module, the one a modern pip installs

    summary = run(
        tmp_path / "out", f"--dataset={shared_data / SPLIT}", f"--predictions=mln={shared_data / MLN}",
        "--dtw=fastdtw", "--fastdtw_rules=python", "--bootstrap=0",
    )  # fmt: skip
    assert summary["options"]["dtw"] == "fastdtw" and summary["count"] == 420
    mln = json.loads((shared_data / MLN).read_text())
    episodes, _ = read_episodes(str(shared_data / SPLIT))
    row_of = dict(zip(episodes.episode_id.tolist(), range(len(episodes))))
    for r in rows(tmp_path / "out"):
        gt = episodes.gt_locations.path(row_of[r["episode_id"]])
        expected = fastdtw(collapsed(mln[str(r["episode_id"])]), gt, radius=1, dist=lambda a, b: np.linalg.norm(b - a))
        assert r["dtw"] == pytest.approx(expected[0], rel=1e-9, abs=1e-9)


# ----------------------------------------------------------------------------- malformed records
def test_malformed_continuous_records_are_dead_letters_with_reasons(shared_data, tmp_path):
    raw = json.loads(gzip.decompress((shared_data / SPLIT).read_bytes()))
    episodes = raw["episodes"][:6]
    ids = [e["episode_id"] for e in episodes]
    (tmp_path / "six.json.gz").write_bytes(gzip.compress(json.dumps({"episodes": episodes}).encode()))
    gt = json.loads(gzip.decompress((shared_data / SPLIT.replace(".json.gz", "_gt.json.gz")).read_bytes()))
    small_gt = {str(i): gt[str(i)] for i in ids[:5]}  # the sixth episode has no gt entry...
    small_gt["999999"] = gt[str(ids[0])]  # ...and the gt has an episode the file does not
    (tmp_path / "six_gt.json.gz").write_bytes(gzip.compress(json.dumps(small_gt).encode()))
    locations = {i: gt[str(i)]["locations"] for i in ids}
    positions = {str(ids[0]): locations[ids[0]], str(ids[1]): [[0.0, 0.0, 0.0], [1.0, "2", 3.0]],
                 str(ids[2]): [[0.0, 1.0]], str(ids[3]): [[0.0, float("nan"), 0.0]], "424242": locations[ids[0]]}  # fmt: skip
    (tmp_path / "positions.json").write_text(json.dumps(positions))
    cma = json.loads((shared_data / CWP.format("cma")).read_text())
    results = {str(i): cma[str(i)] for i in ids}
    results[str(ids[1])] = {**results[str(ids[1])], "success": "yes"}
    results[str(ids[2])] = {**results[str(ids[2])], "spl": 1.5}
    (tmp_path / "results.json").write_text(json.dumps(results))
    summary = run(
        tmp_path / "out", f"--dataset={tmp_path / 'six.json.gz'}", f"--predictions=pos={tmp_path / 'positions.json'}",
        f"--predictions=res={tmp_path / 'results.json'}", "--bootstrap=0", "--max_failure_fraction=1",
    )  # fmt: skip
    dead = [json.loads(x) for x in (tmp_path / "out" / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    reasons = {(d["source"].rsplit("/", 1)[-1], d["record"]): d["reason"] for d in dead}
    assert reasons[("six.json.gz", f"episode_id={ids[5]}")].startswith(f"no ground-truth path for episode {ids[5]}")
    assert reasons[("six_gt.json.gz", "episode_id=999999")] == (
        f"ground truth for episode 999999, which {tmp_path / 'six.json.gz'} does not have"
    )
    assert reasons[("positions.json", f"episode_id={str(ids[1])!r}")] == (
        "position 1 must be three finite numbers [x, y, z], got [1.0, '2', 3.0]"
    )
    assert "position 0 must be three finite numbers" in reasons[("positions.json", f"episode_id={str(ids[2])!r}")]
    assert "position 0 must be three finite numbers" in reasons[("positions.json", f"episode_id={str(ids[3])!r}")]
    assert reasons[("positions.json", "episode_id=424242")] == f"no episode 424242 in {tmp_path / 'six.json.gz'}"
    assert (
        reasons[("results.json", f"episode_id={str(ids[1])!r}")]
        == "'success' must be 0 or 1 (or true/false), got 'yes'"
    )
    assert reasons[("results.json", f"episode_id={str(ids[2])!r}")] == "'spl' must be a number in [0, 1], got 1.5"
    assert reasons[("results.json", f"episode_id={ids[5]}")] == (  # its episode was refused: no gt entry
        f"episode {ids[5]} has no usable episode: its dataset record was refused ({tmp_path / 'six.json.gz'}; "
        "see that dead letter)"
    )
    assert len(dead) == summary["dead_letters"] == 9
    assert summary["agents"]["pos"]["count"] == 1 and summary["agents"]["res"]["count"] == 3
    assert summary["reference_episodes"] == 5
    # Every record given is read; an episode whose row was refused at reading had a prediction: not missing.
    assert_counts_add_up(summary, tmp_path / "out")
    assert summary["agents"]["pos"]["predictions_read"] == len(positions) == 5
    assert summary["agents"]["res"]["predictions_read"] == len(results) == 6
    assert summary["agents"]["pos"]["missing_predictions"] == 1  # ids[4]: no row given (ids[5] is no episode)
    assert summary["agents"]["pos"]["without_usable_prediction"] == 4  # and ids[1..3]: refused at reading
    assert summary["agents"]["res"]["missing_predictions"] == 0
    assert summary["agents"]["res"]["without_usable_prediction"] == 2


def assert_counts_add_up(summary: dict, out) -> None:
    """The identity every score summary keeps, per agent: records read = rows scored + rows_from both (two
    records, one row) + dead letters of records (dead letters - file_dead_letters); and missing episodes are
    those no record of the agent named (the missing list, checked against the agent's dead letters)."""
    dead = [json.loads(x) for x in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    for agent, block in summary["agents"].items():
        both = block.get("rows_from", {}).get("both", 0)
        records_dead = block["dead_letters"] - block["file_dead_letters"]
        assert block["predictions_read"] == block["count"] + both + records_dead, (agent, block)
        assert block["missing_predictions"] <= block["without_usable_prediction"], (agent, block)
    files = {d["source"] for d in dead if d["record"] == ""}
    assert sum(b["file_dead_letters"] for b in summary["agents"].values()) <= len(files)


def test_repeated_keys_cut_short_files_and_rows_without_metrics(shared_data, tmp_path):
    raw = json.loads(gzip.decompress((shared_data / SPLIT).read_bytes()))
    gt = json.loads(gzip.decompress((shared_data / SPLIT.replace(".json.gz", "_gt.json.gz")).read_bytes()))
    first, second = raw["episodes"][:4], raw["episodes"][4:8]
    for name, episodes in (("a", first), ("b", second)):
        data = gzip.compress(json.dumps({"episodes": episodes}).encode())
        if name == "b":
            data = data[: len(data) // 2]  # cut short
        (tmp_path / f"{name}.json.gz").write_bytes(data)
        part = {str(e["episode_id"]): gt[str(e["episode_id"])] for e in episodes}
        (tmp_path / f"{name}_gt.json.gz").write_bytes(gzip.compress(json.dumps(part).encode()))
    ids = [e["episode_id"] for e in first + second]
    walk = gt[str(ids[0])]["locations"]
    # One object repeating an episode id: the first entry wins (43 positions), the second is a dead letter.
    text = (
        "{"
        + ", ".join(
            [
                f'"{ids[0]}": {json.dumps(walk)}',
                f'"{ids[1]}": {json.dumps(walk[:2])}',
                f'"{ids[0]}": {json.dumps(walk[:2])}',
            ]
        )
        + "}"
    )
    (tmp_path / "positions.json").write_text(text)
    cma = json.loads((shared_data / CWP.format("cma")).read_text())
    rows = [f'"{i}": {json.dumps(cma[str(i)])}' for i in ids]
    rows.append(f'"{ids[2]}": {json.dumps({**cma[str(ids[2])], "success": 1 - cma[str(ids[2])]["success"]})}')
    rows.append(f'"{ids[3]}": {json.dumps({"steps_taken": 10, "path_length": 2.5})}')  # also a repeat
    (tmp_path / "results.json").write_text("{" + ", ".join(rows) + "}")
    (tmp_path / "bare.json").write_text(json.dumps({str(ids[1]): {"steps_taken": 10, "path_length": 2.5}}))
    summary = run(
        tmp_path / "out", f"--dataset={tmp_path / 'a.json.gz'},{tmp_path / 'b.json.gz'}",
        f"--predictions=pos={tmp_path / 'positions.json'}", f"--predictions=res={tmp_path / 'results.json'}",
        f"--predictions=bare={tmp_path / 'bare.json'}", "--bootstrap=0", "--max_failure_fraction=1",
    )  # fmt: skip
    out = tmp_path / "out"
    dead = [json.loads(x) for x in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    by = {(d["source"].rsplit("/", 1)[-1], d["record"]): d["reason"] for d in dead}
    assert by[("b.json.gz", "")] == (
        "cannot read the episode file (Compressed file ended before the end-of-stream marker was reached)"
    )
    assert (
        by[("positions.json", f"episode_id='{ids[0]}' (entry 2)")]
        == f"episode_id {ids[0]} appears again (entry 0 is kept)"
    )
    assert (
        by[("results.json", f"episode_id='{ids[2]}' (entry 8)")]
        == f"episode_id {ids[2]} appears again (entry 2 is kept)"
    )
    assert (
        by[("results.json", f"episode_id='{ids[3]}' (entry 9)")]
        == f"episode_id {ids[3]} appears again (entry 3 is kept)"
    )
    assert by[("bare.json", f"episode_id={ids[1]}")].startswith("no metric to score: the row gives none of ")
    for i in ids[4:]:  # the cut file's episodes: the agent's rows name the refused file
        assert by[("results.json", f"episode_id={i}")] == (
            f"no episode {i} in the dataset files that could be read: {tmp_path / 'b.json.gz'} was refused whole "
            "(see its dead letter)"
        )
    scored = {(r["agent"], r["episode_id"]): r for r in rows_of(out)}
    assert len(scored[("pos", ids[0])]["positions"]) == len(walk) and scored[("pos", ids[0])]["ndtw"] == 1.0
    assert scored[("res", ids[2])]["sr"] == cma[str(ids[2])]["success"]  # the first entry's, not the repeat's
    assert ("bare", ids[1]) not in scored
    assert summary["agents"]["pos"]["predictions_read"] == 3 and summary["agents"]["res"]["predictions_read"] == 10
    assert summary["agents"]["bare"]["missing_predictions"] == 3  # ids[0], ids[2], ids[3]: no row; ids[1]: refused
    assert summary["agents"]["bare"]["without_usable_prediction"] == 4
    assert_counts_add_up(summary, out)


def rows_of(out) -> list[dict]:
    return pq.read_table(sorted(out.glob("episodes-*-of-*.parquet"))).to_pylist()


def streamvln_result_file(shared_data, path, totals=None) -> dict:
    """CWP-CMA's val_unseen results in StreamVLN's result.json layout: a line per episode, then the aggregate
    line its evaluator appends (means of success, spl, os, ne, and `length`, the episode count); `totals`
    replaces values of that line. Returns the line written."""
    cma = json.loads((shared_data / CWP.format("cma")).read_text())
    lines = [
        json.dumps({"scene_id": "mp3d/x/x.glb", "episode_id": int(i), "success": r["success"], "spl": r["spl"],
                    "os": r["oracle_success"], "ne": r["distance_to_goal"], "steps": r["steps_taken"],
                    "episode_instruction": "Go."})
        for i, r in cma.items()
    ]  # fmt: skip
    mean = lambda key: math.fsum(r[key] for r in cma.values()) / len(cma)  # noqa: E731 (correctly rounded)
    line = {"sucs_all": mean("success"), "spls_all": mean("spl"), "oss_all": mean("oracle_success"),
            "ones_all": mean("distance_to_goal"), "length": len(cma), **(totals or {})}  # fmt: skip
    path.write_text("\n".join(lines) + "\n" + json.dumps(line))  # no newline after it, as StreamVLN writes it
    return line


def test_an_evaluators_own_totals_are_compared_with_its_rows_never_a_dead_letter(shared_data, tmp_path, capsys):
    result = tmp_path / "result.json"
    line = streamvln_result_file(shared_data, result)
    summary = run(
        tmp_path / "out", f"--dataset={shared_data / SPLIT}", f"--predictions=streamvln={result}", "--bootstrap=0"
    )
    assert summary["dead_letters"] == 0 and summary["predictions_read"] == summary["count"] == 1839
    (check,) = summary["file_totals"]
    assert check["verdict"] == "agree exactly" and check["length"] == check["rows"] == 1839
    for key, metric in (("sucs_all", "sr"), ("spls_all", "spl"), ("oss_all", "osr"), ("ones_all", "ne")):
        assert summary["metrics"][metric] == line[key] == check["metrics"][metric]["file"], key  # exactly
    printed = capsys.readouterr().out
    assert f"streamvln: {result}'s own totals agree exactly with its 1839 episode rows" in printed

    line = streamvln_result_file(shared_data, result, {"sucs_all": 0.5, "length": 1840})
    summary = run(
        tmp_path / "off", f"--dataset={shared_data / SPLIT}", f"--predictions=streamvln={result}", "--bootstrap=0"
    )
    (check,) = summary["file_totals"]
    assert summary["dead_letters"] == 0 and check["verdict"] == "differ"
    assert check["metrics"]["sr"]["difference"] == 0.5 - summary["metrics"]["sr"]
    printed = capsys.readouterr().out
    assert "own totals differ from its 1839 episode rows: length 1840; sr 0.5 in the file, 0.406199" in printed


# ----------------------------------------------------------------------------- refused before running
def refusal(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exited:
        score.main(["--runner=DirectRunner", *argv])
    assert exited.value.code == 2
    return capsys.readouterr().err.strip()


def test_inputs_the_job_cannot_score_are_one_line(shared_data, tmp_path, capsys):
    split, cma = shared_data / SPLIT, shared_data / CWP.format("cma")
    r2r, conn = shared_data / "r2r/R2R_val_seen.json", shared_data / "connectivity"
    out = f"--output_dir={tmp_path / 'out'}"
    line = refusal(capsys, out, f"--dataset={r2r}", f"--predictions=cma={cma}", f"--connectivity_dir={conn}")
    assert line.endswith("but --dataset is not a VLN-CE episode file: continuous agents are scored against their "
                         "R2R-CE or RxR-Habitat episodes")  # fmt: skip
    graph_agent = shared_data / "agent_outputs/rszia+rpl2024-final-group9/val_unseen_stop_agent.json"
    line = refusal(capsys, out, f"--dataset={split}", f"--predictions=stop={graph_agent}")
    assert "holds predictions on a navigation graph (viewpoint ids), but --dataset is a VLN-CE episode file" in line
    gt_file = split.parent / "val_unseen_gt.json.gz"
    line = refusal(capsys, out, f"--dataset={split}", f"--predictions=gt={gt_file}")
    assert line.endswith("is a VLN-CE ground-truth file ({episode_id: {locations}}), not agent positions or "
                         "per-episode simulator results (vlnce_inference, positions, path_lines, vlnce_stats, "
                         "result_lines, navid_stats)")  # fmt: skip
    alone = tmp_path / "alone.json.gz"  # an episode file without its ground truth beside it
    alone.write_bytes(split.read_bytes())
    line = refusal(capsys, out, f"--dataset={alone}", f"--predictions=cma={cma}")
    assert "no ground truth beside the episode file" in line and "--ce_reference=reference_path" in line
    line = refusal(capsys, out, f"--dataset={split}", f"--predictions=cma={cma}", f"--ce_gt={cma}")
    assert line.endswith("is not a ground-truth file ({episode_id: {locations}})")
    line = refusal(capsys, out, f"--dataset={split},{r2r}", f"--predictions=cma={cma}")
    assert "is not a VLN-CE episode file, but other --dataset files are" in line


def test_help_lists_the_continuous_flags_with_defaults(capsys):
    with pytest.raises(SystemExit):
        score.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag, default in (("--dtw", "exact"), ("--fastdtw_rules", "compiled"), ("--ce_reference", "gt"),
                          ("--goal_distance", "None"), ("--ce_gt", "None")):  # fmt: skip
        assert flag in text and f"(default: {default})" in text.split(flag, 2)[-1].split("--", 1)[0] + text


def test_an_rxr_habitat_dataset_scores_by_language(shared_data, tmp_path, capsys):
    """RxR-Habitat files made from R2R-CE (`vlnkit.fixtures.rxr_habitat`), an agent walking every gt path
    as an RxR-Habitat submission: every episode nDTW 1, summaries and leaderboard per language."""
    from vlnkit.fixtures.rxr_habitat import write_rxr_habitat

    dataset, gt_path = write_rxr_habitat(str(shared_data / SPLIT), str(tmp_path / "rxr"))
    episodes, _ = read_episodes(dataset)
    with open(tmp_path / "walk.jsonl", "w") as f:
        for row, iid in enumerate(episodes.instruction_id.tolist()):
            f.write(json.dumps({"instruction_id": iid, "path": episodes.gt_locations.path(row).tolist()}) + "\n")
    summary = run(tmp_path / "out", f"--dataset={dataset}", f"--predictions=walk={tmp_path / 'walk.jsonl'}",
                  "--bootstrap=0")  # fmt: skip
    assert summary["count"] == 1839 and summary["metrics"]["ndtw"] == 1.0 and summary["ground_truth"] == [gt_path]
    languages = summary["by_language"]
    assert sum(b["count"] for b in languages.values()) == 1839 and set(languages) <= {
        "en-IN",
        "en-US",
        "hi-IN",
        "te-IN",
    }
    assert "ndtw_hi-IN" in summary["leaderboard"][0]
    table = rows(tmp_path / "out")
    assert {r["instr_id"] for r in table} == {str(i) for i in episodes.instruction_id.tolist()}
    line = refusal(capsys, f"--output_dir={tmp_path / 'p'}", f"--dataset={dataset}",
                   f"--predictions=walk={tmp_path / 'walk.jsonl'}", "--bootstrap_unit=path")  # fmt: skip
    assert line.endswith("an RxR-Habitat dataset's are instruction ids: use --bootstrap_unit=episode")
