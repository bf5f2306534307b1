"""Writers: Parquet shards with the declared schema, one ordered JSON file, the run summary."""

from __future__ import annotations

import glob
import json
import os

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.write import WriteJsonFile, WriteParquetShards, WriteSummary, WriteTables, write_json
from vlnkit.io.schemas import schema_version, versioned_schema

SCHEMA = versioned_schema(
    "test_rows",
    3,
    [pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("path", pa.list_(pa.string()))],
)


def _rows(n):
    return [{"id": i, "name": f"r{i}", "path": [f"v{i}", "w"], "extra": "not in schema"} for i in range(n)]


@pytest.mark.parametrize("num_shards", [1, 3])
def test_parquet_shards_have_the_schema_and_every_row(tmp_path, num_shards):
    prefix = str(tmp_path / "rows")
    with TestPipeline() as p:
        _ = p | beam.Create(_rows(100)) | WriteParquetShards(prefix, SCHEMA, num_shards=num_shards)
    files = sorted(glob.glob(prefix + "-*-of-*.parquet"))
    assert [os.path.basename(f) for f in files] == [
        f"rows-{i:05d}-of-{num_shards:05d}.parquet" for i in range(num_shards)
    ]
    tables = [pq.read_table(f) for f in files]
    for t in tables:
        assert t.schema.equals(SCHEMA, check_metadata=False)
        assert schema_version(t.schema) == "3"  # the version travels in the file metadata
    got = sorted(r["id"] for t in tables for r in t.to_pylist())
    assert got == list(range(100))
    first = next(r for t in tables for r in t.to_pylist() if r["id"] == 7)
    assert first == {"id": 7, "name": "r7", "path": ["v7", "w"]}  # columns outside the schema dropped


def test_parquet_batched_input(tmp_path):
    prefix = str(tmp_path / "rows")
    with TestPipeline() as p:
        _ = p | beam.Create([_rows(3), [], _rows(2)]) | WriteParquetShards(prefix, SCHEMA, num_shards=1, batched=True)
    (f,) = glob.glob(prefix + "-*.parquet")
    assert sorted(pq.read_table(f).column("id").to_pylist()) == [0, 0, 1, 1, 2]


def test_parquet_files_keep_a_dictionary_only_where_values_repeat(tmp_path):
    """The encoding rule of `vlnkit.io.parquet_encoding` holds for every job's Parquet, not one job's."""
    prefix = str(tmp_path / "rows")
    rows = [{"id": i, "name": "same", "path": [f"v{i}", "w"]} for i in range(500)]
    with TestPipeline() as p:
        _ = p | beam.Create([rows]) | WriteParquetShards(prefix, SCHEMA, batched=True)
    (f,) = glob.glob(prefix + "-*.parquet")
    group = pq.ParquetFile(f).metadata.row_group(0)
    encodings = {group.column(i).path_in_schema: group.column(i).encodings for i in range(group.num_columns)}
    dictionary = {path for path, used in encodings.items() if "RLE_DICTIONARY" in used}
    assert dictionary == {"name"}, encodings  # ids and path items are distinct; names repeat


@pytest.mark.parametrize("num_shards", [0, 2])
def test_parquet_without_rows_still_writes_the_shards_with_the_schema(tmp_path, num_shards):
    prefix = str(tmp_path / "rows")
    with TestPipeline() as p:
        _ = p | beam.Create([]) | WriteParquetShards(prefix, SCHEMA, num_shards=num_shards)
    count = max(num_shards, 1)
    assert sorted(os.listdir(tmp_path)) == [f"rows-{i:05d}-of-{count:05d}.parquet" for i in range(count)]
    for name in os.listdir(tmp_path):
        table = pq.read_table(tmp_path / name)
        assert table.num_rows == 0 and table.schema.equals(SCHEMA, check_metadata=False)


def test_parquet_tables_in_shards_count_their_rows(tmp_path):
    prefix = str(tmp_path / "rows")
    tables = [pa.Table.from_pylist(_rows(n), schema=SCHEMA) for n in (3, 0, 5, 2)]
    with TestPipeline() as p:
        written = p | beam.Create(tables) | WriteTables(prefix, SCHEMA, num_shards=3)
        assert_that(written, equal_to([10]))
    files = sorted(glob.glob(prefix + "-*"))
    assert [os.path.basename(f) for f in files] == [f"rows-{i:05d}-of-00003.parquet" for i in range(3)]
    assert sorted(pq.read_table(files[0]).schema.names) == sorted(SCHEMA.names)
    ids = sorted(i for f in files for i in pq.read_table(f).column("id").to_pylist())
    assert ids == [0, 0, 0, 1, 1, 1, 2, 2, 3, 4]  # 3, 0, 5 and 2 rows


def test_parquet_wrong_type_fails_the_pipeline(tmp_path):
    with pytest.raises(Exception, match="id|int"):
        with TestPipeline() as p:
            _ = (
                p
                | beam.Create([{"id": "x", "name": "a", "path": []}])
                | WriteParquetShards(str(tmp_path / "rows"), SCHEMA, num_shards=1)
            )


