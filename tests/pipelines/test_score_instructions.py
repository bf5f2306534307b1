"""End-to-end runs of `python -m pipelines.score_instructions` on the shared speaker data."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipelines import score_instructions
from tests.oracles.coco_caption import reference_scores
from tests.vlnkit.captioning import shared_sets
from vlnkit.captioning.ptb import tokenize

METRICS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d")


def run(out, *flags):
    return score_instructions.main(["--runner=DirectRunner", f"--output_dir={out}", "--bootstrap=100", *flags])


@pytest.fixture(scope="module")
def zhao_run(tmp_path_factory, shared_data):
    out = tmp_path_factory.mktemp("si") / "zhao"
    data = shared_data / "speaker" / "zhao2023_coop_human_eval" / "human_eval_dataset.json"
    summary = run(out, f"--predictions=zhao={data}", "--meteor")
    return summary, pq.read_table(str(out / "instructions-00000-of-00001.parquet")).to_pylist()


def test_every_system_per_item_and_corpus_equals_pycocoevalcap(zhao_run, shared_data):
    """The job's rows and corpus scores against the reference scorers on the 13 zhao2023 sets (own references,
    the human row against its two others), batches and Beam's combining included."""
    summary, rows = zhao_run
    assert summary["instructions"] == 975 and summary["dead_letters"] == 0
    sets = shared_sets.zhao_sets(shared_data / "speaker", common=False)
    assert sorted(summary["by_system"]) == sorted(sets)
    for system, (ids, hyps, refs) in sets.items():
        mine = {r["path_id"]: r for r in rows if r["system"] == system}
        h = [tokenize(x) for x in hyps]
        theirs = reference_scores(h, [[tokenize(y) for y in rs] for rs in refs])
        for metric in METRICS:
            per_item = np.array([mine[i][metric] for i in ids])
            assert np.max(np.abs(per_item - theirs[metric][1])) <= 1e-9, (system, metric)
            assert abs(summary["by_system"][system][metric]["score"] - theirs[metric][0]) <= 1e-9, (system, metric)
            lo, hi = summary["by_system"][system][metric]["interval"]
            assert lo <= summary["by_system"][system][metric]["score"] + 1e-12 and hi >= lo


def test_leaderboard_comparisons_and_agreement(zhao_run):
    summary, _ = zhao_run
    board = summary["leaderboard"]
    assert [r["rank"] for r in board] == list(range(1, 14))
    scores = [r["score"] for r in board]
    assert scores == sorted(scores, reverse=True) and board[0]["tied_with_above"] is False
    assert len(summary["comparisons"]) == 13 * 12 // 2 * 7  # six metrics and METEOR (--meteor)
    tau = summary["agreement"]["ndtw"]["cider_d"]
    assert tau["instance"]["n"] == 975 and tau["system"]["n"] == 13
    assert tau["system"]["interval"][0] <= tau["system"]["tau_b"] <= tau["system"]["interval"][1]


def test_meteor_in_the_agreement_table_is_scipys_tau_of_the_jars_scores(zhao_run, shared_data):
    """METEOR's tau-b against the followers' nDTW: instance level over the per-item scores, system level over
    the systems' corpus METEOR (the jar's aggregate, as in `by_system`), both as scipy's kendalltau; the
    system level's replicates re-evaluate each system's summed statistics with the jar."""
    from scipy.stats import kendalltau

    summary, rows = zhao_run
    data = json.loads((shared_data / "speaker" / "zhao2023_coop_human_eval" / "human_eval_dataset.json").read_text())
    systems = sorted(data)
    ndtw = {(s, p): r["human_scores"]["ndtw"] for s in systems for p, r in data[s].items()}
    tau = summary["agreement"]["ndtw"]["meteor"]
    items = sorted((r["system"], r["path_id"]) for r in rows)
    by_item = {(r["system"], r["path_id"]): r["meteor"] for r in rows}
    expected = kendalltau([by_item[k] for k in items], [ndtw[k] for k in items]).statistic
    assert tau["instance"]["tau_b"] == pytest.approx(expected, abs=1e-12)
    corpus = [summary["by_system"][s]["meteor"]["score"] for s in systems]
    mean_ndtw = [np.mean([ndtw[(s, p)] for p in data[s]]) for s in systems]
    assert tau["system"]["tau_b"] == pytest.approx(kendalltau(corpus, mean_ndtw).statistic, abs=1e-12)
    low, high = tau["system"]["interval"]
    assert low <= tau["system"]["tau_b"] <= high and low < high
    assert set(summary["agreement"]["score"]) >= {"meteor", "cider_d", "bleu_4"}


