"""RoundTripParaphrase on RxR guide records (from R2R val_unseen via `vlnkit.fixtures.rxr`): every pivot but the
instruction's own language, and back into that language, seen on the wire through the gRPC stand-in."""

from __future__ import annotations

import json
from collections import defaultdict

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.translate_standin import TranslateStandin
from transforms.deadletter import DEAD_LETTER
from transforms.paraphrase import RoundTripParaphrase, TranslatorSpec
from vlnkit.fixtures.rxr import read_jsonl, write_rxr_fixtures
from vlnkit.paraphrases.bleu_filter import judge
from vlnkit.paraphrases.translation import GOOGLE, GoogleConfig, demo_translate

pytestmark = pytest.mark.real_data
PIVOTS = ("de", "hi", "te")


@pytest.fixture(scope="module")
def guides(r2r_dir, connectivity_dir, tmp_path_factory):
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:8]
    files = write_rxr_fixtures(
        records, "val_unseen", connectivity_dir, str(tmp_path_factory.mktemp("rxr")), pose_traces=False
    )
    return [
        {**g, "instr_id": str(g["instruction_id"]), "_source": files.guide, "_index": i}
        for i, g in enumerate(read_jsonl(files.guide))
    ]


def expected_rows(guides):
    """Rows from the core: each text to every pivot but its own primary language and back into it."""
    out = []
    for g in guides:
        src = g["language"].split("-")[0]
        cands = [(p, demo_translate(demo_translate(g["instruction"], src, p), p, src)) for p in PIVOTS if p != src]
        for v in judge(g["instruction"], cands):
            row = {
                "instr_id": str(g["instruction_id"]),
                "instruction": g["instruction"],
                "source_language": g["language"],
            }
            out.append(json.dumps({**row, **v, "backend": GOOGLE}, sort_keys=True, ensure_ascii=False))
    return out


def test_each_instruction_skips_its_own_language_and_comes_back_into_it(guides):
    assert {g["language"] for g in guides} == {"en-IN", "en-US", "hi-IN", "te-IN"}
    with TranslateStandin() as server:
        spec = TranslatorSpec(GOOGLE, GoogleConfig(project="p", endpoint=server.endpoint, insecure=True))
        with TestPipeline() as p:
            out = p | beam.Create(guides) | RoundTripParaphrase(spec, PIVOTS, batch_texts=100)
            rows = out["rows"] | beam.Map(lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False))
            assert_that(rows, equal_to(expected_rows(guides)), label="rows")
            assert_that(out[DEAD_LETTER], equal_to([]), label="no_dead_letters")
        sent = defaultdict(set)  # text -> the (source, target) of every request that carried it
        for request in server.requests:
            for text in request.contents:
                sent[text].add((request.source, request.target))
    for g in guides:
        src = g["language"].split("-")[0]
        pivots = [p for p in PIVOTS if p != src]
        assert sent[g["instruction"]] == {(src, p) for p in pivots}, g["language"]
        for p in pivots:  # the pivot text went back into the instruction's own language
            assert sent[demo_translate(g["instruction"], src, p)] == {(p, src)}
