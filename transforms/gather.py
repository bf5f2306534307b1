"""Gathering a whole PCollection in one place, for outputs that are one file.

Beam has no "write one file from everything" step; the pattern is to key every element alike and
group. The group must also exist when the input is empty (so an empty output file is still
written), which needs one extra always-present element. That pattern lives here, once.
"""

from __future__ import annotations

import apache_beam as beam


class GatherToOne(beam.PTransform):
    """PCollection[T] -> a PCollection of exactly one element: the list of every T (possibly empty).

    Use it only for small collections (dead letters, indexes, tallies): all of it meets in one worker.

        >>> import apache_beam as beam
        >>> with beam.Pipeline() as p:
        ...     _ = p | beam.Create([3, 1, 2]) | GatherToOne() | beam.Map(lambda xs: print(sorted(xs)))
        [1, 2, 3]
    """

    def expand(self, pcoll):
        always = pcoll.pipeline | "AlwaysOneGroup" >> beam.Create([(0, _EMPTY)])
        return (
            (pcoll | "KeyAll" >> beam.Map(lambda x: (0, x)), always)
            | "FlattenForOne" >> beam.Flatten()
            | "GroupAll" >> beam.GroupByKey()
            | "DropMarker" >> beam.Map(lambda kv: [x for x in kv[1] if not isinstance(x, _Empty)])
        )


class _Empty:
    """The marker that makes the single group exist; never part of the result."""

    def __reduce__(self):
        return (_Empty, ())


_EMPTY = _Empty()