def test_write_json_file_orders_by_key_and_removes_fragments(tmp_path):
    path = str(tmp_path / "out.json")
    records = [{"id": i, "v": [i, -i]} for i in (5, 3, 9, 1, 7, 2)]
    with TestPipeline() as p:
        n = p | beam.Create(records) | WriteJsonFile(path, lambda r: {"id": r["id"]}, lambda r: (r["id"],))
        assert_that(n, equal_to([6]))
    text = open(path).read()
    assert json.loads(text) == [{"id": i} for i in (1, 2, 3, 5, 7, 9)]
    assert text.count("\n") == 8  # "[", one line per record, "]"
    assert os.listdir(tmp_path) == ["out.json"]  # per-bundle fragment folders are gone


def test_write_json_file_final_key_with_a_side_input(tmp_path):
    path = str(tmp_path / "out.json")
    with TestPipeline() as p:
        order = p | "Order" >> beam.Create([{"b": 0, "a": 1}])
        _ = (
            p
            | beam.Create([{"k": "a"}, {"k": "b"}])
            | WriteJsonFile(
                path,
                lambda r: r,
                lambda r: (r["k"],),
                final_key=lambda key, rank: (rank[key[0]],),
                side={"rank": beam.pvalue.AsSingleton(order)},
            )
        )
    assert json.loads(open(path).read()) == [{"k": "b"}, {"k": "a"}]


def test_write_json_file_from_sorted_runs_writes_the_per_record_file(tmp_path):
    records = [{"g": g, "i": i, "text": f"r{g}-{i}"} for g in (3, 1, 2) for i in range(5)]
    runs = [[r for r in records if r["g"] == g][lo:hi] for g in (3, 1, 2) for lo, hi in ((0, 2), (2, 5))]
    key = lambda r: (r["g"], r["i"])  # noqa: E731
    with TestPipeline() as p:
        n1 = p | "Records" >> beam.Create(records) | "PerRecord" >> WriteJsonFile(str(tmp_path / "a.json"), dict, key)
        n2 = (
            p
            | "Runs" >> beam.Create(runs)
            | "Whole" >> WriteJsonFile(str(tmp_path / "b.json"), dict, key, batched=True, runs=True)
        )
        assert_that(n1, equal_to([15]), label="n1")
        assert_that(n2, equal_to([15]), label="n2")
    assert open(tmp_path / "a.json", "rb").read() == open(tmp_path / "b.json", "rb").read()
    assert [r["text"] for r in json.loads(open(tmp_path / "b.json").read())][:3] == ["r1-0", "r1-1", "r1-2"]


@pytest.mark.parametrize(
    "runs, problem",
    [([[{"k": 2}, {"k": 1}]], "not sorted"), ([[{"k": 1}, {"k": 3}], [{"k": 2}, {"k": 4}]], "interleave")],
)
def test_write_json_file_refuses_runs_that_would_misorder_the_file(tmp_path, runs, problem):
    path = tmp_path / "out.json"
    with pytest.raises(Exception, match=problem):
        with TestPipeline() as p:
            _ = p | beam.Create(runs) | WriteJsonFile(str(path), dict, lambda r: (r["k"],), batched=True, runs=True)
    assert os.listdir(tmp_path) == []  # no file, and no fragments left behind


def test_write_json_file_empty_input_writes_an_empty_list(tmp_path):
    path = str(tmp_path / "out.json")
    with TestPipeline() as p:
        _ = p | beam.Create([]) | WriteJsonFile(path, lambda r: r, lambda r: (0,))
    assert json.loads(open(path).read()) == []
    assert os.listdir(tmp_path) == ["out.json"]


def test_write_summary_sums_tallies_of_several_collections(tmp_path):
    path = str(tmp_path / "summary.json")
    with TestPipeline() as p:
        a = p | "A" >> beam.Create([{"read": 1}, {"read": 1, "bad": 1}])
        b = p | "B" >> beam.Create([{"read": 5}])
        out = (a, b) | WriteSummary(path, lambda t: {"totals": t, "ok": t.get("read", 0) - t.get("bad", 0)})
        assert_that(out, equal_to([{"totals": {"read": 7, "bad": 1}, "ok": 6}]))
    assert json.loads(open(path).read()) == {"ok": 6, "totals": {"bad": 1, "read": 7}}


def test_write_summary_with_no_tallies_still_writes(tmp_path):
    path = str(tmp_path / "summary.json")
    with TestPipeline() as p:
        _ = p | beam.Create([]) | WriteSummary(path, lambda t: {"count": t.get("count", 0)})
    assert json.loads(open(path).read()) == {"count": 0}


def test_write_json_sorts_keys_and_round_trips_floats(tmp_path):
    path = str(tmp_path / "x.json")
    write_json(path, {"b": 0.1 + 0.2, "a": [1e-300, 2.5]})
    text = open(path).read()
    assert text.index('"a"') < text.index('"b"')
    assert json.loads(text) == {"a": [1e-300, 2.5], "b": 0.1 + 0.2}
