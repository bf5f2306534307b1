"""A digest of everything a score run wrote, to hold a rebuilt score path to the exact outputs of an earlier one.

`output_digest(folder)` hashes, in a canonical form, the rows of every `episodes-*.parquet` shard (sorted by
agent and instr_id, every column, floats by their exact bits), `summary.json` (without the input paths and
the timing of the run), the two episode lists, the dead letters (sorted, with file names cut to their base
name) and the two leaderboards. Two runs with equal digests wrote the same rows and the same summary, bit
for bit, whatever the shard layout or row order. The digests the tests hold were made by the score path
as it stood at commit f903367, before its rebuild around one core function (see
tests/pipelines/test_score_identity.py).

`dirty_predictions(path, dataset)` writes a JSON Lines prediction file that exercises every rule of the
join: duplicates, unknown and malformed ids, broken lines, a viewpoint outside the scan, a wrong start.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import struct

import pyarrow.parquet as pq

PATH_KEYS = ("predictions", "dataset")  # input paths: they name a temporary folder
# Counters whose rule changed after the rebuild: every record read counts, refused or not, and a whole
# file's dead letter counts no record (`file_dead_letters`). They are held by the identity the summary
# keeps (tests/pipelines/test_score.py), not by the digests of the old path.
COUNT_KEYS = ("predictions_read", "file_dead_letters")


def _canonical(value):
    """JSON-able value with every float replaced by its exact bits (so -0.0, 0.1 + 0.2 etc. are told apart)."""
    if isinstance(value, float):
        return "f:" + struct.pack(">d", value).hex()
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def _base_names(text: str, folders: list[str]) -> str:
    for folder in folders:
        text = text.replace(folder.rstrip("/") + "/", "")
    return text


def parts(folder: str, input_folders: tuple[str, ...] = ()) -> dict[str, str]:
    """{part name: sha256 hex} of one score output folder (see the module docstring)."""
    folders = [os.path.dirname(os.path.abspath(p)) for p in input_folders] + list(input_folders)
    out = {}
    files = sorted(glob.glob(os.path.join(folder, "episodes-*.parquet")))
    rows = []
    for f in files:
        rows.extend(pq.read_table(f).to_pylist())
    rows.sort(key=lambda r: (r["agent"], r["instr_id"]))
    out["episodes"] = _sha(rows)
    # The layout: columns, types, the schema's name and version (each column's meaning is documentation).
    schema = pq.read_schema(files[0]).to_string(show_field_metadata=False) if files else None
    out["episode_schema"] = hashlib.sha256(schema.encode()).hexdigest() if files else ""
    summary = json.load(open(os.path.join(folder, "summary.json")))
    for key in PATH_KEYS + COUNT_KEYS:
        summary.pop(key, None)
    for block in summary.get("agents", {}).values():
        for key in COUNT_KEYS:
            block.pop(key, None)
    out["summary"] = _sha(summary)
    for name in ("missing_predictions", "without_usable_prediction"):
        out[name] = _sha(open(os.path.join(folder, f"{name}-00000-of-00001.txt")).read())
    dead = sorted(_base_names(line, folders) for line in open(os.path.join(folder, "dead_letter-00000-of-00001.jsonl")))
    out["dead_letters"] = _sha([json.loads(line) for line in dead])
    for name in ("leaderboard.csv", "leaderboard.md"):
        out[name] = _sha(_base_names(open(os.path.join(folder, name)).read(), folders))
    return out


def _sha(value) -> str:
    text = json.dumps(_canonical(value), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dirty_predictions(path: str, dataset: str, graphs_dir: str) -> str:
    """Write a JSON Lines prediction file for `dataset` (an R2R JSON list) that breaks every join rule once
    or more, around clean predictions (a shortest-path-like agent: the reference path itself, shortened).

    Returns `path`. The same arguments always write the same bytes.
    """
    records = json.load(open(dataset))
    lines = []
    for n, r in enumerate(records):
        for k in range(len(r["instructions"])):
            iid = f"{r['path_id']}_{k}"
            path_ = r["path"][: max(1, len(r["path"]) - (n + k) % 3)]
            traj = [[vp, 0.5 * k, 0.0] for vp in path_]
            if (n + k) % 97 == 5:
                continue  # missing
            lines.append(json.dumps({"instr_id": iid, "trajectory": traj}))
            if (n + k) % 89 == 3:  # a duplicate (the first is kept)
                lines.append(json.dumps({"instr_id": iid, "trajectory": traj[:1]}))
    extra = [
        '{"instr_id": "999999999_0", "trajectory": [["a", 0, 0]]}',  # unknown id
        '{"instr_id": "x_1", "trajectory": [["a", 0, 0]]}',  # not canonical
        '{"instr_id": "012_0", "trajectory": [["a", 0, 0]]}',  # leading zero
        '{"instr_id": "' + f"{records[1]['path_id']}_0" + '", "trajectory": []}',  # empty
        "{not json",
        "",
        "   ",
        '{"instr_id": "' + f"{records[2]['path_id']}_1" + '", "trajectory": [["nowhere", 0, 0]]}',  # viewpoint
        '{"instr_id": "'
        + f"{records[3]['path_id']}_1"
        + '", "trajectory": [["'
        + records[4]["path"][0]
        + '", 0, 0]]}',  # start elsewhere (or another scan)
        '{"instr_id": "'
        + f"{records[5]['path_id']}_2"
        + '", "trajectory": [["'
        + records[5]["path"][0]
        + '", "1.57", 0]]}',  # angle as text
        '{"instr_id": ' + str(records[6]["path_id"]) + ', "trajectory": ["' + records[6]["path"][0] + '"]}',
        "[1, 2, 3]",
        '{"instr_id": "'
        + f"{records[7]['path_id']}_0"
        + '", "trajectory": [["'
        + records[7]["path"][0]
        + '", 1e999, 0]]}',  # infinite heading
    ]
    for i, line in enumerate(extra):
        lines.insert(37 * (i + 1), line)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
