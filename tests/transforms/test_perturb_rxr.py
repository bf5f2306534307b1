"""Perturb on RxR guide records (made from R2R val_unseen by `vlnkit.fixtures.rxr`): direction swap in English,
Hindi and Telugu against the core called directly, the English-only methods "not applicable" per
language (never dead letters), trajectory perturbations for every language."""

import json
from collections import Counter

import apache_beam as beam
import pytest
import spacy
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.deadletter import DEAD_LETTER
from transforms.perturb import STATS, Perturb, instruction_items
from vlnkit.datasets.languages import language_counts
from vlnkit.fixtures.rxr import read_jsonl, write_rxr_fixtures
from vlnkit.perturbations.compat import ALL_METHODS, NotApplicable, perturbation_row, record_rng
from vlnkit.perturbations.direction_lexicons import lexicon_for
from vlnkit.perturbations.instructions import direction_swap
from vlnkit.perturbations.nlp import NOT_ENGLISH
from vlnkit.perturbations.summary import by_language

pytestmark = pytest.mark.real_data


@pytest.fixture(scope="module")
def guides(r2r_dir, connectivity_dir, tmp_path_factory):
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:15]
    files = write_rxr_fixtures(
        records, "val_unseen", connectivity_dir, str(tmp_path_factory.mktemp("rxr")), pose_traces=False
    )
    lines = read_jsonl(files.guide)
    return [{**line, "_source": files.guide, "_index": i} for i, line in enumerate(lines)]


def expected_direction_rows(guides, seed):
    out = []
    for guide in guides:
        (item,) = instruction_items(guide)
        primary = guide["language"].split("-")[0]
        res = direction_swap(
            spacy.blank(primary)(item["instruction"]),
            record_rng(seed, "direction_swap", item["source_instr_id"], 0),
            language=guide["language"],
        )
        if not isinstance(res, NotApplicable):
            out.append(perturbation_row(item, res, 0))
    return out


def canon(row):
    return json.dumps(row, sort_keys=True, ensure_ascii=False)


def test_rxr_items_are_addressed_by_instruction_id_and_carry_the_language(guides):
    assert Counter(g["language"] for g in guides).keys() == {"en-IN", "en-US", "hi-IN", "te-IN"}
    for guide in guides:
        (item,) = instruction_items(guide)
        assert item["source_instr_id"] == str(guide["instruction_id"]) and item["language"] == guide["language"]


def test_every_method_on_rxr_records_in_every_language(guides, connectivity_dir):
    seed = 4
    with TestPipeline() as p:
        out = p | beam.Create(guides) | Perturb(ALL_METHODS, None, connectivity_dir, 1, seed)
        rows = out["rows"]
        direction = rows | "Dir" >> beam.Filter(lambda r: r["method"] == "direction_swap") | "C1" >> beam.Map(canon)
        assert_that(direction, equal_to([canon(r) for r in expected_direction_rows(guides, seed)]), label="direction")
        assert_that(out[DEAD_LETTER], equal_to([]), label="no_dead_letters")
        stats = (
            (out[STATS], p | "Counts" >> beam.Create([language_counts(g) for g in guides]))
            | beam.Flatten()
            | beam.FlatMap(lambda d: d.items())
            | beam.CombinePerKey(sum)
            | beam.combiners.ToDict()
        )
        summaries = stats | beam.Map(lambda t: by_language(t, ALL_METHODS))
        languages = Counter(g["language"] for g in guides)

        def check(summary):
            assert {lang: s["instructions"] for lang, s in summary.items()} == dict(languages)
            for lang, s in summary.items():
                appl = s["methods_applicability"]
                n = languages[lang]
                for method in ("random_walk", "path_reversal"):  # every path has a walk and a reversal
                    assert appl[method]["applied"] == n, (lang, method)
                if lang.startswith("en"):
                    assert (
                        appl["entity_swap"]["applied"] > 0 and NOT_ENGLISH not in appl["phrase_swap"]["not_applicable"]
                    )
                else:
                    for method in ("entity_swap", "phrase_swap"):
                        assert appl[method] == {
                            "applied": 0,
                            "applicability": 0.0,
                            "emitted": 0,
                            "duplicates_skipped": 0,
                            "not_applicable": {NOT_ENGLISH: n},
                        }
                    assert appl["direction_swap"]["applied"] > n // 2  # fixtures carry the lexicon's words

        assert_that(summaries, lambda got: check(got[0]), label="by_language")

        def swapped_within_the_language(row):
            lexicon = lexicon_for(row["language"])
            for c in row["changes"]:
                group = lexicon.set_of(tuple(c["before"].lower().split()))
                assert group is not None and c["after"].lower() in group, (row["language"], c)
            return row["language"]

        non_english = (
            rows
            | "DirOnly" >> beam.Filter(lambda r: r["method"] == "direction_swap" and not r["language"].startswith("en"))
            | beam.Map(swapped_within_the_language)
            | "Langs" >> beam.combiners.Count.PerElement()
            | beam.Keys()
        )
        assert_that(non_english, equal_to(["hi-IN", "te-IN"]), label="hi_te_swapped")
