"""Reading score inputs: every way a file can be read gives the same batches and dead letters."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vlnkit.datasets.json_chunks as json_chunks
from vlnkit.datasets.buckets import bucket_of
from vlnkit.datasets.columns import PredictionBatch, RefusedPredictions, RefusedReferences
from vlnkit.io.dead_letters import RecordError
from vlnkit.scoring.reading import dataset_ranks, in_buckets, read_predictions, read_references


def rows_and_letters(pieces, vocab):
    """Every batch row as plain values, and every dead letter, from a reader's pieces."""
    rows, letters = [], []
    for piece in pieces:
        if isinstance(piece, RecordError):
            letters.append(piece.to_dict())
            continue
        if isinstance(piece, RefusedReferences):  # refused records that name their key, for the join
            letters += [{"refused": (int(p), int(k), w)} for p, k, w in zip(piece.path_id, piece.first_k, piece.where)]
            continue
        if isinstance(piece, RefusedPredictions):  # predictions refused at reading that still name their episode
            letters += [{"refused": (int(p), int(k))} for p, k in zip(piece.path_id, piece.k)]
            continue
        for r in range(len(piece)):
            key = ("p", int(piece.path_id[r]), int(piece.k[r])) if isinstance(piece, PredictionBatch) else (
                "r", int(piece.path_id[r]), str(piece.scan[r]), int(piece.instructions[r]))  # fmt: skip
            rows.append((int(piece.rank[r]), int(piece.index[r]), *key, tuple(piece.paths.viewpoints(r, vocab))))
    return sorted(rows), sorted(letters, key=json.dumps)


def prediction_lines(n: int) -> list[str]:
    ids = ["s0", "s1", "s2", "t0", "zz", "s5"]
    lines = [
        json.dumps({"instr_id": f"{i}_{i % 3}", "trajectory": [[ids[(i + j) % 6], 0.5, 0] for j in range(1 + i % 4)]})
        for i in range(n)
    ]
    lines[5:5] = ['{"instr_id": "x", "trajectory": [["s0", 0, 0]]}', "{broken", "", "   "]  # unknown, broken, blank
    lines[400:400] = [json.dumps({"instr_id": "3_0", "trajectory": ["s0", "s1"]})]  # another layout
    lines.append(json.dumps({"instr_id": "9_0", "trajectory": []}))
    return lines


@pytest.mark.parametrize("scan_bytes", [64, 4096, 16_384])
def test_prediction_file_read_by_scanner_and_general_reader_alike(world, tmp_path, monkeypatch, scan_bytes):
    """The compiled scanner refuses the blocks holding odd lines; the rows, dead letters and their labels
    (record numbers, line numbers) are those of the general reader, whatever the block size."""
    _, vocab = world
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(prediction_lines(800)) + "\n")
    import vlnkit.scoring.reading as reading

    real = reading.scan_submissions
    monkeypatch.setattr(reading, "scan_submissions", lambda block, v: None)  # the general reader alone
    general = rows_and_letters(read_predictions(str(path), "a", 2, vocab), vocab)
    monkeypatch.setattr(json_chunks, "SCAN_BYTES", scan_bytes)
    calls = []
    monkeypatch.setattr(reading, "scan_submissions", lambda block, v: calls.append(real(block, v)) or calls[-1])
    scanned = rows_and_letters(read_predictions(str(path), "a", 2, vocab), vocab)
    assert scanned == general and len(general[0]) == 801 and len(general[1]) == 4  # 3 letters, 1 refused (9_0)
    assert {"refused": (9, 0)} in general[1]
    assert any(c is not None for c in calls) and any(c is None for c in calls)  # both paths were taken
    labels = {d["record"] for d in general[1] if "record" in d}
    assert "line 7" in labels and "#5 (instr_id=x)" in labels


