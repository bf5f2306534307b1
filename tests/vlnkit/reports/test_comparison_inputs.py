"""What the comparison page reads: episode files in batches, and every reason a row is set aside."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vlnkit.navigation.graph import GraphStore, NavGraph
from vlnkit.reports.comparison_inputs import read_episodes, rename_agents, usable_episodes

LINE = NavGraph("s", ("a", "b", "c"), np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]), np.array([[0, 1], [1, 2]]))


def episodes(**columns) -> pa.Table:
    n = len(columns["instr_id"])
    base = {"agent": ["x"] * n, "scan": ["s"] * n, "path": [["a"]] * n, "sr": [1.0] * n, "_source": [0] * n}
    return pa.table({**base, **columns})


def test_reading_in_small_batches_gives_the_same_table(tmp_path):
    files = []
    for k in range(2):
        table = pa.table(
            {
                "agent": [f"g{k}"] * 5,
                "instr_id": [f"{i}_0" for i in range(5)],
                "scan": ["s"] * 5,
                "path": [["a", "b"]] * 5,
                "language": [None] * 5,
                "sr": [1.0, None, 0.0, 1.0, 0.0],
                "pl": [1.0] * 5,  # not a headline metric: not read
            }
        )
        pq.write_table(table, tmp_path / f"episodes-{k}.parquet")
        files.append(str(tmp_path / f"episodes-{k}.parquet"))
    whole, batched = read_episodes(files), read_episodes(files, batch_rows=2)
    assert whole.equals(batched) and whole.num_rows == 10
    assert whole.column_names == ["agent", "instr_id", "scan", "path", "sr", "_source"]  # all-null language dropped
    assert whole["_source"].to_pylist() == [0] * 5 + [1] * 5


def test_a_file_without_the_page_columns_is_named(tmp_path):
    pq.write_table(pa.table({"instr_id": ["1_0"], "sr": [1.0]}), tmp_path / "old.parquet")
    with pytest.raises(ValueError, match=r"old.parquet: .* \(no \['agent', 'scan', 'path'\]\)"):
        read_episodes([str(tmp_path / "old.parquet")])


def test_every_unusable_row_is_set_aside_with_its_reason(tmp_path):
    table = episodes(
        instr_id=["1_0", "2_0", "3_0", "4_0", "5_0", "1_0", "6_0"],
        scan=["s", "s", "s", "s", "nowhere", "s", "s"],
        path=[["a", "b"], ["a", "zz"], ["a"], [], ["q"], ["a"], ["c"]],
    )
    references = {"1_0": ["a", "b"], "2_0": ["a"], "3_0": ["a", "yy"], "4_0": ["a"], "5_0": ["q"], "6_0": ["c"]}
    references.pop("6_0")
    store = GraphStore(str(tmp_path), {"s": LINE})  # no connectivity file for "nowhere"
    kept, problems = usable_episodes(table, references, store, ["e.parquet"])
    assert kept["instr_id"].to_pylist() == ["1_0"]
    reasons = {p["record"]: p["reason"] for p in problems}
    assert len(problems) == 6 and all(p["source"] == "e.parquet" for p in problems)
    assert reasons["agent='x' instr_id='2_0'"] == "a viewpoint of the path is not in the graph of scan s"
    assert reasons["agent='x' instr_id='3_0'"] == "a viewpoint of the reference path is not in the graph of scan s"
    assert reasons["agent='x' instr_id='4_0'"] == "empty path"
    assert reasons["agent='x' instr_id='5_0'"].startswith("scan nowhere: ")
    assert reasons["agent='x' instr_id='6_0'"] == "instr_id not in the dataset"
    assert [p["reason"] for p in problems if p["record"] == "agent='x' instr_id='1_0'"] == [
        "repeats an earlier row of this agent and instr_id"
    ]


def test_renaming_agents_keeps_the_others():
    table = pa.table({"agent": ["a", "b", "a", "c"]})
    assert rename_agents(table, {"a": "A", "c": "C"})["agent"].to_pylist() == ["A", "b", "A", "C"]
    assert rename_agents(table, {}) is table
