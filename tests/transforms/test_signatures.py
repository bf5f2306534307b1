"""Beam's signature lookups answered from a cache (transforms/signatures.py) give what Beam's own function
gives, for every kind of callable Beam inspects; and a DoFn's state and timers are still found."""

from __future__ import annotations

import dataclasses
import functools
import gc
import importlib
import inspect
import weakref

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import userstate
from apache_beam.typehints import decorators

import transforms
from transforms.signatures import USERS, cache_beam_signatures


class Counting(beam.DoFn):
    COUNT = userstate.ReadModifyWriteStateSpec("count", VarIntCoder())

    def process(self, element, count=beam.DoFn.StateParam(COUNT)):
        seen = (count.read() or 0) + 1
        count.write(seen)
        yield element[0], seen


@dataclasses.dataclass
class CallableRow:  # eq=True: unhashable, so never cached
    factor: int

    def __call__(self, x, y=2):
        return x * self.factor * y


def every_callable():
    """Functions, lambdas, bound and class methods, builtins, partials, classes, callable objects, and the
    methods of every DoFn and PTransform the project defines."""
    found = [lambda a, b=1: a, len, str.strip, functools.partial(max, 1), dict, CallableRow(3), Counting().process]
    found += [Counting.process, CallableRow.__call__, beam.Map(print).expand]
    for module in ("transforms.score.score", "transforms.write", "transforms.read", "transforms.r4r"):
        for obj in vars(importlib.import_module(module)).values():
            if inspect.isclass(obj) and issubclass(obj, (beam.DoFn, beam.PTransform)):
                found += [getattr(obj, name) for name in dir(obj) if inspect.isfunction(getattr(obj, name, None))]
    return found


def test_every_user_of_beams_function_calls_the_cached_one_once_the_package_is_imported():
    assert transforms.__name__ == "transforms"
    cached = decorators.get_signature
    assert cached.uncached is not None
    for name in USERS:
        assert importlib.import_module(name).get_signature is cached, name
    cache_beam_signatures()  # a second call changes nothing
    assert decorators.get_signature is cached


def test_the_cached_signature_is_the_one_beams_function_gives():
    cached = decorators.get_signature
    for func in every_callable():
        assert cached(func) == cached.uncached(func), func
        assert cached(func) == cached.uncached(func), func  # answered from the cache the second time


def test_a_functions_signature_is_computed_once_and_a_bound_methods_once_per_function():
    cached = decorators.get_signature

    def f(a, b=3):
        return a

    assert cached(f) is cached(f)
    first, second = Counting(), Counting()
    assert cached(first.process) is cached(second.process)
    assert "self" not in cached(first.process).parameters and "self" in cached(Counting.process).parameters


def test_the_cache_holds_no_function_alive():
    cached = decorators.get_signature

    def make():
        return lambda x: x

    func = make()
    cached(func)
    ref = weakref.ref(func)
    del func
    gc.collect()
    assert ref() is None


def test_a_stateful_dofn_is_still_found_stateful_and_runs():
    assert userstate.is_stateful_dofn(Counting())
    assert not userstate.is_stateful_dofn(beam.Map(print).dofn)
    with TestPipeline() as p:
        got = p | beam.Create([("a", 1), ("a", 2), ("b", 3)]) | beam.ParDo(Counting())
        assert_that(got, equal_to([("a", 1), ("a", 2), ("b", 1)]))
