"""Scale data for the score job: N predictions and the matching dataset, made from R2R val_unseen.

The dataset is val_unseen replicated with new path ids (replica r gives path r * (max id + 1) + id)
until it has at least N episodes, written as JSON Lines (one record per line). The predictions are
random walks (3 to 7 moves, uniform neighbours) from each reference start, in the R2R submission
layout `[[viewpoint, heading, elevation], ...]`, one JSON object per line, in episode order.

    python -m benchmarks.make_scale_data /tmp/scale --n 1000000 [--data ../shared/data] [--seed 0]

Writes <folder>/predictions.jsonl and <folder>/dataset.jsonl (about 345 MB and 330 MB at N = 1M).
"""

from __future__ import annotations

import argparse
import json
import math
import os

import numpy as np
import orjson

from vlnkit.evaluation.random_baseline import neighbour_table, walk
from vlnkit.navigation.graph import GraphStore

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def random_walks(store: GraphStore, tables: dict, scan: str, starts: list[str], rng):
    """Walks of 3 to 7 moves (uniform neighbours) from each start viewpoint of `scan`: (node rows, lengths,
    viewpoint names); `tables` keeps each scan's neighbour table between calls."""
    g = store.get(scan)
    if scan not in tables:
        tables[scan] = (neighbour_table(g), np.asarray(g.viewpoints, dtype=object))
    (table, degree), names = tables[scan]
    nodes = np.asarray([g.index[s] for s in starts])
    steps = rng.integers(3, 8, len(nodes))
    paths, lengths = walk(table, degree, nodes, steps, rng.random((len(nodes), 7)))
    return paths, lengths, names


def make(folder: str, n: int, data: str, seed: int = 0) -> tuple[str, str]:
    """Write the two files (if not already there with this N) and return their paths."""
    os.makedirs(folder, exist_ok=True)
    preds_path, data_path = os.path.join(folder, "predictions.jsonl"), os.path.join(folder, "dataset.jsonl")
    stamp = os.path.join(folder, "made.json")
    want = {"n": n, "seed": seed}
    if os.path.exists(stamp) and json.load(open(stamp)) == want:
        return preds_path, data_path
    records = json.load(open(os.path.join(data, "r2r", "R2R_val_unseen.json")))
    per_copy = sum(len(r["instructions"]) for r in records)
    copies = math.ceil(n / per_copy)
    stride = max(r["path_id"] for r in records) + 1
    store = GraphStore(os.path.join(data, "connectivity"))
    rng = np.random.default_rng(seed)
    tables = {}
    written = 0
    with open(preds_path, "wb") as fp, open(data_path, "wb") as fd:
        for copy in range(copies):
            lines_d, lines_p = [], []
            by_scan: dict[str, list] = {}
            for r in records:
                rec = {**r, "path_id": copy * stride + r["path_id"]}
                lines_d.append(orjson.dumps(rec))
                for k in range(len(r["instructions"])):
                    if written + len(lines_p) + sum(map(len, by_scan.values())) >= n:
                        break
                    by_scan.setdefault(r["scan"], []).append((f"{rec['path_id']}_{k}", r["path"][0]))
            for scan, eps in by_scan.items():
                paths, lengths, names = random_walks(store, tables, scan, [s for _, s in eps], rng)
                headings = np.round(rng.uniform(-math.pi, math.pi, paths.shape), 4).tolist()
                for (instr_id, _), row, length, head in zip(eps, paths.tolist(), lengths.tolist(), headings):
                    traj = [[names[v], h, 0.0] for v, h in zip(row[:length], head)]
                    lines_p.append(orjson.dumps({"instr_id": instr_id, "trajectory": traj}))
            fd.write(b"\n".join(lines_d) + b"\n")
            if lines_p:
                fp.write(b"\n".join(lines_p) + b"\n")
            written += len(lines_p)
    json.dump(want, open(stamp, "w"))
    return preds_path, data_path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--n", type=int, default=1_000_000, help="predictions to write")
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for path in make(args.folder, args.n, os.path.abspath(args.data), args.seed):
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
