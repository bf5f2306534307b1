"""`vlnkit.io.dataset_card`: the tables a card names, its YAML, and its own entry among the outputs."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from vlnkit.io.dataset_card import README, card_text, tables_of, write_card
from vlnkit.io.schemas import versioned_schema
from vlnkit.runs.manifest import describe_outputs

SCHEMA = versioned_schema(
    "demo", 3, [pa.field("id", pa.int64()), pa.field("tags", pa.list_(pa.string()))], {"id": "an id", "tags": "a | b"}
)


def _folder(tmp_path):
    table = pa.Table.from_pylist([{"id": 1, "tags": ["x"]}, {"id": 2, "tags": []}], schema=SCHEMA)
    for i in range(2):
        pq.write_table(table, tmp_path / f"rows-{i:05d}-of-00002.parquet")
    pq.write_table(table, tmp_path / "more-00000-of-00001.parquet")
    (tmp_path / "dead_letter-00000-of-00001.jsonl").write_text('{"reason": "x"}\n')
    (tmp_path / "R4R.json").write_text("[]")
    (tmp_path / "summary.json").write_text("{}")
    return tmp_path


def test_tables_are_the_parquet_shard_sets_without_dead_letters(tmp_path):
    folder = _folder(tmp_path)
    tables = tables_of(str(folder), describe_outputs(str(folder)))
    assert [(t.prefix, t.rows, t.files) for t in tables] == [("more", 2, 1), ("rows", 4, 2)]
    assert tables[1].schema.field("id").metadata == {b"description": b"an id"}


def test_the_card_parses_and_escapes_table_cells(tmp_path):
    folder = _folder(tmp_path)
    text = card_text(
        job="demo",
        version="v9",
        tables=tables_of(str(folder), describe_outputs(str(folder))),
        settings={"seed": 0, "flags": ["a", "b"], "note": None},
        inputs=[{"path": "/in/R2R_x.json", "bytes": 3, "sha256": "0" * 64}, {"path": "/in/p.json", "bytes": 1}],
    )
    front = yaml.safe_load(text.split("---")[1])
    assert [c["config_name"] for c in front["configs"]] == ["more", "rows"]
    assert [c.get("default") for c in front["configs"]] == [True, None]
    assert front["configs"][1]["data_files"] == [{"split": "rows", "path": "rows-*.parquet"}]
    assert "| `tags` | list<string> | a \\| b |" in text  # a pipe in a meaning does not split the row
    assert '| `flags` | `["a", "b"]` |' in text and "| `note` | `null` |" in text
    assert "| `/in/R2R_x.json` | 3 | `" + "0" * 64 + "` | Room-to-Room |" in text
    assert "| `/in/p.json` | 1 | `` |  | not known to vlnkit" in text


def test_a_job_without_tables_gets_no_configs():
    text = card_text(job="report", version="v1", tables=[], settings={}, inputs=[])
    assert "configs" not in yaml.safe_load(text.split("---")[1])


def test_write_card_replaces_an_earlier_attempts_entry(tmp_path):
    folder = _folder(tmp_path)
    facts = {"job": "demo", "version": "v1", "settings": {}, "inputs": []}
    first = write_card(str(folder), describe_outputs(str(folder)), **facts)
    again = write_card(str(folder), describe_outputs(str(folder)), **facts)  # a retried last step
    assert [o["name"] for o in again].count(README) == 1 and len(again) == len(first)
    (entry,) = [o for o in again if o["name"] == README]
    assert entry["bytes"] == (folder / README).stat().st_size and entry["crc32c"]
