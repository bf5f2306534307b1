"""End-to-end runs of `python -m pipelines.score` (in-process, DirectRunner)."""

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import score
from tests.conftest import ROOT
from vlnkit.datasets.r2r import RecordError
from vlnkit.datasets.trajectories import parse_predictions
from vlnkit.evaluation.batch import score_batch
from vlnkit.evaluation.common import METRICS
from vlnkit.fixtures.grid import write_environment
from vlnkit.navigation.graph import GraphStore


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("score_env")
    r2r_path, conn_dir = write_environment(str(tmp), scans=2, paths_per_scan=5, seed=2, instructions=2)
    return tmp, r2r_path, conn_dir, json.loads(open(r2r_path).read())


def run(out, *flags):
    # These tests look at dead letters and counts, so a run with many of them must still finish
    # (judging a run by its dead-lettered share is tested in tests/pipelines/test_failure_semantics.py).
    return score.main(["--runner=DirectRunner", f"--output_dir={out}", "--max_failure_fraction=1", *flags])


def episodes(out):
    return pq.read_table(sorted(out.glob("episodes-*-of-*.parquet"))).to_pylist()


def test_synthetic_end_to_end_with_options_and_parquet_inputs(env, tmp_path):
    _, r2r_path, conn_dir, records = env
    # Predictions: each reference path walked with every step repeated (turning in place), as Parquet.
    preds = [
        {"instr_id": f"{r['path_id']}_{k}", "path": [v for v in r["path"] for _ in range(2)]}
        for r in records
        for k in range(2)
        if (r["path_id"], k) != (0, 0)
    ]
    pred_path = tmp_path / "preds.parquet"
    pq.write_table(pa.Table.from_pylist(preds), pred_path)
    common = [f"--predictions={pred_path}", f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}"]

    out = tmp_path / "collapsed"
    summary = run(out, *common)
    assert (out / "_SUCCESS").exists() and summary["count"] == len(preds) == len(episodes(out))
    assert summary["metrics"]["sr"] == summary["metrics"]["ndtw"] == summary["metrics"]["cls"] == 1.0
    assert summary["missing_predictions"] == 1 and summary["dead_letters"] == 0
    assert (out / score.MISSING_FILE).read_text() == "0_0\n"
    assert summary["options"] == {
        "success_distance": 3.0,
        "keep_repeats": False,
        "spl_reference": "shortest",
        "success_rule": "le",
    }
    assert summary["repeats_collapsed"] == sum(len(p["path"]) // 2 for p in preds)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["summary"] == summary and len(manifest["inputs"]) == 2 + 2  # predictions, dataset, 2 graphs

    # With success_rule=lt, one more episode: 0_0 stops one viewpoint short of its goal, and d_th is set to
    # exactly that distance, so NE == d_th: `lt` (NE < d_th) fails it where `le` (NE <= d_th) would count it.
    store = GraphStore(conn_dir)
    g0 = store.get(records[0]["scan"])
    short = records[0]["path"][:-1]
    d_th = float(g0.distances[g0.idx(short[-1]), g0.idx(records[0]["path"][-1])])
    with_tie = tmp_path / "preds_with_tie.parquet"
    pq.write_table(pa.Table.from_pylist([*preds, {"instr_id": "0_0", "path": short}]), with_tie)
    out2 = tmp_path / "kept"
    tie_flags = [f"--predictions={with_tie}", *common[1:], f"--success_distance={d_th!r}", "--success_rule=lt"]
    kept = run(out2, *tie_flags, "--keep_repeats", "--spl_reference=path")
    assert kept["options"] == {
        "success_distance": d_th,
        "keep_repeats": True,
        "spl_reference": "path",
        "success_rule": "lt",
    }
    assert (out2 / "leaderboard.md").read_text().startswith(f"Success: NE < {d_th} m (success_rule=lt")
    rows = {r["instr_id"]: r for r in episodes(out2)}
    assert all(rows[p["instr_id"]]["ndtw"] == 1.0 for p in preds)  # repeats align at zero cost with the same node ...
    assert kept["metrics"]["sed"] < 1.0  # ... but add (v, v) edges
    tie = rows["0_0"]
    assert tie["ne"] == d_th and tie["sr"] == 0.0 and tie["spl"] == 0.0  # NE == d_th is no success under lt
    options = dict(keep_repeats=True, spl_reference="path")
    as_le = score_batch(g0.distances, [g0.indices(records[0]["path"])], [g0.indices(short)], d_th, **options)
    assert as_le["ne"][0] == d_th and as_le["sr"][0] == 1.0 and as_le["spl"][0] > 0  # ... and is one under le
    for p in [*preds[:5], {"instr_id": "0_0", "path": short}]:
        r = records[int(p["instr_id"].split("_")[0])]
        g = store.get(r["scan"])
        want = score_batch(
            g.distances, [g.indices(r["path"])], [g.indices(p["path"])], d_th, success_rule="lt", **options
        )
        for m in METRICS:
            assert rows[p["instr_id"]][m] == pytest.approx(float(want[m][0]), abs=1e-12), (p["instr_id"], m)


def test_structural_errors_are_one_clear_line(env, tmp_path):
    _, r2r_path, conn_dir, _ = env
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.score",
            "--runner=DirectRunner",
            f"--predictions={tmp_path}/none*.json",
            f"--dataset={r2r_path}",
            f"--connectivity_dir={conn_dir}",
            f"--output_dir={tmp_path}/o",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        proc.returncode == 2
        and proc.stderr.strip().startswith("error: score: --predictions:")
        and "matches no file" in proc.stderr
    )
    with pytest.raises(SystemExit):
        run(
            tmp_path / "o",
            f"--predictions={r2r_path}",
            f"--dataset={r2r_path}",
            f"--connectivity_dir={conn_dir}",
            "--spl_reference=nope",
        )