def test_prediction_formats_give_the_same_rows(world, tmp_path):
    _, vocab = world
    preds = [{"instr_id": f"{i}_0", "trajectory": [["s0", 0, 0], ["s1", 1.5, 0]]} for i in range(50)]
    (tmp_path / "p.json").write_text(json.dumps(preds))
    (tmp_path / "p.jsonl").write_text("\n".join(map(json.dumps, preds)))
    with gzip.open(tmp_path / "p.jsonl.gz", "wt") as f:
        f.write("\n".join(map(json.dumps, preds)))
    table = pa.table({"instr_id": [p["instr_id"] for p in preds], "path": [["s0", "s1"]] * 50})
    pq.write_table(table, tmp_path / "p.parquet")
    got = [
        rows_and_letters(read_predictions(str(tmp_path / n), "a", 0, vocab), vocab)
        for n in ("p.json", "p.jsonl", "p.jsonl.gz", "p.parquet")
    ]
    assert got[0] == got[1] == got[2] == got[3] and len(got[0][0]) == 50


def test_dataset_lines_read_by_scanner_and_general_reader_alike(world, tmp_path, monkeypatch):
    _, vocab = world
    records = [{"path_id": i, "scan": "st"[i % 2], "path": [f"{'st'[i % 2]}{j}" for j in range(1 + i % 3)], "heading": 0.5, "distance": 2.0, "instructions": ["go \"there\"", "x"][: 1 + i % 2]} for i in range(300)]  # fmt: skip
    lines = [json.dumps(r) for r in records]
    lines[50:50] = ['{"path_id": 1000, "scan": "s", "path": [], "heading": 0, "instructions": ["x"]}', "[1]"]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n")
    import vlnkit.datasets.reference_batches as reference_batches

    real = reference_batches.scan_records
    monkeypatch.setattr(reference_batches, "scan_records", lambda block, v: None)  # the general reader alone
    general = rows_and_letters(read_references(str(path), 1, vocab), vocab)
    monkeypatch.setattr(json_chunks, "SCAN_BYTES", 2048)
    calls = []
    monkeypatch.setattr(reference_batches, "scan_records", lambda block, v: calls.append(real(block, v)) or calls[-1])
    assert rows_and_letters(read_references(str(path), 1, vocab), vocab) == general
    assert any(c is not None for c in calls) and any(c is None for c in calls)
    assert len(general[0]) == 300 and sorted(d.get("reason", "") for d in general[1]) == [
        "",
        "'path' has 0 viewpoints, at least 1 required",
        "expected a JSON object, got list",
    ]
    assert {"refused": (1000, 0, f"{path} #50 (path_id=1000)")} in general[1]  # the join tells its predictions


def test_a_follower_file_as_dataset_is_refused_once(world, tmp_path):
    _, vocab = world
    path = tmp_path / "follower.jsonl"
    path.write_text('{"instruction_id": 1, "path": ["s0"], "metrics": {"ne": 0.0}}\n' * 3)
    letters = [p for p in read_references(str(path), 0, vocab)]
    assert len(letters) == 1 and "RxR follower file" in letters[0].reason and letters[0].record == ""


def test_an_unreadable_file_is_one_dead_letter(world, tmp_path):
    _, vocab = world
    (letter,) = list(read_predictions(str(tmp_path / "missing.jsonl"), "a", 0, vocab))
    assert letter.record == "" and letter.reason.startswith("cannot read file")


def test_in_buckets_gathers_then_splits_by_the_stable_bucket_of_path_id(world, tmp_path):
    _, vocab = world
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(prediction_lines(800)) + "\n")
    pieces = list(in_buckets(read_predictions(str(path), "a", 0, vocab), 5, rows=100))
    batches = [p for p in pieces if not isinstance(p, RecordError) and isinstance(p[1], PredictionBatch)]
    refused = [p for p in pieces if not isinstance(p, RecordError) and isinstance(p[1], RefusedPredictions)]
    assert all((bucket_of(b.path_id, 5) == k).all() for k, b in batches + refused)
    assert sum(len(b) for _, b in batches) == 801
    assert [(int(b.path_id[0]), int(b.k[0])) for _, b in refused] == [(9, 0)]  # the empty trajectory
    order = np.concatenate([b.index for _, b in batches if _ == 0])
    assert (np.diff(order) > 0).all()  # rows keep their file order within a bucket's part


def test_dataset_ranks():
    assert dataset_ranks(["x.parquet", "a.json", "b.jsonl.gz", "y.parquet"]) == [
        (0, "a.json"),
        (1, "b.jsonl.gz"),
        (2, "x.parquet"),
        (3, "y.parquet"),
    ]
