"""GatherToOne: a whole PCollection as exactly one list, also when the PCollection is empty."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.gather import GatherToOne


def _sorted(xs):
    return sorted(xs)


def test_gathers_every_element_into_one_list():
    with TestPipeline() as p:
        out = p | beam.Create(list(range(50))) | GatherToOne() | beam.Map(_sorted)
        assert_that(out, equal_to([list(range(50))]))


def test_empty_input_gives_one_empty_list():
    # The single group must exist even with no input, so that one-file outputs (dead letters,
    # JSON datasets) are still written, as an empty file rather than not at all.
    with TestPipeline() as p:
        out = p | beam.Create([]) | GatherToOne()
        assert_that(out, equal_to([[]]))


def test_falsy_and_none_elements_are_kept():
    # The marker that makes the group exist is removed by type, not by truthiness.
    with TestPipeline() as p:
        out = p | beam.Create([0, None, "", []]) | GatherToOne() | beam.Map(lambda xs: sorted(map(repr, xs)))
        assert_that(out, equal_to([sorted(map(repr, [0, None, "", []]))]))


def test_two_gathers_in_one_pipeline_do_not_mix():
    with TestPipeline() as p:
        a = p | "A" >> beam.Create([1, 2]) | "GatherA" >> GatherToOne() | "SortA" >> beam.Map(_sorted)
        b = p | "B" >> beam.Create([]) | "GatherB" >> GatherToOne()
        assert_that(a, equal_to([[1, 2]]), label="a")
        assert_that(b, equal_to([[]]), label="b")
