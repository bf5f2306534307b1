"""End-to-end runs of `python -m pipelines.score_probes` with synthetic agents whose answers are known."""

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from pipelines import build_probes, score_probes
from tests.conftest import ROOT
from tests.vlnkit.datasets.test_alignments import write_fgr2r


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("probes")
    path, conn = write_fgr2r(tmp, scans=3, paths_per_scan=8, seed=6)
    out = tmp / "probes"
    build_probes.main(
        [
            "--runner=DirectRunner",
            f"--alignments={path}",
            f"--connectivity_dir={conn}",
            f"--output_dir={out}",
            "--probe_types=stop,direction",
        ]
    )
    return pq.read_table(sorted(out.glob("probes-*.parquet"))).to_pylist(), f"{out}/probes-*.parquet"


def write_agent(tmp_path, episodes, agent, skip=()):
    path = tmp_path / "agent.jsonl"
    path.write_text(
        "".join(
            json.dumps({"episode_id": e["episode_id"], "probs": agent(e)}) + "\n"
            for e in episodes
            if e["episode_id"] not in skip
        )
    )
    return path


def score(tmp_path, pattern, agent_file, *flags):
    return score_probes.main(
        [
            "--runner=DirectRunner",
            f"--probes={pattern}",
            f"--predictions={agent_file}",
            f"--output_dir={tmp_path}/s",
            "--bootstrap=200",
            *flags,
        ]
    )


def oracle(e):
    return {c: 1 / len(e["correct"]) for c in e["correct"]}


def uniform(e):
    return {c: 1 / len(e["candidates"]) for c in e["candidates"]}


def forward_biased(e):
    """All mass on the neighbour straightest ahead, whatever the instruction says."""
    rel = e["neighbour_rel_heading"]
    return {e["candidates"][min(range(len(rel)), key=lambda k: abs(rel[k]))]: 1.0}


def test_oracle_scores_one_everywhere(tmp_path, probes):
    episodes, pattern = probes
    summary = score(tmp_path, pattern, write_agent(tmp_path, episodes, oracle))
    skills = summary["skills"]
    assert "stop" in skills and any(k.startswith("direction:") for k in skills)
    for s in skills.values():
        assert s["score"] == 1.0 and s["ci"] == [1.0, 1.0] and s["shift"] == 0.0
    assert summary["missing"] == 0 and summary["scored"] == summary["episodes"] == len(episodes)
    assert (tmp_path / "s" / "_SUCCESS").exists()
    assert (tmp_path / "s" / "missing_episodes.txt").read_text() == ""


def test_uniform_agent_scores_the_expected_fraction_and_missing_are_listed(tmp_path, probes):
    episodes, pattern = probes
    skip = {episodes[0]["episode_id"], episodes[5]["episode_id"]}
    summary = score(tmp_path, pattern, write_agent(tmp_path, episodes, uniform, skip), "--seed=3")
    for skill, s in summary["skills"].items():
        inter = [
            e
            for e in episodes
            if e["skill"] == skill and e["variant"] == "intervention" and e["episode_id"] not in skip
        ]
        expected = sum(len(e["correct"]) / len(e["candidates"]) for e in inter) / len(inter)
        assert s["score"] == pytest.approx(expected) and s["episodes"] == len(inter)
        assert s["ci"][0] <= expected <= s["ci"][1]
    assert summary["missing"] == 2 and sorted(summary["missing_examples"]) == sorted(skip)
    assert set((tmp_path / "s" / "missing_episodes.txt").read_text().split()) == skip
    # Seeded: the same run gives the same intervals.
    assert score(tmp_path, pattern, tmp_path / "agent.jsonl", "--seed=3")["skills"] == summary["skills"]


