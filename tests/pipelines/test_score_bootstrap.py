"""The score job's bootstrap: intervals, paired comparisons, tie marks and breakdowns."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq
import pytest

from pipelines import score
from vlnkit.comparison.episodes import agent_sums, breakdown, compare, length_buckets, length_labels
from vlnkit.comparison.paired import HEADLINE
from vlnkit.evaluation.common import METRICS
from vlnkit.fixtures.grid import write_environment

FOLDER = "agent_outputs/rszia+rpl2024-final-group9"


def run(out, *flags):
    return score.main(["--runner=DirectRunner", f"--output_dir={out}", "--max_failure_fraction=1", *flags])


def episode_table(out):
    return pq.read_table(sorted(out.glob("episodes-*-of-*.parquet")))


@pytest.fixture(scope="module")
def val_unseen(tmp_path_factory, shared_data, connectivity_dir):
    """shortest, an identical copy of it, and random on R2R val_unseen, 1000 replicates."""
    out = tmp_path_factory.mktemp("bootstrap") / "out"
    short = shared_data / FOLDER / "val_unseen_shortest_agent.json"
    rand = shared_data / FOLDER / "val_unseen_random_agent.json"
    summary = run(
        out,
        f"--predictions=short={short}",
        f"--predictions=copy={short}",
        f"--predictions=rand={rand}",
        f"--dataset={shared_data / 'r2r' / 'R2R_val_unseen.json'}",
        f"--connectivity_dir={connectivity_dir}",
        "--seed=7",
        "--bootstrap=1000",
    )
    return out, summary


def test_intervals_equal_the_library_on_the_episode_rows(val_unseen):
    out, summary = val_unseen
    table = episode_table(out).select(["agent", "instr_id", "scan", *METRICS])
    expected = agent_sums(table, METRICS, replicates=1000, seed=7)
    for row in summary["leaderboard"]:
        for m in METRICS:
            assert row[f"{m}_ci"] == expected[row["agent"]].interval(m, 0.95), (row["agent"], m)
    rand = next(r for r in summary["leaderboard"] if r["agent"] == "rand")
    assert rand["sr_ci"][0] < rand["sr"] < rand["sr_ci"][1]
    assert summary["leaderboard"][0]["sr_ci"] == [1.0, 1.0]  # the shortest-path agent always succeeds
    # Comparisons and breakdowns too: the job's per-bucket sums merged equal the one-process computation.
    assert summary["comparisons"] == compare(table, METRICS, replicates=1000, seed=7)
    by_scan = breakdown(table, "scan", HEADLINE, replicates=1000, seed=7)
    by_scan.sort(key=lambda r: (r["group"], r["agent"]))  # the summary's order: group, then agent name
    assert summary["breakdowns"]["scan"] == by_scan and len({r["group"] for r in by_scan}) == 11


def test_intervals_agree_with_an_independent_numpy_bootstrap(val_unseen):
    out, summary = val_unseen
    rows = {r["agent"]: r for r in summary["leaderboard"]}
    table = episode_table(out).to_pandas()
    rng = np.random.default_rng(0)
    for agent, metric in [("rand", "sr"), ("rand", "spl"), ("rand", "ndtw"), ("rand", "ne"), ("short", "ndtw")]:
        x = table.loc[table.agent == agent, metric].to_numpy(dtype=float)
        x = x[np.isfinite(x)]
        means = x[rng.integers(0, len(x), size=(1000, len(x)))].mean(axis=1)  # classical resampling of episodes
        low, high = np.quantile(means, [0.025, 0.975])
        width = high - low
        assert width > 0
        # Monte-Carlo error of a 2.5% quantile from 1000 replicates is about 0.05 widths; allow 0.15.
        got = rows[agent][f"{metric}_ci"]
        assert abs(got[0] - low) < 0.15 * width and abs(got[1] - high) < 0.15 * width, (agent, metric, got, low, high)


def test_identical_copy_is_no_different_and_shortest_beats_random(val_unseen):
    _, summary = val_unseen
    rows = {(r["a"], r["b"], r["metric"]): r for r in summary["comparisons"]}
    assert len(rows) == 3 * len(METRICS)
    for m in METRICS:
        same = rows[("short", "copy", m)]
        assert same["difference"] == 0.0 and same["interval"] == [0.0, 0.0], m
        assert same["p_value"] == 1.0 and not same["significant"] and same["episodes"] > 2000
    for m in HEADLINE:
        r = rows[("short", "rand", m)]
        assert r["significant"] and r["p_holm"] < 0.05, m
        assert (r["difference"] < 0) == (m == "ne"), m  # shortest is better: higher rates, lower distance
        assert r["interval"][0] <= r["difference"] <= r["interval"][1]
    ties = {r["agent"]: r["tied_with_above"] for r in summary["leaderboard"]}
    assert ties == {"copy": False, "short": True, "rand": False} or ties == {
        "short": False,
        "copy": True,
        "rand": False,
    }
    board = json.dumps(summary["leaderboard"])
    assert "sr_ci" in board


def test_leaderboard_files_show_intervals_and_ties(val_unseen):
    out, summary = val_unseen
    md = (out / "leaderboard.md").read_text()
    assert "bootstrap intervals (1000 replicates" in md and md.count("\u2248") == 2  # the note and one tie
    second = summary["leaderboard"][1]
    assert f"| \u22482 | {second['agent']} |" in md
    sr = second["sr_ci"]
    assert f"[{100 * sr[0]:.2f}, {100 * sr[1]:.2f}]" in md
    head, *lines = (out / "leaderboard.csv").read_text().splitlines()
    assert "sr_ci" in head.split(",") and "tied_with_above" in head.split(",")
    cell = dict(zip(head.split(","), lines[1].split(",")))["sr_ci"]
    assert [float(v) for v in cell.split(";")] == sr


def test_off_with_zero_replicates_and_identical_across_processes(tmp_path, capsys):
    r2r_path, conn_dir = write_environment(str(tmp_path / "env"), scans=3, paths_per_scan=8, seed=4, instructions=3)
    records = json.loads(open(r2r_path).read())
    rng = np.random.default_rng(1)
    agents = []
    for n in range(2):
        preds = [
            {
                "instr_id": f"{r['path_id']}_{k}",
                "trajectory": [[v, 0, 0] for v in r["path"][: 1 + rng.integers(len(r["path"]))]],
            }
            for r in records
            for k in range(3)
        ]
        path = tmp_path / f"agent{n}.json"
        path.write_text(json.dumps(preds))
        agents.append(f"--predictions=a{n}={path}")
    common = [*agents, f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}", "--bootstrap=200"]
    one = run(tmp_path / "one", *common, "--bootstrap_unit=path")
    many = run(
        tmp_path / "many",
        *common,
        "--bootstrap_unit=path",
        "--direct_running_mode=multi_processing",
        "--direct_num_workers=2",
    )
    for key in ("leaderboard", "comparisons", "breakdowns", "bootstrap"):
        assert json.dumps(one[key], sort_keys=True) == json.dumps(many[key], sort_keys=True), key
    assert one["leaderboard"][0]["sr_ci"] is not None and len(one["comparisons"]) == len(METRICS)
    off = run(tmp_path / "off", *common[:-1], "--bootstrap=0")
    assert "comparisons" not in off and "sr_ci" not in off["leaderboard"][0]
    assert [r["sr"] for r in off["leaderboard"]] == [r["sr"] for r in one["leaderboard"]]
    with pytest.raises(SystemExit):
        run(tmp_path / "bad", *common, "--baseline=nobody")
    assert "--baseline=nobody is not one of the agents: a0, a1" in capsys.readouterr().err


def test_breakdown_by_reference_length_equals_the_library(val_unseen):
    out, summary = val_unseen
    table = episode_table(out).select(["agent", "instr_id", "scan", "pl", *HEADLINE])
    # The shortest-path agent walks each reference path (R2R's are shortest paths), so its PL is the length.
    short = table.filter(pa.compute.equal(table["agent"], "short"))
    length = dict(zip(short["instr_id"].to_pylist(), short["pl"].to_pylist()))
    lengths = [length[i] for i in table["instr_id"].to_pylist()]
    table = table.append_column("reference_length", pa.array(length_buckets(lengths), pa.string()))
    want = breakdown(table, "reference_length", HEADLINE, replicates=1000, seed=7)
    want.sort(key=lambda r: (length_labels().index(r["group"]), r["agent"]))  # shortest bucket first
    got = summary["breakdowns"]["reference_length"]
    assert got == want and list(dict.fromkeys(r["group"] for r in got)) == length_labels()
    assert sum(r["episodes"] for r in got if r["agent"] == "rand") == 2349


def test_tie_marks_with_a_baseline_judge_each_agent_against_the_one_above(tmp_path):
    """Four agents, --baseline the worst: every agent but the top one gets a tie mark, each from the paired
    comparison with the agent ranked just above it, Holm-corrected over the three adjacent pairs only;
    "comparisons" holds only the pairs with the baseline. Breakdown groups come in their natural order."""
    r2r_path, conn_dir = write_environment(str(tmp_path / "env"), scans=3, paths_per_scan=10, seed=5, instructions=3)
    records = json.loads(open(r2r_path).read())
    rng = np.random.default_rng(2)
    walks = {
        "full": lambda path: path,
        "copy": lambda path: path,
        "part": lambda path: path[: 1 + rng.integers(len(path))],
        "stop": lambda path: path[:1],
    }
    flags = []
    for name, walk in walks.items():
        preds = [
            {"instr_id": f"{r['path_id']}_{k}", "trajectory": [[v, 0, 0] for v in walk(r["path"])]}
            for r in records
            for k in range(3)
        ]
        (tmp_path / f"{name}.json").write_text(json.dumps(preds))
        flags.append(f"--predictions={name}={tmp_path / f'{name}.json'}")
    out = tmp_path / "out"
    summary = run(
        out, *flags, f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}", "--bootstrap=300", "--baseline=stop"
    )
    ranking = [r["agent"] for r in summary["leaderboard"]]
    assert ranking[-2:] == ["part", "stop"] and set(ranking[:2]) == {"full", "copy"}
    tied = {r["agent"]: r["tied_with_above"] for r in summary["leaderboard"]}
    assert tied[ranking[0]] is False and all(tied[a] is not None for a in ranking[1:])
    assert tied[ranking[1]] is True  # an identical copy never differs
    # Independently: each adjacent pair compared on its own (the weights depend on seed and episode only),
    # Holm over the three adjacent p-values by hand.
    table = episode_table(out).select(["agent", "instr_id", "scan", "spl"])
    p = []
    for above, below in zip(ranking, ranking[1:]):
        pair = table.filter(pa.compute.is_in(table["agent"], pa.array([above, below])))
        (row,) = compare(pair, ["spl"], replicates=300, seed=0)
        p.append(row["p_value"])
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate(np.minimum(1.0, np.asarray(p)[order] * np.array([3, 2, 1])))
    p_holm = np.empty(3)
    p_holm[order] = adjusted
    assert [tied[a] for a in ranking[1:]] == [bool(q >= 0.05) for q in p_holm]
    assert {(r["a"], r["b"]) for r in summary["comparisons"]} == {("full", "stop"), ("copy", "stop"), ("part", "stop")}
    # Natural group order: length buckets shortest first, scans alphabetically, agents by name within a group.
    lengths = list(dict.fromkeys(r["group"] for r in summary["breakdowns"]["reference_length"]))
    assert lengths == [label for label in length_labels() if label in lengths] and len(lengths) > 1
    assert lengths != sorted(lengths)  # these buckets' text order is not their length order ("8-10 m" < "<8 m")
    scans = [r["group"] for r in summary["breakdowns"]["scan"]]
    assert scans == sorted(scans)
    for column in summary["breakdowns"].values():
        keys = [(r["group"], r["agent"]) for r in column]
        assert all(a < b for (g, a), (h, b) in zip(keys, keys[1:]) if g == h)


def test_a_failure_in_the_background_sums_fails_the_run_and_publishes_nothing(tmp_path, monkeypatch):
    """The sums run on a worker thread beside the scoring: their error must still end the run (exit
    status, no `_SUCCESS`), never a summary without intervals."""
    import transforms.score.score as step

    r2r_path, conn_dir = write_environment(str(tmp_path / "env"), scans=2, paths_per_scan=6, seed=2, instructions=3)
    records = json.loads(open(r2r_path).read())
    preds = [
        {"instr_id": f"{r['path_id']}_{k}", "trajectory": [[r["path"][0], 0, 0]]} for r in records for k in range(3)
    ]
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(preds))

    def broken(*args):
        raise RuntimeError("the bootstrap sums broke")

    monkeypatch.setattr(step, "bucket_sums", broken)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="the bootstrap sums broke"):
        run(out, f"--predictions={path}", f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}", "--bootstrap=50")
    assert not (out / "_SUCCESS").exists() and not (out / "summary.json").exists()