# ----------------------------------------------------------------------------- real agent outputs
AGENTS = "agent_outputs"


def split_of(name: str) -> str:
    return "val_seen" if "val_seen" in name else "val_unseen"


@pytest.mark.real_data
def test_every_real_agent_output_scores_with_the_library(shared_data, connectivity_dir):
    """All 17 files: every viewpoint known, every start right (except path 4554 of the older val_seen)."""
    store = GraphStore(connectivity_dir)
    datasets = {s: json.loads((shared_data / "r2r" / f"R2R_{s}.json").read_text()) for s in ("val_seen", "val_unseen")}
    refs = {
        s: {f"{r['path_id']}_{k}": r for r in d for k in range(len(r["instructions"]))} for s, d in datasets.items()
    }
    for f in sorted((shared_data / AGENTS).glob("*/*.json")):
        preds = [p for p in parse_predictions(f.read_bytes(), str(f)) if not isinstance(p, RecordError)]
        by_scan = {}
        for p in preds:
            r = refs[split_of(f.name)][p["instr_id"]]
            if p["path"][0] != r["path"][0]:
                assert p["instr_id"].startswith("4554_") and "val_seen" in f.name, (f, p["instr_id"])
                continue
            g = store.get(r["scan"])
            by_scan.setdefault(r["scan"], []).append((g.indices(r["path"]), g.indices(p["path"])))
        for scan, pairs in by_scan.items():
            s = score_batch(store.get(scan).distances, [a for a, _ in pairs], [b for _, b in pairs])
            assert all(np.isfinite(s[m]).all() for m in METRICS), (f, scan)
            if "shortest_agent" in f.name:
                assert (s["sr"] == 1.0).all()
            if "stop_agent" in f.name:
                assert (s["pl"] == 0.0).all()


