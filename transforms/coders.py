"""The coder of the large columnar values one step hands to the next (Arrow tables, batches, bootstrap sums).

Why a coder of our own: Beam counts the bytes of a step's outputs by sampling them (every one of the
first ten of a step, then about ten in every N), and for a value it knows only as `Any` it measures
by encoding the value whole (`FastPrimitivesCoder`, then pickle). These values are few and large, so
nearly every one is pickled to be measured: in the score job on 1M predictions about 300 MB were
pickled only for that (the scored Arrow tables, which the fused write step takes as they are and never
decodes, every bucket's bootstrap sums, and the read batches besides their real trip through the
shuffle), a quarter of a second of CPU on the step's own thread.
`BulkCoder` encodes exactly as Beam's `PickleCoder` does, and estimates a value's size from the
buffers it holds (`held_bytes`) without encoding it. A step's outputs get it by their declared types
(`with_output_types`): the types `BULK_TYPES` lists are registered with Beam's coder registry when this
module is imported.
"""

from __future__ import annotations

import pickle
from itertools import islice
from typing import Any

import apache_beam as beam
import numpy as np
import pyarrow as pa

from vlnkit.comparison.replicates import ReplicateSums
from vlnkit.datasets.columns import CompactBatch

__all__ = ["BulkCoder", "held_bytes", "declared_outputs", "BULK_TYPES"]

BULK_TYPES = (pa.Table, ReplicateSums, CompactBatch)
SAMPLED_ITEMS = 8  # a list's or a dict's size is estimated from this many of its items


def held_bytes(value) -> int:
    """About the bytes a value's pickle takes: its arrays' buffers, its strings, 8 per other scalar.

    Arrow and numpy report their buffers' sizes without a pass over the data; a large list or dict is
    estimated from its first `SAMPLED_ITEMS` items. (Beam uses the figure for its byte counters
    only, so an estimate within a small factor serves.)

        >>> held_bytes(np.zeros(10)), held_bytes({"a": "xyz"}), held_bytes([1, 2.0])
        (80, 4, 16)
    """
    if isinstance(value, (pa.Table, pa.RecordBatch, pa.Array, pa.ChunkedArray, np.ndarray)):
        return int(value.nbytes)
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, dict):
        items = list(islice(value.items(), SAMPLED_ITEMS))
        return sum(held_bytes(k) + held_bytes(v) for k, v in items) * len(value) // max(1, len(items))
    if isinstance(value, (list, tuple)):
        head = value[:SAMPLED_ITEMS]
        return sum(map(held_bytes, head)) * len(value) // max(1, len(head))
    if hasattr(value, "__dict__"):
        return held_bytes(list(vars(value).values()))
    return 8


def declared_outputs(par_do: beam.ParDo, main: str, *tags: str, **types):
    """`par_do.with_outputs(*tags, main=main)`, each output declared: of its type in `types` (so a bulk one
    travels with `BulkCoder`), the others as `Any` (Beam warns, on every run, of a tag left undeclared
    once another is declared)."""
    tagged = {tag: types.get(tag, Any) for tag in tags}
    return par_do.with_output_types(types.get(main, Any), **tagged).with_outputs(*tags, main=main)


class BulkCoder(beam.coders.Coder):
    """Pickles as `beam.coders.PickleCoder` does; `estimate_size` is `held_bytes` (see the module docstring)."""

    def encode(self, value) -> bytes:
        return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)

    def decode(self, encoded: bytes):
        return pickle.loads(encoded)

    def estimate_size(self, value) -> int:
        return held_bytes(value)

    def is_deterministic(self) -> bool:
        return False

    def to_type_hint(self):
        return Any


def _register() -> None:
    """`BULK_TYPES` -> `BulkCoder` in Beam's coder registry, for building pipelines in this process only.

    `register_coder` also lists a type among the registry's custom types, which a run that saves the main
    session (Dataflow's default with cloudpickle) pickles into the session every worker loads as it
    starts, before it can import this project: a worker started without the project's package would then
    die at start-up, and the job hang, instead of failing its first step with the import's error. A
    worker never needs the entry (it takes each coder from the pipeline itself), so it is left out of the
    custom types."""
    registry = beam.coders.registry
    for kind in BULK_TYPES:
        registry.register_coder(kind, BulkCoder)
        registry.custom_types.remove(kind)


_register()
