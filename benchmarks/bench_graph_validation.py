"""Cost of strict connectivity validation: loading all 90 real graphs with and without it.

    python -m benchmarks.bench_graph_validation [--repeat=5]

The baseline is the lenient reader the project had before (coercing `bool(...)` / `float(...)`,
no type checks), reimplemented here; both must give identical graphs (checked before timing).
Prints best-of-N wall time, the ratio, and peak memory of one strict pass (tracemalloc).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import tracemalloc

import numpy as np

from benchmarks.measure import best
from vlnkit.navigation.graph import CONNECTIVITY_SUFFIX, NavGraph

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "connectivity")


def lenient(scan: str, entries: list) -> NavGraph:
    """The reader without validation: what a NaN or "false" silently passed through."""
    ids = [str(e["image_id"]) for e in entries]
    xyz = [(float(e["pose"][3]), float(e["pose"][7]), float(e["pose"][11])) for e in entries]
    keep = np.flatnonzero(np.asarray([bool(e["included"]) for e in entries]))
    matrix = np.asarray([e["unobstructed"] for e in entries], dtype=bool)[np.ix_(keep, keep)]
    matrix = matrix | matrix.T
    np.fill_diagonal(matrix, False)
    i, j = np.nonzero(np.triu(matrix, k=1))
    return NavGraph(
        scan,
        tuple(ids[k] for k in keep),
        np.asarray(xyz)[keep].reshape(-1, 3),
        np.stack([i, j], axis=1).astype(np.int64),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    files = sorted(glob.glob(os.path.join(DATA, "*" + CONNECTIVITY_SUFFIX)))
    raw = {os.path.basename(f)[: -len(CONNECTIVITY_SUFFIX)]: open(f, "rb").read() for f in files}
    parsed = {s: json.loads(b) for s, b in raw.items()}
    for s, entries in parsed.items():  # same graphs, or the comparison means nothing
        a, b = NavGraph.from_connectivity(s, entries), lenient(s, entries)
        assert a.viewpoints == b.viewpoints and np.array_equal(a.edges, b.edges)
        assert np.array_equal(a.positions, b.positions)
    t_json = best(lambda: [json.loads(b) for b in raw.values()], args.repeat)
    t_lenient = best(lambda: [lenient(s, e) for s, e in parsed.items()], args.repeat)
    t_strict = best(lambda: [NavGraph.from_connectivity(s, e) for s, e in parsed.items()], args.repeat)
    tracemalloc.start()
    _ = [NavGraph.from_connectivity(s, e) for s, e in parsed.items()]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    n = sum(len(e) for e in parsed.values())
    print(f"{len(files)} graphs, {n} viewpoints (best of {args.repeat})")
    print(f"json.loads of all files      {t_json:.3f} s")
    print(f"lenient build (baseline)     {t_lenient:.3f} s")
    print(f"strict build (validated)     {t_strict:.3f} s   ratio strict/lenient {t_strict / t_lenient:.2f}x")
    print(f"strict build + json.loads vs lenient + json.loads: {(t_strict + t_json) / (t_lenient + t_json):.2f}x")
    print(f"peak memory of one strict pass over all graphs: {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
