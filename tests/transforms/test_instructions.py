"""The score_instructions transforms on a few hundred real instructions (R2R val_seen, each against its
path's three instructions as the file's references): the rows and corpus sums of a run cut into many small
batches equal `vlnkit.captioning.score_set`'s on the whole set, the human row included."""

from __future__ import annotations

import json

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that

from transforms.instructions import HUMAN, ReadChecked, ScoreSystems
from vlnkit.captioning.ptb import tokenize
from vlnkit.captioning.scores import METRICS, score_set
from vlnkit.captioning.summary import corpus_from_sums

N_PATHS = 100


@pytest.fixture(scope="module")
def system_file(tmp_path_factory, shared_data):
    """300 generated instructions over 100 paths, in two JSON Lines files (one system); the human row is
    each of a path's references against its two others."""
    records = json.loads((shared_data / "r2r" / "R2R_val_seen.json").read_text())
    records = [r for r in records if len(r["instructions"]) == 3][:N_PATHS]
    folder = tmp_path_factory.mktemp("si")
    lines = []
    for r in records:
        for k, text in enumerate(r["instructions"]):
            refs = r["instructions"]  # the path's references, as a file carries them (the human row's too)
            lines.append(
                {
                    "instr_id": f"{r['path_id']}_{k}",
                    "path_id": str(r["path_id"]),
                    "instruction": text,
                    "instructions": refs,
                }
            )
    files = []
    for part in range(2):
        path = folder / f"part{part}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines[part::2]))
        files.append(str(path))
    return files, lines, records


def _expected(items):
    """{instr_id: per-item scores} and the corpus scores of score_set on the whole set."""
    s = score_set(
        [tokenize(x["instruction"]) for x in items], [[tokenize(y) for y in x["instructions"]] for x in items]
    )
    rows = {x["instr_id"]: {m: s.per_item[m][i] for m in METRICS} for i, x in enumerate(items)}
    return rows, s.corpus


_GOT: dict[str, list] = {}  # what the matchers saw (module-level: the matchers are pickled by reference)


def _keep_rows(values):
    _GOT["rows"] = list(values)


def _keep_sums(values):
    _GOT["sums"] = list(values)


def _run(files, batch_size):
    """Rows and each system's corpus scores, from a TestPipeline run with batches of `batch_size`."""
    _GOT.clear()
    with TestPipeline() as p:
        read = p | ReadChecked({"s": files}, None, True, batch_size=batch_size)
        scored = read | ScoreSystems(0, 0)
        assert_that(scored["rows"] | "Rows" >> beam.FlatMap(lambda rows: rows), _keep_rows, label="KeepRows")
        assert_that(scored["sums"], _keep_sums, label="KeepSums")
    got = dict(_GOT)
    rows = {(r["system"], r["instr_id"]): r for r in got["rows"]}
    corpus = {
        system: {m: float(v[0]) for m, v in corpus_from_sums(s["point"]).items()} for system, (s, _) in got["sums"]
    }
    return rows, corpus


def test_small_batches_equal_score_set_on_the_whole_set(system_file):
    """Batches of 16 (19 of the system's, 19 of the human row's), frequencies combined in Beam: every row
    and corpus score is score_set's on the whole set (the unsharded computation)."""
    files, lines, records = system_file
    rows, corpus = _run(files, 16)
    assert len(rows) == 3 * N_PATHS + 3 * N_PATHS
    human = [
        {
            "instr_id": f"{r['path_id']}_ref{k}",
            "instruction": x,
            "instructions": r["instructions"][:k] + r["instructions"][k + 1 :],
        }
        for r in records
        for k, x in enumerate(r["instructions"])
    ]
    for system, items in (("s", lines), (HUMAN, human)):
        want, want_corpus = _expected(items)
        for instr_id, scores in want.items():
            for m in METRICS:
                assert abs(rows[(system, instr_id)][m] - scores[m]) <= 1e-12, (system, instr_id, m)
        for m in METRICS:
            assert abs(corpus[system][m] - want_corpus[m]) <= 1e-12, (system, m)
    assert np.std([r["cider_d"] for r in rows.values()]) > 0
