"""Report transforms on TestPipeline: Beam's batched, merged aggregation equals one direct computation."""

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.deadletter import DEAD_LETTER
from transforms.report import DatasetStats, MergePartials, ParquetStats, ReportInput, SampleEpisodes
from vlnkit.datasets.r2r import parse_r2r
from vlnkit.navigation.graph import GraphStore
from vlnkit.reports.stats import (
    METRIC_WIDTHS,
    PARAPHRASES,
    PERTURBATIONS,
    SCORES,
    dataset_partial,
    merge,
    paraphrases_partial,
    perturbations_partial,
    sample_key,
    scores_partial,
)


def approx_equal(expected: dict):
    def check(actual):
        assert len(actual) == 1
        got = actual[0]
        assert got.keys() == expected.keys()
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, rel=1e-12), key

    return check


@pytest.mark.real_data
def test_dataset_stats_equal_direct_computation(r2r_dir, connectivity_dir, tmp_path):
    path = str(r2r_dir / "R2R_val_seen.json")
    records = [r for r in parse_r2r(open(path, "rb").read(), path) if isinstance(r, dict)]
    expected, bad = dataset_partial("val_seen", records, GraphStore(connectivity_dir))
    assert not bad
    with TestPipeline() as p:
        stats = p | DatasetStats("val_seen", [path], connectivity_dir)
        merged = stats["partials"] | beam.CombineGlobally(MergePartials())
        assert_that(merged, approx_equal(expected), label="partials")
        assert_that(stats[DEAD_LETTER], equal_to([]), label="dead")
        assert_that(
            stats["references"] | beam.Map(lambda r: (r["path_id"], r["label"], len(r["path"]))),
            equal_to([(r["path_id"], "val_seen", len(r["path"])) for r in records]),
            label="refs",
        )


def score_file(folder, rows: int, seed: int, with_path: bool = False):
    rng = np.random.default_rng(seed)
    cols = {"instr_id": [f"{k}_{seed}" for k in range(rows)], "scan": ["s"] * rows}
    for m in METRIC_WIDTHS:
        v = rng.uniform(0, 5, rows)
        v[rng.random(rows) < 0.05] = np.nan
        cols[m] = pa.array(v, mask=np.isnan(v))
    if with_path:
        cols["path"] = [["a", "b"]] * rows
    folder.mkdir(exist_ok=True)
    path = folder / f"episodes-0000{seed}-of-00002.parquet"
    pq.write_table(pa.table(cols), path)
    return str(path), cols


def test_parquet_stats_and_score_sample(tmp_path):
    files, expected, all_ids = [], {}, []
    for seed in (0, 1):
        path, cols = score_file(tmp_path / "agent", 300, seed, with_path=True)
        files.append(ReportInput(path, SCORES, "agent"))
        metrics = {m: np.asarray(cols[m].to_numpy(zero_copy_only=False), dtype=float) for m in METRIC_WIDTHS}
        merge(expected, scores_partial("agent", metrics))
        all_ids += cols["instr_id"]
    pert = tmp_path / "pert" / "perturbations-00000-of-00001.parquet"
    pert.parent.mkdir()
    fam, meth = ["instruction", "trajectory", "trajectory"], ["direction_swap", "random_walk", "path_reversal"]
    pq.write_table(
        pa.table({"source_instr_id": ["1_0"] * 3, "family": fam, "method": meth, "instruction": ["x"] * 3}), pert
    )
    para = tmp_path / "para" / "paraphrases-00000-of-00001.parquet"
    para.parent.mkdir()
    lang, kept, bleu = ["de", "de", "fr"], [True, False, True], [0.3, 0.95, 0.5]
    pq.write_table(pa.table({"instr_id": ["1_0"] * 3, "language": lang, "kept": kept, "bleu": bleu}), para)
    files += [ReportInput(str(pert), PERTURBATIONS, "pert"), ReportInput(str(para), PARAPHRASES, "para")]
    merge(expected, perturbations_partial("pert", fam, meth))
    merge(expected, paraphrases_partial("para", lang, np.array(kept), np.array(bleu)))
    broken = tmp_path / "bad" / "episodes-00000-of-00001.parquet"
    broken.parent.mkdir()
    broken.write_bytes(b"not parquet")
    files.append(ReportInput(str(broken), SCORES, "bad"))
    # The independent sample: the 5 smallest keys over every row of the sampled set.
    want = sorted(all_ids, key=lambda i: sample_key(3, "agent", i))[:5]
    with TestPipeline() as p:
        out = p | ParquetStats(files, seed=3, sample_from="agent", sample=5)
        merged = out["partials"] | beam.CombineGlobally(MergePartials())
        assert_that(merged, approx_equal(expected), label="partials")
        top = out["samples"] | beam.combiners.Top.Of(5, key=lambda c: c[0], reverse=True)
        assert_that(top | beam.Map(lambda cs: [c[1]["instr_id"] for c in cs]), equal_to([want]), label="sample")
        assert_that(
            top | beam.Map(lambda cs: all(c[1]["agent"] == ["a", "b"] for c in cs)), equal_to([True]), label="agent"
        )
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: (d["source"], d["reason"][:21])),
            equal_to([(str(broken), "cannot read Parquet (")]),
            label="dead",
        )


def lite(path_id, instructions=2, label="R2R", **extra):
    return {
        "label": label,
        "path_id": path_id,
        "scan": "s",
        "path": ["a", "b"],
        "instr_ids": [f"{path_id}_{k}" for k in range(instructions)],
        **extra,
    }


def test_sample_episodes_without_scores_picks_smallest_keys_and_attaches_sources():
    refs = [lite(k) for k in range(30)] + [lite(k, label="other") for k in range(5)]
    r4r = [lite(1000 + k, label="R4R", first_path_id=k, second_path_id=k + 1, join_distance=1.0) for k in range(20)]
    want = sorted(range(20), key=lambda k: sample_key(7, "R4R", 1000 + k))[:4]
    with TestPipeline() as p:
        episodes = {
            "references": p | "Refs" >> beam.Create(refs + r4r),
            "score_samples": p | "NoScores" >> beam.Create([]),
        } | SampleEpisodes(4, 7, "R4R", with_scores=False)

        def check(actual):
            (eps,) = actual
            assert [e["reference"]["path_id"] - 1000 for e in eps] == want
            for e in eps:
                k = e["reference"]["path_id"] - 1000
                # sources come from a non-R4R dataset, first by label order ("R2R" before "other")
                assert [s["path_id"] for s in e["sources"]] == [k, k + 1]
                assert {s["label"] for s in e["sources"]} == {"R2R"}

        assert_that(episodes, check)


def test_sample_episodes_with_scores_matches_instr_ids():
    refs = [lite(k, instructions=3) for k in range(10)]
    candidates = [(sample_key(0, "agent", f"{k}_1"), {"instr_id": f"{k}_1", "label": "agent"}) for k in range(10)]
    candidates.append((0, {"instr_id": "999_0", "label": "agent"}))  # scored, but in no dataset: not drawn
    want = [c[1]["instr_id"] for c in sorted(candidates, key=lambda c: c[0])[:3] if c[1]["instr_id"] != "999_0"]
    with TestPipeline() as p:
        episodes = {
            "references": p | "Refs" >> beam.Create(refs),
            "score_samples": p | "Scores" >> beam.Create(candidates),
        } | SampleEpisodes(3, 0, None, with_scores=True)
        assert_that(episodes | beam.Map(lambda eps: [e["score"]["instr_id"] for e in eps]), equal_to([want]))