def test_bad_input_is_dead_lettered_and_counted(tmp_path, shared_data):
    """An empty or non-string instruction, an id naming no path of --references, a file in no layout."""
    r2r = shared_data / "r2r" / "R2R_val_seen.json"
    some = json.loads(r2r.read_text())[:3]
    good = {f"{r['path_id']}_0": {"generated_instr": "walk past the bed and stop"} for r in some}
    good["999999999_0"] = {"generated_instr": "a path nobody has"}
    good[f"{some[0]['path_id']}_1"] = {"generated_instr": "   "}
    good[f"{some[1]['path_id']}_1"] = {"generated_instr": 7}
    system = tmp_path / "sys.json"
    system.write_text(json.dumps(good))
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"a": [1, 2]}))
    summary = run(
        tmp_path / "out",
        f"--predictions=s={system}",
        f"--predictions=b={broken}",
        f"--references={r2r}",
        "--human_baseline",
    )
    assert summary["by_system"]["s"]["items"] == 3
    assert summary["dead_letters"] == 4
    reasons = [
        json.loads(x)["reason"]
        for x in (tmp_path / "out" / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()
    ]
    assert any("names no path" in r for r in reasons) and any("empty" in r for r in reasons)
    assert any("not a string" in r for r in reasons) and any("broken.json" in r or "dict whose" in r for r in reasons)
    assert summary["by_system"]["human"]["items"] == sum(len(r["instructions"]) for r in some)


def _small_spice_file(tmp_path, shared_data, n=20):
    rows = json.loads((shared_data / "speaker" / "acgg" / "pairs" / "origin_seen.json").read_text())[:n]
    path = tmp_path / "small.json"
    path.write_text(json.dumps(rows))
    return path, rows


def test_meteor_column_and_corpus_are_the_jars(tmp_path, shared_data):
    """--meteor: per item and per system as pycocoevalcap's METEOR wrapper gets from the same jar (the corpus
    score from statistics summed in Beam)."""
    from vlnkit.captioning.meteor import Meteor

    path, rows = _small_spice_file(tmp_path, shared_data)
    summary = run(tmp_path / "out", f"--predictions=s={path}", "--meteor")
    got = {
        r["instr_id"]: r["meteor"]
        for r in pq.read_table(str(tmp_path / "out" / "instructions-00000-of-00001.parquet")).to_pylist()
    }
    aggregate, items = Meteor.shared().score(  # the jar the job's steps used in this process: one set scored alone
        [" ".join(tokenize(r["test"])) for r in rows], [[" ".join(tokenize(x)) for x in r["refs"]] for r in rows]
    )
    assert [got[r["image_id"]] for r in rows] == items
    assert summary["by_system"]["s"]["meteor"]["score"] == aggregate and summary["meteor"] == "computed"


def test_without_the_jar_meteor_is_refused_in_one_line_and_the_rest_runs(tmp_path, shared_data, monkeypatch, capsys):
    monkeypatch.setenv("VLNKIT_CAPTION_JARS", str(tmp_path / "no_jars"))
    path, _ = _small_spice_file(tmp_path, shared_data)
    summary = run(tmp_path / "out", f"--predictions=s={path}", "--meteor")
    lines = [x for x in capsys.readouterr().out.splitlines() if "METEOR refused" in x]
    assert len(lines) == 1 and "python -m vlnkit.captioning.jars" in lines[0]
    assert summary["instructions"] == 20 and "meteor" not in summary["by_system"]["s"]


def test_spice_column_corpus_and_interval_are_pycocoevalcaps(tmp_path, tmp_path_factory, shared_data):
    """--spice: per item identical to pycocoevalcap's Spice on the same set (one jar call for the batch, run
    beside the oracle's; the oracle's result is the session's, shared with tests/vlnkit/captioning/test_spice.py,
    which checks the same 12 items); the corpus score its mean; the interval a resampled mean around it;
    --spice_cache keeps the parses in a slot (not a setting that changes the output)."""
    import threading

    from tests.oracles.coco_spice import reference_spice_once

    rows = shared_sets.shortest_acgg(shared_data / "speaker", 12)
    path = tmp_path / "small.json"
    path.write_text(json.dumps(rows))
    ids = [r["image_id"] for r in rows]
    hyps = [" ".join(tokenize(r["test"])) for r in rows]
    refs = [[" ".join(tokenize(x)) for x in r["refs"]] for r in rows]
    theirs = {}
    oracle = threading.Thread(target=lambda: theirs.update(r=reference_spice_once(tmp_path_factory, hyps, refs, ids)))
    oracle.start()
    summary = run(tmp_path / "out", f"--predictions=s={path}", "--spice", f"--spice_cache={tmp_path / 'kept'}")
    oracle.join()
    mean, items = theirs["r"]
    assert any((tmp_path / "kept" / "slot-0").iterdir())  # the jar's parses stay in the worker's slot
    assert "spice_cache" not in json.loads((tmp_path / "out" / "manifest.json").read_text())["settings"]
    got = {
        r["instr_id"]: r["spice"]
        for r in pq.read_table(str(tmp_path / "out" / "instructions-00000-of-00001.parquet")).to_pylist()
    }
    assert [got[i] for i in ids] == items and len(set(items)) > 3
    spice = summary["by_system"]["s"]["spice"]
    assert abs(spice["score"] - mean) <= 1e-12 and summary["spice"] == "computed"
    assert (
        spice["interval"][0] <= spice["score"] <= spice["interval"][1] and spice["interval"][0] < spice["interval"][1]
    )


def test_without_rhino_spice_is_refused_in_one_line_and_the_rest_runs(tmp_path, shared_data, monkeypatch, capsys):
    monkeypatch.setenv("VLNKIT_RHINO_JAR", str(tmp_path / "no_rhino.jar"))
    path, _ = _small_spice_file(tmp_path, shared_data)
    summary = run(tmp_path / "out", f"--predictions=s={path}", "--spice")
    lines = [x for x in capsys.readouterr().out.splitlines() if "SPICE refused" in x]
    assert len(lines) == 1 and "apt-get install librhino-java" in lines[0]
    assert summary["instructions"] == 20 and "spice" not in summary["by_system"]["s"]
    assert summary["spice"].startswith("SPICE needs Rhino") and summary["meteor"] == "not asked for (--meteor)"


def test_a_system_named_as_the_human_row_is_refused_or_dead_lettered(tmp_path, capsys):
    """With --human_baseline, "human" names the reference row, whose CIDEr-D frequencies are its own: a system of
    that name is refused at launch (--predictions) or, named inside a multi-system file, is a dead letter."""
    from transforms.instructions import BATCH, FILE, HUMAN, _ReadBatches

    data = tmp_path / "human.json"
    data.write_text(json.dumps([{"path_id": 1, "instructions": ["walk ahead", "go on"]}]))
    with pytest.raises(SystemExit) as refused:
        run(tmp_path / "out", f"--predictions={HUMAN}={data}", f"--references={data}", "--human_baseline")
    err = capsys.readouterr().err
    assert refused.value.code == 2 and err.count("\n") == 1 and "--human_baseline row" in err, err
    assert not list((tmp_path / "out").iterdir())  # nothing staged, locked or published
    spice = tmp_path / "multi.json"  # the SPICE layout carries its references; the system comes from the flag
    spice.write_text(json.dumps([{"image_id": "1_0", "refs": ["walk ahead", "go on"], "test": "walk on"}]))
    reader = _ReadBatches(None, 16, True, reserved=HUMAN)
    out = list(reader.process((FILE, (HUMAN, str(spice)))))
    assert [o.value["reason"] for o in out] == [
        f"system {HUMAN!r} is the name of the --human_baseline row: rename the system"
    ]
    assert list(_ReadBatches(None, 16, True).process((FILE, ("other", str(spice)))))[0][0] == "other"
    assert list(reader.process((BATCH, (HUMAN, [1])))) == [(HUMAN, [1])]  # the human row's own batches pass
