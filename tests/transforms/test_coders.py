"""`transforms.coders`: the bulk values' coder encodes as Beam's PickleCoder does and measures without
encoding, and the steps that hand on Arrow tables and bootstrap sums declare them, so Beam's size
sampling pickles none of them."""

from __future__ import annotations

import logging
import pickle

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.coders import registry
from apache_beam.testing.test_pipeline import TestPipeline

from transforms.coders import BULK_TYPES, BulkCoder, held_bytes
from transforms.r4r import JoinR4R
from transforms.score.read import ReadScoringInputs
from transforms.score.score import BOOTSTRAP, ScoreBuckets
from transforms.write import WriteParquetShards
from vlnkit.comparison.replicates import ReplicateSums
from vlnkit.datasets.r4r import JoinConfig
from vlnkit.evaluation.scoring_config import ScoringConfig


def _table(rows: int) -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table(
        {
            "instr_id": [f"{i}_0" for i in range(rows)],
            "ne": rng.random(rows),
            "path": pa.array([list(range(i % 7)) for i in range(rows)], pa.list_(pa.int32())),
        }
    )


def _sums() -> ReplicateSums:
    weights = np.random.default_rng(1).poisson(1.0, (500, 100))
    return ReplicateSums.of({"ne": np.random.default_rng(2).random(500), "sr": np.ones(500)}, weights)


@pytest.mark.parametrize("make", [_table, lambda rows: _sums()], ids=["arrow table", "bootstrap sums"])
def test_bulk_values_round_trip_and_are_measured_within_a_factor_of_two_of_their_pickle(make):
    value = make(5000)
    coder = BulkCoder()
    encoded = coder.encode(value)
    assert encoded == pickle.dumps(value, pickle.HIGHEST_PROTOCOL)  # Beam's PickleCoder's bytes
    back = coder.decode(encoded)
    if isinstance(value, pa.Table):
        assert back.equals(value)
    else:
        assert back.limb_totals.keys() == value.limb_totals.keys()
        assert all(np.array_equal(back.limb_totals[k], value.limb_totals[k]) for k in value.limb_totals)
        assert back.totals == value.totals and back.counts == value.counts
    assert len(encoded) / 2 <= coder.estimate_size(value) <= len(encoded) * 2


def test_held_bytes_of_plain_values():
    assert held_bytes(np.zeros((3, 4), np.int64)) == 96
    assert held_bytes("abc") == held_bytes(b"abc") == 3
    assert held_bytes([1.0] * 1000) == 8000  # from its first items, times the length
    assert held_bytes({}) == 0 and held_bytes([]) == 0
    assert held_bytes({"k": np.zeros(10)}) == 1 + 80


def test_the_steps_declare_their_tables_batches_and_bootstrap_sums_without_a_warning(caplog):
    pipeline = beam.Pipeline()
    with caplog.at_level(logging.WARNING):
        read = pipeline | ReadScoringInputs([("a", ["preds.json"])], ["data.json"], "unused", buckets=4)
        scored = read["batches"] | ScoreBuckets("unused", {"a": ["preds.json"]}, ["data.json"], ScoringConfig())
        joined = pipeline | "Records" >> beam.Create([{"scan": "s"}]) | JoinR4R("unused", JoinConfig())
    for declared in (scored.tables, scored[BOOTSTRAP], joined["tables"]):
        assert isinstance(registry.get_coder(declared.element_type), BulkCoder)
    key, batch = registry.get_coder(read["batches"].element_type).coders()  # (bucket, batch)
    assert isinstance(key, beam.coders.VarIntCoder) and isinstance(batch, BulkCoder)
    assert not caplog.records, [r.getMessage() for r in caplog.records]  # Beam warns of a tag left undeclared


def test_written_tables_are_not_pickled_to_be_measured(tmp_path, monkeypatch):
    """Beam samples the size of a step's outputs by encoding them: a table typed `Any` would be pickled
    whole for that, though the fused write step takes it as it is."""
    pickled = []
    dumps = pickle.dumps

    def counting(value, *args, **kwargs):
        pickled.append(type(value))
        return dumps(value, *args, **kwargs)

    monkeypatch.setattr(pickle, "dumps", counting)
    schema = pa.schema([("x", pa.int64())])
    with TestPipeline() as p:
        _ = (
            p
            | beam.Create([[{"x": i}] * 10 for i in range(30)])
            | WriteParquetShards(str(tmp_path / "rows"), schema, batched=True)
        )
    assert pq.read_table(next(tmp_path.glob("rows-*.parquet"))).num_rows == 300
    assert pa.Table not in pickled


def test_the_registration_stays_out_of_the_main_session():
    """A worker loads the saved main session before it can import the project (a Dataflow job's workers
    without the package must fail the first step with the import's error, not die at start-up)."""
    assert not set(BULK_TYPES) & {kind for kind, _ in registry.get_custom_type_coder_tuples()}
    assert isinstance(registry.get_coder(pa.Table), BulkCoder)
