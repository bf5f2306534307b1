"""RoundTripParaphrase and ComposeR4RParaphrases on TestPipeline, offline and through the gRPC stand-in."""

from __future__ import annotations

import json

import apache_beam as beam
import grpc
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.translate_standin import TranslateStandin, sample_r4r_records, sample_records
from transforms.deadletter import DEAD_LETTER
from transforms.paraphrase import BY_TEXT, ComposeR4RParaphrases, RoundTripParaphrase, TranslatorSpec
from transforms.read import ReadR2R
from transforms.tally import SumDicts
from vlnkit.paraphrases.bleu_filter import BleuBounds, compose, judge
from vlnkit.paraphrases.translation import GOOGLE, OFFLINE_DEMO, GoogleConfig, RetryPolicy, demo_round_trip

LANGS = ("de", "fr", "zh")


def expected_rows(records, languages=LANGS, skip=(), backend=OFFLINE_DEMO):
    """Rows computed directly from the core: every instruction x pivot (minus `skip` texts), each
    naming the backend that made it."""
    out = []
    for r in records:
        for k, text in enumerate(r["instructions"]):
            if text in skip:
                continue
            for v in judge(text, [(lang, demo_round_trip(text, lang)) for lang in languages]):
                out.append(
                    {
                        "instr_id": f"{r['path_id']}_{k}",
                        "instruction": text,
                        "source_language": "en",
                        **v,
                        "backend": backend,
                    }
                )
    return out


def key(row):
    return json.dumps(row, sort_keys=True)


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "R2R_sample.json"
    path.write_text(json.dumps(sample_records()))
    return str(path)


def test_offline_round_trip_gives_every_instruction_x_pivot_as_the_core_computes_it(dataset):
    expected = [key(r) for r in expected_rows(sample_records())]
    with TestPipeline() as p:
        records = (p | ReadR2R([dataset]))["records"]
        out = records | RoundTripParaphrase(TranslatorSpec(OFFLINE_DEMO), LANGS, batch_texts=5)
        assert_that(out["rows"] | beam.Map(key), equal_to(expected), label="rows")
        assert_that(out[DEAD_LETTER], equal_to([]), label="no dead letters")
        assert_that(out[BY_TEXT] | beam.combiners.Count.Globally(), equal_to([11]), label="distinct texts")
        totals = out["stats"] | beam.CombineGlobally(SumDicts())
        assert_that(
            totals | beam.Map(lambda t: (t["texts"], t["translate.requests"], sum(t[f"rows.{x}"] for x in LANGS))),
            equal_to([(11, 2 * 3 * 3, 36)]),  # 3 batches x 3 pivots x 2 ways; 12 instructions x 3 pivots
            label="stats",
        )


def test_google_backend_through_the_standin_retries_transients_and_dead_letters_the_rest(dataset, tmp_path):
    records = sample_records()
    bad = records[3]["instructions"][0]
    with TranslateStandin() as server:
        server.fail_next(3, grpc.StatusCode.UNAVAILABLE)
        server.fail_text(bad, grpc.StatusCode.INVALID_ARGUMENT)
        google = GoogleConfig(
            project="p", endpoint=server.endpoint, insecure=True, max_segments=4, retry=RetryPolicy(6, 0.001)
        )
        spec = TranslatorSpec(GOOGLE, google, str(tmp_path / "cache"))
        with TestPipeline() as p:
            recs = (p | ReadR2R([dataset]))["records"]
            out = recs | RoundTripParaphrase(spec, LANGS, batch_texts=100)
            assert_that(
                out["rows"] | beam.Map(key),
                equal_to([key(r) for r in expected_rows(records, skip={bad}, backend=GOOGLE)]),
                "rows",
            )
            assert_that(
                out[DEAD_LETTER] | beam.Map(lambda d: (d["stage"], d["record"], d["reason"].split(":")[0])),
                equal_to([("translate", "instr_id=13_0", f"pivot {lang}") for lang in LANGS]),
                label="dead letters",
            )
            totals = out["stats"] | beam.CombineGlobally(SumDicts())
            assert_that(totals | beam.Map(lambda t: t["translate.retries"]), equal_to([3]), label="retries")
        assert all(len(r.contents) <= 4 for r in server.requests)
        assert {r.mime_type for r in server.requests} == {"text/plain"}
    assert list((tmp_path / "cache").glob("part-*.parquet"))  # the cache was extended


def test_r4r_paraphrases_are_composed_from_the_r2r_sentence_paraphrases(dataset, tmp_path):
    records = sample_records()
    r4r = sample_r4r_records(records)
    broken = dict(r4r[1], path_id=99, instructions=r4r[1]["instructions"][:-1] + ["revised text"])
    orphan = dict(r4r[0], path_id=98, first_path_id=77)
    r4r_path = tmp_path / "R4R.json"
    r4r_path.write_text(json.dumps(r4r + [broken, orphan]))

    expected = []
    for rec in r4r:
        for k, text in enumerate(rec["instructions"]):
            a = next(r for r in records if r["path_id"] == rec["first_path_id"])["instructions"][k // 3]
            b = next(r for r in records if r["path_id"] == rec["second_path_id"])["instructions"][k % 3]
            cands = [(lang, compose(a, demo_round_trip(a, lang), demo_round_trip(b, lang))) for lang in LANGS]
            for v in judge(text, cands, BleuBounds(0.2, 0.8)):
                expected.append(
                    key(
                        {
                            "instr_id": f"{rec['path_id']}_{k}",
                            "instruction": text,
                            "source_language": "en",
                            **v,
                            "backend": OFFLINE_DEMO,
                        }
                    )
                )
    assert len(expected) == 2 * 9 * 3

    with TestPipeline() as p:
        r2r = (p | "R2R" >> ReadR2R([dataset]))["records"]
        para = r2r | RoundTripParaphrase(TranslatorSpec(OFFLINE_DEMO), LANGS, BleuBounds(0.2, 0.8))
        r4r_recs = (p | "R4R" >> ReadR2R([str(r4r_path)]))["records"]
        out = r4r_recs | ComposeR4RParaphrases(r2r, para[BY_TEXT], LANGS, BleuBounds(0.2, 0.8), backend="offline-demo")
        assert_that(out["rows"] | beam.Map(key), equal_to(expected), label="rows")
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: (d["stage"], d["record"].split()[0], d["reason"][:25])),
            equal_to(
                [
                    ("compose", "#2", "instruction 8 is not the "),
                    ("compose", "#3", "R2R path_id 77 is not in "),
                ]
            ),
            label="dead letters",
        )
