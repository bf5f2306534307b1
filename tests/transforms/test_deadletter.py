"""WriteDeadLetters: every dead letter of every stage in one sorted JSON Lines file, never dropped."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.deadletter import DEAD_LETTER_FILE, WriteDeadLetters, dead_letter


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().splitlines()]


def test_dead_letter_has_the_four_fields():
    d = dead_letter("read", "a.json", "#3 (path_id=7)", "missing field 'path'")
    assert d == {"stage": "read", "source": "a.json", "record": "#3 (path_id=7)", "reason": "missing field 'path'"}


def test_several_stages_flattened_sorted_into_one_file(tmp_path):
    path = str(tmp_path / DEAD_LETTER_FILE)
    a = [dead_letter("read", "b.json", "#1", "bad json"), dead_letter("read", "a.json", "#0", "no scan")]
    b = [dead_letter("join", "a.json", "#2", "viewpoint x not in scan S \u00e9")]
    with TestPipeline() as p:
        flat = (p | "A" >> beam.Create(a), p | "B" >> beam.Create(b)) | WriteDeadLetters(path)
        # The flattened PCollection is returned so a job can count it.
        assert_that(flat, equal_to(a + b))
    lines = _lines(path)
    assert lines == sorted(a + b, key=lambda d: json.dumps(d, sort_keys=True, ensure_ascii=False))
    assert len(lines) == 3
    # Non-ASCII reasons are written as UTF-8, not escaped away.
    assert "\u00e9" in open(path, encoding="utf-8").read()


def test_no_dead_letters_still_writes_an_empty_file(tmp_path):
    path = str(tmp_path / DEAD_LETTER_FILE)
    with TestPipeline() as p:
        _ = (p | beam.Create([]),) | WriteDeadLetters(path)
    assert open(path, encoding="utf-8").read() == ""
