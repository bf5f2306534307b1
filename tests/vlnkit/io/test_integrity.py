"""vlnkit.io.integrity: what a written file holds (size, crc32c, rows) and what is wrong with a folder of them.

Row counts are checked against independent reads (pyarrow reading the data, `json.loads`, `str.splitlines`),
checksums against the crc32c library called on the whole file at once.
"""

from __future__ import annotations

import base64
import json

import google_crc32c
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.io import integrity
from vlnkit.io.integrity import check, describe


def crc(data: bytes) -> str:
    return base64.b64encode(google_crc32c.Checksum(data).digest()).decode()


def writer_layout(records: list) -> bytes:
    """A JSON list as transforms.write.WriteJsonFile writes it: "[", one record per line, "]"."""
    body = b",\n".join(json.dumps(r, sort_keys=True).encode() for r in records)
    return b"[\n" + body + (b"\n]\n" if records else b"]\n")


records = st.lists(
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=20), st.none()), max_size=3),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(records)
def test_a_json_list_counts_its_records(tmp_path_factory, items):
    path = tmp_path_factory.mktemp("j") / "R4R.json"
    data = writer_layout(items)
    path.write_bytes(data)
    found = describe(str(path))
    assert found["rows"] == len(json.loads(data)) and "defect" not in found
    assert found["bytes"] == len(data) and found["crc32c"] == crc(data)


@settings(max_examples=60, deadline=None)
@given(records.filter(bool), st.integers(min_value=1, max_value=10_000))
def test_a_json_list_cut_anywhere_is_a_defect(tmp_path_factory, items, cut):
    path = tmp_path_factory.mktemp("j") / "R4R.json"
    data = writer_layout(items)
    path.write_bytes(data[: max(2, len(data) - cut)])
    found = describe(str(path))
    assert found["defect"].startswith("the JSON list has no closing bracket")
    assert found["rows"] <= len(items)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), min_size=1),
        max_size=40,
    )
)
def test_line_files_count_lines(tmp_path_factory, lines):
    folder = tmp_path_factory.mktemp("l")
    text = "".join(line + "\n" for line in lines).encode()
    for name in ("dead_letter-00000-of-00001.jsonl", "missing-00000-of-00001.txt"):
        (folder / name).write_bytes(text)
        assert describe(str(folder / name))["rows"] == len(text.decode().split("\n")) - 1 == len(lines)
    (folder / "leaderboard.csv").write_bytes(b"agent,sr\n" + text)
    assert describe(str(folder / "leaderboard.csv"))["rows"] == len(lines)


def test_a_line_file_cut_inside_a_line_is_a_defect(tmp_path):
    path = tmp_path / "dead_letter-00000-of-00001.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a"')
    found = describe(str(path))
    assert found["rows"] == 2 and "cut short" in found["defect"]


def test_parquet_rows_come_from_the_footer(tmp_path):
    path = tmp_path / "paths-00000-of-00001.parquet"
    table = pa.table({"x": list(range(1000))}).replace_schema_metadata(
        {"vlnkit.schema": "r4r_paths", "vlnkit.schema_version": "3"}
    )
    pq.write_table(table, path, row_group_size=100)
    found = describe(str(path))
    assert found["rows"] == pq.read_table(path).num_rows == 1000
    assert (found["schema"], found["schema_version"]) == ("r4r_paths", "3")
    assert found["crc32c"] == crc(path.read_bytes())
    path.write_bytes(path.read_bytes()[:-100])  # the footer cut off
    assert describe(str(path))["defect"].startswith("not a readable Parquet file")


def test_a_json_document_that_does_not_parse_is_a_defect(tmp_path):
    (tmp_path / "summary.json").write_text('{"paths": 3}')
    assert describe(str(tmp_path / "summary.json")) == {
        "path": str(tmp_path / "summary.json"),
        "bytes": 12,
        "rows": None,
        "crc32c": crc(b'{"paths": 3}'),
    }
    (tmp_path / "summary.json").write_text('{"paths": 3')
    assert describe(str(tmp_path / "summary.json"))["defect"].startswith("not a complete JSON document")


# ---------------------------------------------------------------------------- a folder against a declaration
@pytest.fixture
def folder(tmp_path):
    pq.write_table(pa.table({"x": [1, 2, 3]}), tmp_path / "paths-00000-of-00002.parquet")
    pq.write_table(pa.table({"x": [4, 5]}), tmp_path / "paths-00001-of-00002.parquet")
    (tmp_path / "dead_letter-00000-of-00001.jsonl").write_text('{"reason": "x"}\n')
    (tmp_path / "summary.json").write_text("{}")
    return tmp_path


def problems(folder, declared):
    return [p.line() for p in check(str(folder), declared, [describe(p) for p in integrity.files_of(str(folder))])]


DECLARED = {"paths-*-of-*": 5, "dead_letter-*-of-*": 1, "summary.json": None}


def test_a_folder_that_holds_what_was_declared_has_no_problem(folder):
    assert problems(folder, DECLARED) == []
    (folder / "manifest.json").write_text("{}")  # the run's own files are never outputs
    (folder / "_SUCCESS").write_text("")
    assert problems(folder, DECLARED) == []


def test_short_extra_missing_and_undeclared_outputs_are_named(folder):
    assert problems(folder, {**DECLARED, "paths-*-of-*": 6}) == [
        f"{folder}/paths-*-of-*: holds 5 row(s) (2 files), the run counted 6"
    ]
    assert problems(folder, {**DECLARED, "dead_letter-*-of-*": 0}) == [
        f"{folder}/dead_letter-00000-of-00001.jsonl: holds 1 row(s), the run counted 0"
    ]
    assert problems(folder, {**DECLARED, "R4R.json": 5}) == [
        f"{folder}/R4R.json: was not written (the run counted 5 row(s))"
    ]
    (folder / "stray.txt").write_text("x\n")
    assert problems(folder, DECLARED) == [f"{folder}/stray.txt: written, but not declared"]


def test_a_shard_missing_from_its_set_is_named(folder):
    (folder / "paths-00001-of-00002.parquet").unlink()
    assert problems(folder, {**DECLARED, "paths-*-of-*": 3}) == [
        f"{folder}/paths-00001-of-00002.parquet: this shard of the set was not written"
    ]
