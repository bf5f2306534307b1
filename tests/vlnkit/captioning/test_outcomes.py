"""The score job's episode rows as outcomes: read in batches, joined on (system, instr_id), every row that
joins nothing told apart by its reason (hand-made tables)."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vlnkit.captioning.outcomes import (
    NO_EPISODE,
    NO_INSTRUCTION,
    REPEATED,
    UNSCORED_SYSTEM,
    OutcomeFileError,
    episode_batches,
    join_outcomes,
)


def _episodes(tmp_path, name, agents, ids, ndtw):
    path = tmp_path / name
    table = pa.table({"agent": agents, "instr_id": ids, "ndtw": pa.array(ndtw, pa.float64()), "sr": [1.0] * len(ids)})
    pq.write_table(table, path)
    return str(path)


def test_batches_name_systems_by_agent_or_by_the_given_name(tmp_path):
    path = _episodes(tmp_path, "e.parquet", ["a", "a", "b"], ["1_0", "2_0", "1_0"], [0.5, None, 0.25])
    got = pa.concat_tables(list(episode_batches(path, None, ("ndtw",), rows=2)))
    assert got["system"].to_pylist() == ["a", "a", "b"] and got.column_names[-1] == "episode_ndtw"
    assert math.isnan(got["episode_ndtw"][1].as_py())  # a null metric: NaN, left out of tau-b
    one = _episodes(tmp_path, "one.parquet", ["x", "x"], ["1_0", "2_0"], [0.1, 0.2])
    assert pa.concat_tables(list(episode_batches(one, "lstm", ("sr",))))["system"].to_pylist() == ["lstm", "lstm"]
    with pytest.raises(OutcomeFileError, match="rows of agents a, b given as system 'lstm'"):
        list(episode_batches(path, "lstm", ("ndtw",), rows=2))
    with pytest.raises(OutcomeFileError, match="no column spl"):
        list(episode_batches(path, None, ("spl",)))
    (tmp_path / "bad.parquet").write_text("{}")
    with pytest.raises(OutcomeFileError, match="cannot read as Parquet"):
        list(episode_batches(str(tmp_path / "bad.parquet"), None, ("ndtw",)))


def test_join_keeps_one_row_per_followed_instruction_and_says_why_for_every_other(tmp_path):
    scored = pa.table(
        {
            "system": ["a", "a", "a", "a", "c"],
            "instr_id": ["1_0", "2_0", "3_0", "4_0", "1_0"],
            "path_id": ["1", "2", "3", "4", "1"],
            "bleu_4": [0.1, 0.2, 0.3, 0.4, 0.5],
        }
    )
    path = _episodes(
        tmp_path,
        "e.parquet",
        ["a", "a", "a", "a", "a", "z"],
        ["1_0", "2_0", "2_0", "3_0", "9_0", "1_0"],
        [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
    )
    episodes = pa.concat_tables(list(episode_batches(path, None, ("ndtw",))))
    joined, lost = join_outcomes(scored, episodes)
    assert joined.sort_by("instr_id").select(["system", "instr_id", "bleu_4", "episode_ndtw"]).to_pylist() == [
        {"system": "a", "instr_id": "1_0", "bleu_4": 0.1, "episode_ndtw": 0.9},
        {"system": "a", "instr_id": "3_0", "bleu_4": 0.3, "episode_ndtw": 0.6},
    ]
    kinds = sorted((u.kind, u.record) for u in lost)
    assert kinds == sorted(
        [
            (UNSCORED_SYSTEM, "z/1_0"),  # no system z in the run
            (REPEATED, "a/2_0"),  # two rows for one instruction: neither used
            (REPEATED, "a/2_0"),
            (NO_INSTRUCTION, "a/9_0"),  # not an instruction of a
            (NO_EPISODE, "a/2_0"),  # a's instructions without a usable row; c has no rows: not followed
            (NO_EPISODE, "a/4_0"),
        ]
    )
    assert all(u.reason for u in lost) and {u.source for u in lost if u.kind != NO_EPISODE} == {path}
    assert len(joined) + sum(u.kind != NO_EPISODE for u in lost) == episodes.num_rows  # every row accounted for
