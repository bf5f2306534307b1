"""The simplest fast scorer, for comparison: orjson per line, a dict of references, score_batch per scan.

No dead letters, no outputs beyond the printed means: what a one-off script would do. Expects JSON
Lines files (predictions in the R2R submission layout, one dataset record per line). Several
prediction files (comma-separated) are several agents, scored one after the other in the same
process with the references and graphs loaded once; the last line printed is then a dict of each
file's means.

    python -m benchmarks.plain_score predictions.jsonl dataset.jsonl ../shared/data/connectivity
    python -m benchmarks.plain_score a.jsonl,b.jsonl dataset.jsonl ../shared/data/connectivity
"""

from __future__ import annotations

import sys

import numpy as np
import orjson

from vlnkit.evaluation.batch import means, score_batch, totals
from vlnkit.evaluation.common import METRICS, collapse_repeats_padded, pack_viewpoints
from vlnkit.navigation.graph import GraphStore


def main(argv=None) -> dict:
    preds_paths, data_path, connectivity = (argv or sys.argv[1:])[:3]
    refs = {}
    with open(data_path, "rb") as f:
        for line in f:
            r = orjson.loads(line)
            for k in range(len(r["instructions"])):
                refs[f"{r['path_id']}_{k}"] = (r["scan"], r["path"])
    store = GraphStore(connectivity)
    files = preds_paths.split(",")
    agents = {path: score_file(path, refs, store) for path in files}
    print(agents if len(files) > 1 else agents[files[0]])
    return agents


def score_file(preds_path: str, refs: dict, store: GraphStore) -> dict:
    by_scan: dict[str, tuple[list, list]] = {}
    with open(preds_path, "rb") as f:
        for line in f:
            p = orjson.loads(line)
            scan, path = refs[p["instr_id"]]
            pair = by_scan.setdefault(scan, ([], []))
            pair[0].append(path)
            pair[1].append([e[0] for e in p["trajectory"]])
    summed: dict[str, int] = {}
    for scan, (ref_paths, queries) in by_scan.items():
        g = store.get(scan)
        r = pack_viewpoints(g.index, ref_paths)
        q = collapse_repeats_padded(*pack_viewpoints(g.index, queries))
        for k, v in totals(score_batch(g.distances, r, q, keep_repeats=True)).items():
            summed[k] = summed.get(k, 0) + v
    mean, _ = means(summed)
    return {"count": summed.get("count", 0), **{m: round(mean[m], 6) for m in METRICS if mean[m] is not None}}


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
