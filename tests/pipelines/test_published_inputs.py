"""Every job accepts a published output folder D wherever it accepts that job's files: D stands for the
data files of its current version (vlnkit.io.inputs.expand_inputs), and a glob inside D is matched there."""

from __future__ import annotations

import importlib
import json

import pyarrow.parquet as pq
import pytest

from tests.hostile import environment
from tests.vlnkit.datasets.test_alignments import write_fgr2r
from vlnkit.io import published


def run(job: str, *flags: str) -> dict:
    return importlib.import_module(f"pipelines.{job}").main(["--runner=DirectRunner", *flags])


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return environment(tmp_path_factory.mktemp("published_inputs"))


def test_score_reads_build_r4r_paths_and_report_reads_score_from_published_folders(env, tmp_path):
    conn = f"--connectivity_dir={env['connectivity_dir']}"
    r4r, scored = tmp_path / "r4r", tmp_path / "score"
    run("build_r4r", f"--dataset={env['dataset']}", conn, f"--output_dir={r4r}")
    paths = pq.read_table([p for p in published(str(r4r)) if "/paths-" in p])
    preds = tmp_path / "preds.json"
    preds.write_text(
        json.dumps([{"instr_id": f"{r['path_id']}_0", "trajectory": r["path"]} for r in paths.to_pylist()])
    )
    summary = run("score", f"--dataset={r4r}", f"--predictions={preds}", conn, f"--output_dir={scored}")
    assert summary["count"] == paths.num_rows > 0
    report = run("report", f"--inputs={scored}", conn, "--draw=0", f"--output_dir={tmp_path / 'report'}")
    assert report["score_sets"] and sum(report["score_sets"].values()) == paths.num_rows


def test_score_probes_and_build_compat_read_published_folders(env, tmp_path):
    path, conn = write_fgr2r(tmp_path, scans=2, paths_per_scan=4, seed=3)
    probes = tmp_path / "probes"
    run("build_probes", f"--alignments={path}", f"--connectivity_dir={conn}", f"--output_dir={probes}")
    rows = pq.read_table([p for p in published(str(probes)) if "/probes-" in p]).to_pylist()
    agent = tmp_path / "agent.jsonl"
    agent.write_text(
        "".join(
            json.dumps({"episode_id": r["episode_id"], "probs": {c: 1 / len(r["candidates"]) for c in r["candidates"]}})
            + "\n"
            for r in rows
        )
    )
    scored = run("score_probes", f"--probes={probes}", f"--agent_outputs={agent}", f"--output_dir={tmp_path / 's'}")
    assert scored["episodes"] == len(rows) > 0

    para = tmp_path / "para"
    run("paraphrase", f"--dataset={env['dataset']}", "--translator=offline", "--languages=de", f"--output_dir={para}")
    flags = [f"--dataset={env['dataset']}", f"--connectivity_dir={env['connectivity_dir']}", "--spacy_model=blank:en"]
    compat = run(
        "build_compat",
        *flags,
        "--methods=random_walk",
        f"--paraphrases={para}",
        "--allow_demo_paraphrases",
        f"--output_dir={tmp_path / 'compat'}",
    )
    assert compat["paraphrase_backends"], compat
