"""Gathering a whole PCollection in one place, for outputs that are one file; and PCollections into one.

Beam has no "write one file from everything" step. The output must also exist when the input is
empty (so an empty output file is still written): one Impulse element reads the collection as a
list side input, which gives exactly one list on every runner. That pattern lives here, once.
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
        # One Impulse element reads the whole collection as a side input: exactly one output, also when
        # the collection is empty, in one fused stage (a keyed GroupByKey costs three stages and an
        # extra always-present marker element).
        return (
            pcoll.pipeline
            | "One" >> beam.Impulse()
            | "AsOneList" >> beam.Map(_as_list, items=beam.pvalue.AsList(pcoll))
        )


def _as_list(_impulse, items) -> list:
    return list(items)


def flatten(pcolls, pipeline: beam.Pipeline, label: str) -> beam.PCollection:
    """The PCollections `pcolls` as one (step `label`); none at all gives an empty one (step `No<label>`).

    Why not `beam.Flatten(pipeline=...)` of nothing: Beam 2.62's Flink job server cannot fuse a Flatten
    without inputs ("A PCollectionNode should have exactly one producing PTransformNode, but found 2"),
    so every job that may flatten nothing (a run without dead letters, say) makes an empty Create instead.
    """
    pcolls = tuple(pcolls)
    if not pcolls:
        return pipeline | f"No{label}" >> beam.Create([])
    return pcolls | label >> beam.Flatten()
