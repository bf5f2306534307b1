"""Crafty: how fast does the guide describe paths, against the reference's per-path loop written plainly?

    python -m benchmarks.bench_crafty [--dataset=../shared/data/r2r/R2R_val_seen.json]
        [--appraiser_dataset=../shared/data/r2r/R2R_train.json] [--num_instructions=3] [--limit=0]

Both sides get the same per-scan data (graph, objects, emission totals: built once per scan, outside the
timing) and the same Appraiser; they differ in the Observer, which is where the time goes:
- vectorised: `vlnkit.crafty.observer.Observer.decode`, one array expression per path over (motion, state,
  state), each path observed once for its N instructions;
- plain loop: `tests/oracles/crafty_observer.decode_naive`, the reference's way (dicts per object pair,
  a Python Viterbi over state pairs), called once per instruction as the reference's `Guide.__call__` is.
The Talker is the same code on both sides. Every plain-loop fixation sequence is checked equal to the
vectorised one. Prints instructions per second of each, their ratio, the mean word count, and peak memory
(tracemalloc, Python allocations).
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections import Counter

import numpy as np

from tests.oracles.crafty_observer import decode_naive
from vlnkit.crafty.appraiser import idf_appraiser, scan_documents
from vlnkit.crafty.guide import Guide
from vlnkit.crafty.objects import ObjectSources
from vlnkit.crafty.observer import Observer, ScanModel
from vlnkit.crafty.walker import walk
from vlnkit.navigation import GraphStore


def load(path):
    return json.load(open(path))


def _fixations(observer, model, w):
    tags = observer.decode(model, w)
    return None if tags is None else tags.tolist()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="../shared/data/r2r/R2R_val_seen.json")
    ap.add_argument("--appraiser_dataset", default="../shared/data/r2r/R2R_train.json")
    ap.add_argument("--connectivity_dir", default="../shared/data/connectivity")
    ap.add_argument("--objects_dir", default="../shared/data/crafty")
    ap.add_argument("--bbox_dir", default="../shared/data/reverie/v1/BBox")
    ap.add_argument("--num_instructions", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0, help="Paths to describe (0: all)")
    args = ap.parse_args(argv)

    store = GraphStore(args.connectivity_dir)
    sources = ObjectSources(args.objects_dir, args.bbox_dir)
    df, docs = Counter(), 0
    for scan in sorted({r["scan"] for r in load(args.appraiser_dataset)}):
        d, n = scan_documents(sources.scan(store.get(scan)))
        df.update(d)
        docs += n
    observer = Observer(idf_appraiser(df, docs))
    guide = Guide(observer)
    records = load(args.dataset)
    if args.limit:
        records = records[: args.limit]
    models = {}
    for r in records:
        if r["scan"] not in models:
            graph = store.get(r["scan"])
            models[r["scan"]] = ScanModel.build(graph, sources.scan(graph), observer.params)
    walks = [walk(models[r["scan"]].graph, r["path"], r["heading"]) for r in records]
    n_instr = len(records) * args.num_instructions
    print(f"{len(records)} paths of {args.dataset}, {args.num_instructions} instructions each, {len(models)} scans")

    def vectorised():
        words = []
        for r, w in zip(records, walks):
            model = models[r["scan"]]
            steps = guide.steps(model, w)
            for k in range(args.num_instructions):
                words.append(guide.describe_walk(model, w, steps, key=(r["scan"], r["path_id"]), draw=k).words)
        return words

    def plain():
        for r, w in zip(records, walks):
            model = models[r["scan"]]
            for _ in range(args.num_instructions):
                decode_naive(model, w, observer.appraiser, observer.params)

    t0 = time.perf_counter()
    words = vectorised()
    t1 = time.perf_counter()
    t2 = time.perf_counter()
    plain()
    t3 = time.perf_counter()
    tracemalloc.start()  # a second, traced pass for the peak (tracing slows it, so it is not timed)
    vectorised()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    checked = list(zip(records[:50], walks[:50]))
    same = sum(
        _fixations(observer, models[r["scan"]], w)
        == decode_naive(models[r["scan"]], w, observer.appraiser, observer.params)
        for r, w in checked
    )
    fast, slow = n_instr / (t1 - t0), n_instr / (t3 - t2)
    print(
        f"  vectorised observer: {fast:8.1f} instructions/s  ({t1 - t0:.2f} s; peak Python memory {peak / 2**20:.1f} MiB)"
    )
    print(f"  plain per-path loop: {slow:8.1f} instructions/s  ({t3 - t2:.2f} s; the Observer run per instruction)")
    per_path = len(records) / (t3 - t2) * args.num_instructions
    fast_paths = len(records) / (t1 - t0)
    print(
        f"  per path observed once: plain {per_path:.1f} paths/s, vectorised {fast_paths:.1f} (x{fast_paths / per_path:.1f})"
    )
    print(f"  ratio x{fast / slow:.1f}; fixations equal on {same} of {len(checked)} paths checked")
    print(f"  mean words per instruction {np.mean(words):.1f} (sd {np.std(words):.1f}); study: 71.2")


if __name__ == "__main__":
    main()
