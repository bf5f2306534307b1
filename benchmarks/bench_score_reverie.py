"""The score job on REVERIE at scale against the same job on R2R for the same count: wall time, peak RSS, ratio.

REVERIE v1 val_unseen is replicated with new path ids (replica r: path r * (max id + 1) + id, objId kept) until
it has N episodes, as JSON Lines; the predictions are random walks (3 to 7 moves) from each reference start in
the release's layout, with a `predObjId` (the target for half of them). The R2R files come from
`benchmarks.make_scale_data` (same N). Both jobs run in-process with `--bootstrap=0` in interleaved rounds;
the REVERIE run also loads the v1 visibility folder (10,567 files) once. Target: REVERIE within 1.2x R2R.

    python -m benchmarks.bench_score_reverie /tmp/scale [--n 1000000] [--rounds 1] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import math
import os

import numpy as np
import orjson

from benchmarks.bench_score_scale import job_cmd
from benchmarks.make_scale_data import make, random_walks
from benchmarks.measure import interleaved_rounds
from vlnkit.navigation.graph import GraphStore

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_reverie(folder: str, n: int, data: str, seed: int = 0) -> tuple[str, str]:
    os.makedirs(folder, exist_ok=True)
    preds_path, data_path = os.path.join(folder, "reverie_predictions.jsonl"), os.path.join(folder, "reverie.jsonl")
    stamp, want = os.path.join(folder, "reverie_made.json"), {"n": n, "seed": seed}
    if os.path.exists(stamp) and json.load(open(stamp)) == want:
        return preds_path, data_path
    records = json.load(open(os.path.join(data, "reverie", "v1", "REVERIE_val_unseen.json")))
    copies = math.ceil(n / sum(len(r["instructions"]) for r in records))
    stride = max(r["path_id"] for r in records) + 1
    store, rng, tables, written = GraphStore(os.path.join(data, "connectivity")), np.random.default_rng(seed), {}, 0
    with open(preds_path, "wb") as fp, open(data_path, "wb") as fd:
        for copy in range(copies):
            by_scan: dict[str, list] = {}
            lines_d = []
            for r in records:
                rec = {**r, "path_id": copy * stride + r["path_id"]}
                lines_d.append(orjson.dumps(rec))
                for k in range(len(r["instructions"])):
                    if written + sum(map(len, by_scan.values())) < n:
                        iid = f"{rec['path_id']}_{r['objId']}_{k}"
                        by_scan.setdefault(r["scan"], []).append((iid, r["path"][0], r["objId"]))
            fd.write(b"\n".join(lines_d) + b"\n")
            lines_p = []
            for scan, eps in by_scan.items():
                paths, lengths, names = random_walks(store, tables, scan, [s for _, s, _ in eps], rng)
                right = rng.random(len(eps)) < 0.5
                for (iid, _, obj), row, length, ok in zip(eps, paths.tolist(), lengths.tolist(), right.tolist()):
                    traj = [[names[v], 0.0, 0.0] for v in row[:length]]
                    lines_p.append(
                        orjson.dumps({"instr_id": iid, "trajectory": traj, "predObjId": obj if ok else obj + 1})
                    )
            if lines_p:
                fp.write(b"\n".join(lines_p) + b"\n")
            written += len(lines_p)
    json.dump(want, open(stamp, "w"))
    return preds_path, data_path


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="untimed rounds first (the 10,567 visibility files read into the page cache)",
    )
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    args = parser.parse_args(argv)
    data = os.path.abspath(args.data)
    folder = os.path.join(args.folder, f"n{args.n}")
    r2r_preds, r2r_data = make(folder, args.n, data)
    rv_preds, rv_data = make_reverie(folder, args.n, data)
    visibility = os.path.join(data, "reverie", "v1", "BBox")
    commands = {
        "R2R score job": job_cmd(r2r_preds, r2r_data, data, os.path.join(folder, "out_r2r")),
        "REVERIE score job": job_cmd(
            rv_preds, rv_data, data, os.path.join(folder, "out_reverie"), f"--visibility={visibility}"
        ),
    }

    def check(runs):
        summary = json.load(open(os.path.join(folder, "out_reverie", "summary.json")))
        assert summary["count"] == args.n, summary["count"]
        assert 0.45 < summary["metrics"]["rgs"] < 0.55, summary["metrics"]["rgs"]

    return interleaved_rounds(commands, args.rounds, check, baseline="R2R score job", warmup=args.warmup)


if __name__ == "__main__":
    main()