def test_forward_biased_agent_shows_its_bias(tmp_path, probes, capsys):
    episodes, pattern = probes
    summary = score(tmp_path, pattern, write_agent(tmp_path, episodes, forward_biased))
    skills = summary["skills"]
    assert skills["direction:forward"]["score"] == 1.0  # the straightest neighbour is always in the forward region
    assert skills["stop"]["score"] == 0.0
    for skill, s in skills.items():  # each score is the share of episodes whose straightest neighbour obeys
        inter = [e for e in episodes if e["skill"] == skill and e["variant"] == "intervention"]
        expected = sum(next(iter(forward_biased(e))) in e["correct"] for e in inter) / len(inter)
        assert s["score"] == pytest.approx(expected)
        if skill != "direction:forward":
            assert s["score"] < 0.5 and s["ci"][1] < 1.0
    printed = capsys.readouterr().out
    assert "direction:forward" in printed and "95% CI" in printed


def test_bad_outputs_are_dead_lettered_not_guessed(tmp_path, probes):
    episodes, pattern = probes
    f = write_agent(tmp_path, episodes, uniform)
    with open(f, "a") as out:
        out.write(json.dumps({"episode_id": episodes[0]["episode_id"], "probs": {"nowhere": 1.0}}) + "\n")
        out.write("{broken\n")
    summary = score(tmp_path, pattern, f)
    dead = [json.loads(x) for x in (tmp_path / "s" / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    assert summary["dead_letters"] == 2 and {d["stage"] for d in dead} == {"score", "agent_output"}
    assert summary["scored"] == len(episodes)  # the first output of the duplicated episode is used


def test_command_line_entry_point_and_structural_errors(tmp_path, probes, capsys):
    episodes, pattern = probes
    f = write_agent(tmp_path, episodes[:10], uniform)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.score_probes",
            "--runner=DirectRunner",
            f"--probes={pattern}",
            f"--predictions={f}",
            f"--output_dir={tmp_path}/cli",
            "--bootstrap=50",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Probe scores" in proc.stdout and "missing_episodes.txt" in proc.stdout
    with pytest.raises(SystemExit):
        score(tmp_path, pattern, tmp_path / "none.jsonl")
    assert "does not exist" in capsys.readouterr().err


def test_predictions_name_the_agent_as_in_score_and_the_old_flag_still_works(tmp_path, probes, capsys):
    """Agent outputs are --predictions in every job (NAME=FILES too); --agent_outputs keeps working for one
    release, its files one agent, with a warning naming the new flag; the scores do not depend on the spelling."""
    episodes, pattern = probes
    halves = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for part, path in zip((episodes[::2], episodes[1::2]), halves):
        path.write_text("".join(json.dumps({"episode_id": e["episode_id"], "probs": uniform(e)}) + "\n" for e in part))
    files = f"{halves[0]},{halves[1]}"
    named = score(tmp_path / "named", pattern, f"uniform={files}")
    assert named["agent"] == "uniform" and named["scored"] == len(episodes) and named["missing"] == 0
    assert "deprecated" not in capsys.readouterr().err
    old = score_probes.main(
        ["--runner=DirectRunner", f"--probes={pattern}", f"--agent_outputs={files}", f"--output_dir={tmp_path}/old"]
        + ["--bootstrap=200"]
    )
    assert "--agent_outputs is deprecated and goes in the next release: use --predictions" in capsys.readouterr().err
    assert old["skills"] == named["skills"] and old["scored"] == len(episodes)
    single = score(tmp_path / "single", pattern, halves[0])
    assert single["agent"] == str(halves[0]) and single["scored"] == len(episodes[::2])


def test_two_agents_in_one_run_are_refused_with_the_way_out(tmp_path, probes, capsys):
    """One run scores one agent: two unnamed files are two agents (as in score), so the job says how to join them."""
    episodes, pattern = probes
    a, b = write_agent(tmp_path, episodes, uniform), tmp_path / "b.jsonl"
    b.write_text(a.read_text())
    with pytest.raises(SystemExit) as exc:
        score(tmp_path, pattern, f"{a},{b}")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--predictions names 2 agents" in err and "NAME=FILES" in err
    with pytest.raises(SystemExit):
        score_probes.main([f"--probes={pattern}", f"--output_dir={tmp_path}/none"])
    assert "--predictions is required" in capsys.readouterr().err
