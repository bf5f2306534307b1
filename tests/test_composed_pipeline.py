"""The composed pipeline of docs/composing.md gives the rows the jobs give when run one by one.

The doc's python block is executed as it stands (so the doc cannot drift): it builds read R2R ->
JoinR4R -> RoundTripParaphrase + Perturb -> AssembleCompat, and ReferenceBatchesFromRecords +
ReadPredictionBatches -> ScoreBuckets, in one beam.Pipeline with no file between the steps. The
same inputs then go through build_r4r, paraphrase, perturb, build_compat and score via their
main() functions, each reading the previous job's files, and every output must match row for row.
"""

from __future__ import annotations

import glob
import json
import re
from collections import Counter
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipelines import build_compat, build_r4r, paraphrase, perturb, score
from transforms.deadletter import DEAD_LETTER
from transforms.score.read import ReferenceBatchesFromRecords

DOC = Path(__file__).resolve().parents[1] / "docs" / "composing.md"


def doc_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1, "docs/composing.md should hold exactly one python block"
    return blocks[0]


def canonical(pattern: str) -> list[str]:
    files = sorted(glob.glob(pattern))
    assert files, f"no file matches {pattern}"
    return sorted(json.dumps(r, sort_keys=True) for r in pq.read_table(files).to_pylist())


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """Run the doc's block once (its temporary folder redirected into pytest's)."""
    workdir = tmp_path_factory.mktemp("doc")
    code = doc_code()
    # Only the block's own call is redirected (patching tempfile.mkdtemp would also move Beam's temp folders).
    call = 'tempfile.mkdtemp(prefix="vlnkit-compose-")'
    assert code.count(call) == 1
    namespace = {"__name__": "composing_doc"}
    exec(compile(code.replace(call, repr(str(workdir))), str(DOC), "exec"), namespace)
    return namespace["result"], namespace


@pytest.fixture(scope="module")
def jobs(example, tmp_path_factory):
    """The five jobs, one after the other, on the example's inputs; returns their output folder."""
    result, ns = example
    t = tmp_path_factory.mktemp("jobs")
    conn, r4r_json = result["connectivity_dir"], str(t / "R4R.json")
    common = ["--runner=DirectRunner", f"--connectivity_dir={conn}"]
    methods = "--methods=" + ",".join(ns["METHODS"])
    summaries = {
        "build_r4r": build_r4r.main(
            [*common, f"--dataset={result['r2r_path']}", f"--output_dir={t}/r4r", f"--json_output={r4r_json}"]
        ),
        "paraphrase": paraphrase.main(
            [
                "--runner=DirectRunner",
                f"--dataset={r4r_json}",
                "--translator=offline-demo",
                "--languages=de",
                f"--output_dir={t}/para",
            ]
        ),
        "perturb": perturb.main(
            [*common, f"--dataset={r4r_json}", methods, "--spacy_model=blank:en", f"--seed={ns['SEED']}"]
            + [f"--output_dir={t}/perturb"]
        ),
        "build_compat": build_compat.main(
            [*common, f"--dataset={r4r_json}", methods, "--spacy_model=blank:en", f"--seed={ns['SEED']}"]
            + [f"--paraphrases={t}/para/paraphrases-*.parquet", f"--output_dir={t}/compat"]
            + ["--allow_demo_paraphrases"]  # the composed pipeline uses the offline demo translator too
        ),
        "score": score.main(
            [
                *common,
                f"--dataset={r4r_json}",
                f"--predictions={ns['AGENT']}={result['predictions_path']}",
                f"--output_dir={t}/score",
            ]
        ),
    }
    return t, summaries


def test_doc_example_runs_without_dead_letters(example):
    result, _ = example
    assert Path(result["dead_letter"]).read_text() == ""
    families = Counter((r["family"], r["method"]) for r in map(json.loads, canonical(result["compat"])))
    positives = families[("ground_truth", "ground_truth")] + families[("ground_truth", "paraphrase")]
    # Something of every kind was built: positives, both negative families, paraphrase positives.
    assert families[("ground_truth", "paraphrase")] > 0
    assert families[("instruction", "direction_swap")] > 0
    assert families[("trajectory", "random_walk")] > 0 and families[("trajectory", "path_reversal")] > 0
    assert sum(v for (f, _), v in families.items() if f == "trajectory") <= positives // 2