@pytest.mark.real_data
@pytest.mark.parametrize(
    "relpath, dead",
    [
        ("rszia+rpl2024-final-group9/val_unseen_shortest_agent.json", 0),
        ("rszia+rpl2024-final-group9/val_seen_stop_agent.json", 3),
        ("Malak-Mansour+Language_In_RobNav/custom-gpt-test_100__submit_R2R_val_unseen_instr.json", 0),
    ],
)
def test_real_agent_outputs_end_to_end(tmp_path, shared_data, connectivity_dir, relpath, dead):
    f = shared_data / AGENTS / relpath
    dataset = shared_data / "r2r" / f"R2R_{split_of(f.name)}.json"
    out = tmp_path / "out"
    summary = run(out, f"--predictions={f}", f"--dataset={dataset}", f"--connectivity_dir={connectivity_dir}")
    assert summary["dead_letters"] == dead and (out / "_SUCCESS").exists()
    assert summary["count"] + summary["missing_predictions"] + dead == summary["reference_episodes"]
    assert all(v is not None for v in summary["metrics"].values())
    assert summary["without_usable_prediction"] == summary["reference_episodes"] - summary["count"]
    if dead:
        reasons = [json.loads(line) for line in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
        assert {d["stage"] for d in reasons} == {"start"} and all("4554_" in d["record"] for d in reasons)
        unusable = (out / score.UNUSABLE_FILE).read_text().split()
        assert len(unusable) == dead and all(i.startswith("4554_") for i in unusable)
    if "shortest" in relpath:
        assert summary["metrics"]["sr"] == 1.0 and summary["count"] == 2349
    if "stop" in relpath:
        assert summary["metrics"]["pl"] == 0.0 and summary["metrics"]["sr"] == 0.0
    if "Malak" in relpath:
        assert summary["count"] == 100 and summary["missing_predictions"] == 2349 - 100


# ----------------------------------------------------------------------------- many agents, honest counts
def test_unscored_episodes_are_counted_and_listed(env, tmp_path):
    _, r2r_path, conn_dir, records = env
    r0, r1 = records[0], records[1]
    preds = [
        {"instr_id": "0_0", "trajectory": list(r0["path"])},
        {"instr_id": "0_1", "trajectory": list(r1["path"])},  # starts elsewhere: dead-lettered
        {"instr_id": "1_0", "trajectory": []},  # empty: dead-lettered at read
    ]
    f = tmp_path / "p.json"
    f.write_text(json.dumps(preds))
    out = tmp_path / "o"
    s = run(out, f"--predictions={f}", f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}")
    episodes_total = 2 * len(records)
    assert s["count"] == 1 and s["reference_episodes"] == episodes_total and s["dead_letters"] == 2
    assert s["without_usable_prediction"] == episodes_total - 1
    assert s["missing_predictions"] == episodes_total - 3  # 1_0 was given a prediction (refused at reading)
    assert s["predictions_read"] == 3 == s["count"] + s["dead_letters"]
    unusable = (out / score.UNUSABLE_FILE).read_text().split()
    assert "0_1" in unusable and "1_0" in unusable and "0_0" not in unusable and len(unusable) == episodes_total - 1
    assert s["agents"] == {"p": {k: s[k] for k in s["agents"]["p"]} | {"dead_letters": 2}}


def test_counts_add_up_on_every_refusal_path(tmp_path, shared_data, connectivity_dir):
    """Per agent: records read = scored + dead letters of records (dead letters - file_dead_letters), and
    missing = the reference episodes no record named, computed here from the files' lines on their own."""
    import gzip
    import re

    from tests.oracles.score_digest import dirty_predictions

    dataset = str(shared_data / "r2r" / "R2R_val_unseen.json")
    dirty = dirty_predictions(str(tmp_path / "dirty.jsonl"), dataset, str(connectivity_dir))
    cut = tmp_path / "cut.jsonl.gz"
    data = gzip.compress(open(dirty, "rb").read())
    cut.write_bytes(data[: len(data) // 3])
    s = run(tmp_path / "o", f"--predictions=dirty={dirty},{cut}", f"--dataset={dataset}",
            f"--connectivity_dir={connectivity_dir}", "--bootstrap=0")  # fmt: skip
    records = [line for line in open(dirty).read().splitlines() if line.strip()]
    block = s["agents"]["dirty"]
    assert block["file_dead_letters"] == 1  # the cut file: refused whole, no record read from it
    assert block["predictions_read"] == len(records) == block["count"] + block["dead_letters"] - 1
    named = set()
    for line in records:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        iid = obj.get("instr_id") if isinstance(obj, dict) else None
        if isinstance(iid, str) and re.fullmatch(r"-?[1-9][0-9]*_(0|[1-9][0-9]*)|0_(0|[1-9][0-9]*)", iid):
            named.add(iid)
    episodes = {f"{r['path_id']}_{k}" for r in json.load(open(dataset)) for k in range(len(r["instructions"]))}
    missing = (tmp_path / "o" / score.MISSING_FILE).read_text().split()
    assert set(missing) == episodes - named and block["missing_predictions"] == len(missing)
    unusable = set((tmp_path / "o" / score.UNUSABLE_FILE).read_text().split())
    assert block["without_usable_prediction"] == len(unusable) == len(episodes) - block["count"]


def test_a_start_only_dataset_is_refused(env, tmp_path):
    _, r2r_path, conn_dir, records = env
    test_split = [{**r, "path": r["path"][:1]} for r in records]
    data = tmp_path / "test.json"
    data.write_text(json.dumps(test_split))
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"instr_id": "0_0", "trajectory": records[0]["path"][:1]}]))
    flags = [f"--predictions={preds}", f"--dataset={data}", f"--connectivity_dir={conn_dir}"]
    with pytest.raises(SystemExit) as exc:
        run(tmp_path / "o", *flags)
    assert exc.value.code == 3  # the run finished but cannot count: no _SUCCESS
    assert not (tmp_path / "o" / "_SUCCESS").exists()
    summary = json.loads((tmp_path / "o" / "failed" / "summary.json").read_text())
    assert summary["unscorable"].startswith(f"every one of the {2 * len(records)} reference episodes")
    assert all(v is None for v in summary["metrics"].values())  # never "SR 100%"
    manifest = json.loads((tmp_path / "o" / "failed" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["failure"] == summary["unscorable"]


def test_compressed_inputs_read_like_plain_ones(env, tmp_path):
    import bz2
    import gzip

    _, r2r_path, conn_dir, records = env
    preds = [{"instr_id": f"{r['path_id']}_{k}", "trajectory": r["path"][:2]} for r in records for k in range(2)]
    text = "\n".join(json.dumps(p) for p in preds).encode()
    plain, gz, bz = tmp_path / "p.jsonl", tmp_path / "p.jsonl.gz", tmp_path / "p.jsonl.bz2"
    plain.write_bytes(text)
    gz.write_bytes(gzip.compress(text))
    bz.write_bytes(bz2.compress(text))
    data_gz = tmp_path / "d.json.gz"
    data_gz.write_bytes(gzip.compress(open(r2r_path, "rb").read()))
    a = run(tmp_path / "a", f"--predictions={plain}", f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}")
    b = run(tmp_path / "b", f"--predictions=gz={gz}", f"--dataset={data_gz}", f"--connectivity_dir={conn_dir}")
    c = run(tmp_path / "c", f"--predictions=bz={bz}", f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}")
    assert a["count"] == b["count"] == c["count"] == len(preds) and a["dead_letters"] == b["dead_letters"] == 0
    assert a["metrics"] == b["metrics"] == c["metrics"]


def test_agent_flags():
    from pipelines.job import Run
    from vlnkit.io import fileio

    ctx = Run("score", None, score.JOB.parse([])[1])
    here = __file__
    agents = ctx.agents([f"mine={here},{here}", here])
    assert agents == {"mine": [here], "test_score": [fileio.match(here)[0][0]]}  # a file listed twice counts once
    assert ctx._inputs == [(here, os.path.getsize(here))] * 2  # every file listed is an input of the run
    with pytest.raises(score.JobError, match="matches no file"):
        ctx.agents(["x=/nonexistent/*.json"])


@pytest.mark.real_data
def test_four_agents_in_one_run_each_scored_on_its_own(tmp_path, shared_data, connectivity_dir):
    folder = shared_data / AGENTS / "rszia+rpl2024-final-group9"
    dataset = shared_data / "r2r" / "R2R_val_unseen.json"
    common = [f"--dataset={dataset}", f"--connectivity_dir={connectivity_dir}"]
    out = tmp_path / "all"
    both = run(out, f"--predictions={folder}/val_unseen_*_agent.json", *common)
    paths = sorted(str(p) for p in folder.glob("val_unseen_*_agent.json"))
    files = [p.rsplit("/", 1)[-1].removesuffix(".json") for p in paths]  # unnamed agents: their file names
    assert sorted(both["agents"]) == files and both["dead_letters"] == 0  # no "duplicates" across agents
    assert both["predictions"] == paths
    assert "count" not in both and both["reference_episodes"] == 2349
    rows = pq.read_table(sorted(out.glob("episodes-*-of-*.parquet"))).to_pylist()
    assert len(rows) == 4 * 2349 and {r["agent"] for r in rows} == set(files)
    alone = run(tmp_path / "one", f"--predictions=stop={paths[-1]}", *common)
    block = both["agents"][files[-1]]
    assert block["metrics"] == alone["metrics"] and block["count"] == alone["count"] == 2349
    assert list(alone["agents"]) == ["stop"] and alone["count"] == 2349
    board = both["leaderboard"]
    assert board[0]["agent"] == "val_unseen_shortest_agent" and board[0]["spl"] == 1.0
    assert [r["rank"] for r in board] == [1, 2, 3, 4]
    csv_lines = (out / "leaderboard.csv").read_text().splitlines()
    assert csv_lines[0].startswith("rank,agent,episodes") and len(csv_lines) == 5
    board_md = (out / "leaderboard.md").read_text()
    assert (
        board_md.startswith("Success: NE <= 3.0 m (success_rule=le")
        and board_md.count("\n")
        == 2 + 2 + 2 + 4  # header, intervals note (default --bootstrap=1000), table head, 4 agents
    )
    named = run(tmp_path / "named", f"--predictions=short={paths[2]}", f"--predictions=rand={paths[1]}", *common)
    assert [r["agent"] for r in named["leaderboard"]] == ["short", "rand"]

    # Every episode row of an agent is the same, bit for bit, whichever agents it is scored with (the
    # agents' pairs of a scan are scored in one batch).
    def by_agent(folder, rename=None):
        rows = pq.read_table(sorted(folder.glob("episodes-*-of-*.parquet"))).to_pylist()
        out = {}
        for r in rows:
            agent = r.pop("agent")
            out.setdefault((rename or {}).get(agent, agent), {})[r.pop("instr_id")] = r
        return out

    four = by_agent(out)
    assert by_agent(tmp_path / "one", {"stop": files[-1]})[files[-1]] == four[files[-1]]
    two = by_agent(tmp_path / "named", {"short": files[2], "rand": files[1]})
    assert two[files[2]] == four[files[2]] and two[files[1]] == four[files[1]]


@pytest.mark.real_data
def test_the_test_split_is_refused(tmp_path, shared_data, connectivity_dir):
    records = json.loads((shared_data / "r2r" / "R2R_test.json").read_text())[:50]
    preds = [{"instr_id": f"{r['path_id']}_0", "trajectory": [[r["path"][0], 0, 0]]} for r in records]
    f = tmp_path / "p.json"
    f.write_text(json.dumps(preds))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.score",
            "--runner=DirectRunner",
            f"--predictions={f}",
            f"--dataset={shared_data / 'r2r' / 'R2R_test.json'}",
            f"--connectivity_dir={connectivity_dir}",
            f"--output_dir={tmp_path / 'o'}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 3 and "holds only its start viewpoint" in proc.stderr, proc.stderr[-500:]


def test_multi_process_runner_gives_the_same_outputs(env, tmp_path):
    _, r2r_path, conn_dir, records = env
    preds = [{"instr_id": f"{r['path_id']}_{k}", "trajectory": r["path"][: 1 + k]} for r in records for k in range(2)]
    f = tmp_path / "p.json"
    f.write_text(json.dumps(preds))
    flags = [f"--predictions=a={f}", f"--predictions=b={f}", f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}"]
    one = run(tmp_path / "one", *flags)
    two = run(tmp_path / "two", *flags, "--direct_running_mode=multi_processing", "--direct_num_workers=2")
    assert one["agents"] == two["agents"] and one["agents"]["a"] == one["agents"]["b"]  # exact sums: same bits
    assert sorted(map(str, episodes(tmp_path / "one"))) == sorted(map(str, episodes(tmp_path / "two")))


def test_console_summary_prints_a_table_per_language(capsys):
    """RxR: the printed summary has a row per language (per agent with several, in leaderboard order) with
    its episode count and headline rates; the leaderboard's note names the replicates the brackets come from."""
    from types import SimpleNamespace

    from vlnkit.evaluation.batch import totals
    from vlnkit.evaluation.score_summary import agent_key, language_key, score_summary

    summed = {"reference_episodes": 5}
    for agent, sr in (("low", [0.0, 1.0, 0.0]), ("high", [1.0, 1.0, 0.0])):
        for language, rows in (("te-IN", slice(0, 2)), ("en-US", slice(2, 3))):
            own = totals({m: np.asarray(sr[rows]) for m in METRICS})
            summed.update({agent_key(agent, language_key(language, k)): v for k, v in own.items()})
        summed.update({agent_key(agent, k): v for k, v in totals({m: np.asarray(sr) for m in METRICS}).items()})
    options = {"success_distance": 3.0, "keep_repeats": False, "spl_reference": "shortest"}
    ctx = SimpleNamespace(output_dir="out")
    summary = score_summary({"options": options}, summed, ["low", "high"])
    summary["bootstrap"] = {"bootstrap": 200, "confidence": 0.95}
    summary["leaderboard"][0]["sr_ci"] = [0.5, 1.0]
    score.print_summary(summary, ctx)
    printed = capsys.readouterr().out
    assert "(200 replicates, unit: episode)" in printed
    table = printed.split("By language (rates in %)\n")[1].splitlines()
    assert table[0].split() == [
        "language",
        "agent",
        "episodes",
        "SR",
        "(%)",
        "SPL",
        "(%)",
        "NDTW",
        "(%)",
        "SDTW",
        "(%)",
    ]
    assert [line.split()[:4] for line in table[2:6]] == [
        ["en-US", "high", "1", "0.00"],
        ["en-US", "low", "1", "0.00"],
        ["te-IN", "high", "2", "100.00"],
        ["te-IN", "low", "2", "50.00"],
    ]
    score.print_summary(score_summary({"options": options}, summed, ["low"]), ctx)
    one = capsys.readouterr().out.split("By language (rates in %)\n")[1].splitlines()
    assert one[0].split()[:2] == ["language", "episodes"] and one[3].split()[:3] == ["te-IN", "2", "50.00"]


def test_agents_are_named_by_their_files_and_each_name_is_given_once(env, tmp_path, capsys):
    """An agent given without NAME= is named by its file's name without extensions (the summary keeps the
    path); a name may hold any text but '=', tabs and line breaks; two values naming one agent are refused."""
    _, r2r_path, conn_dir, records = env
    preds = [{"instr_id": f"{r['path_id']}_0", "trajectory": r["path"]} for r in records]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "preds.jsonl").write_text("\n".join(json.dumps(p) for p in preds))
    data = [f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}", "--bootstrap=0"]
    one = tmp_path / "a" / "preds.jsonl"
    summary = run(tmp_path / "one", f"--predictions={one}", *data)
    assert list(summary["agents"]) == ["preds"] and summary["predictions"] == [str(one)]
    assert (
        "preds" in (tmp_path / "one" / "leaderboard.md").read_text()
        and str(one) not in (tmp_path / "one" / "leaderboard.md").read_text()
    )
    names = ["ma méthode", "runs/dagger v2"]
    summary = run(tmp_path / "named", *(f"--predictions={n}={one}" for n in names), *data)
    assert list(summary["agents"]) == names
    for flags in (
        [f"--predictions={one}", f"--predictions={tmp_path / 'b' / 'preds.jsonl'}"],  # two files named preds
        [f"--predictions=x={one}", f"--predictions=x={one}"],  # one name twice
        [f"--predictions=preds={one}", f"--predictions={one}"],
    ):
        with pytest.raises(SystemExit) as exit_:
            run(tmp_path / "refused", *flags, *data)
        assert exit_.value.code == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and "name the agent" in error[0] and "NAME=FILES" in error[0]


@pytest.mark.parametrize(
    "flag, words",
    [
        ("--bootstrap=10000000", "--bootstrap must be 0 (off) or from 40 to 10000 replicates"),
        ("--bootstrap=1", "--bootstrap must be 0 (off) or from 40 to 10000 replicates"),
        ("--bootstrap=-3", "--bootstrap must be 0 (off) or from 40 to 10000 replicates"),
        ("--confidence=1", "--confidence must be a number in (0, 1)"),
        ("--bootstrap_unit=scan", "--bootstrap_unit"),
    ],
)
def test_the_bootstrap_is_bounded_and_refused_in_one_line_before_it_runs(env, tmp_path, capsys, flag, words):
    """10**7 replicates would allocate tens of GiB and crash; one replicate would make a '95% interval' of
    one replicate. Both are refused before the pipeline, with the bounds and why."""
    _, r2r_path, conn_dir, _ = env
    with pytest.raises(SystemExit) as exit_:
        run(
            tmp_path / "o", f"--predictions={r2r_path}", f"--dataset={r2r_path}", f"--connectivity_dir={conn_dir}", flag
        )
    error = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(error) == 1 and words in error[0], error
    assert not (tmp_path / "o" / "_SUCCESS").exists()