def test_r4r_rows_match_build_r4r(example, jobs):
    result, _ = example
    t, summaries = jobs
    rows = canonical(result["r4r"])
    assert len(rows) == summaries["build_r4r"]["dataset"]["paths"] > 0
    assert rows == canonical(f"{t}/r4r/paths-*.parquet")


def test_paraphrase_rows_match_paraphrase_job(example, jobs):
    result, _ = example
    t, _ = jobs
    assert canonical(result["paraphrases"]) == canonical(f"{t}/para/paraphrases-*.parquet")


def test_perturbation_rows_match_perturb_job(example, jobs):
    result, _ = example
    t, _ = jobs
    rows = canonical(result["perturbations"])
    assert rows and rows == canonical(f"{t}/perturb/perturbations-*.parquet")


def test_compat_rows_match_build_compat_with_the_same_paraphrases(example, jobs):
    result, _ = example
    t, summaries = jobs
    assert canonical(result["compat"]) == canonical(f"{t}/compat/compat-*.parquet")
    assert summaries["build_compat"]["dead_letters"] == 0


def test_episode_scores_match_the_score_job_on_build_r4r_json(example, jobs):
    result, _ = example
    t, summaries = jobs
    rows = canonical(result["episodes"])
    predictions = json.loads(Path(result["predictions_path"]).read_text())
    assert len(rows) == len(predictions) == summaries["score"]["count"]
    assert summaries["score"]["missing_predictions"] == 0 and summaries["score"]["dead_letters"] == 0
    assert rows == canonical(f"{t}/score/episodes-*.parquet")


def test_reference_batches_from_records_dead_letters_bad_records(example):
    """An invalid record becomes a dead letter naming the source, the record and the reason; valid ones
    arrive as one ReferenceBatch piece with their path_ids, and the refused record's key travels on as a
    RefusedReferences piece, so a prediction for it is told the record was refused, not that it is unknown."""
    result, _ = example
    conn = result["connectivity_dir"]
    records = json.loads(Path(result["r2r_path"]).read_text())[:3]
    bad = {**records[0], "path_id": 999, "heading": "north"}
    with TestPipeline() as p:
        out = p | beam.Create([*records, bad]) | ReferenceBatchesFromRecords(conn, buckets=1, source="test-records")
        ids = out["batches"] | beam.FlatMap(lambda kv: [(kv[0], type(kv[1]).__name__, int(i)) for i in kv[1].path_id])
        expected = [(0, "ReferenceBatch", r["path_id"]) for r in records] + [(0, "RefusedReferences", 999)]
        assert_that(ids, equal_to(expected), label="valid")
        reasons = out[DEAD_LETTER] | beam.Map(
            lambda d: (d["source"], "path_id=999" in d["record"], "heading" in d["reason"])
        )
        assert_that(reasons, equal_to([("test-records", True, True)]), label="dead")


def test_duplicate_path_ids_from_records_are_dead_lettered_not_dropped(example, tmp_path):
    """Two records with one path_id: the scorer keeps one and dead-letters the other, naming the source."""
    from transforms.score.read import ReadScoringInputs
    from transforms.score.score import LINES, ScoreBuckets
    from vlnkit.evaluation.scoring_config import ScoringConfig

    result, _ = example
    conn = result["connectivity_dir"]
    record = json.loads(Path(result["r2r_path"]).read_text())[0]
    empty = tmp_path / "none.json"
    empty.write_text("[]")
    with TestPipeline() as p:
        refs = p | beam.Create([record, dict(record)]) | ReferenceBatchesFromRecords(conn, buckets=1, source="mine")
        preds = p | ReadScoringInputs([("a", [str(empty)])], [], conn, 1)
        scored = (
            (refs["batches"], preds["batches"])
            | beam.Flatten()
            | ScoreBuckets(conn, {"a": [str(empty)]}, ["mine"], ScoringConfig())
        )
        dead = scored[DEAD_LETTER] | beam.Map(
            lambda d: (d["stage"], d["source"], str(record["path_id"]) in d["reason"])
        )
        assert_that(dead, equal_to([("dedupe", "mine", True)]), label="dedupe")
        k = len(record["instructions"])
        missing = (
            scored[LINES] | beam.Filter(lambda pair: pair[0] == "missing_predictions") | beam.FlatMap(lambda p: p[1])
        )
        assert_that(missing, equal_to([f"{record['path_id']}_{i}" for i in range(k)]), label="missing")
