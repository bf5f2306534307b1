"""Benchmark: BLEU-1..4, ROUGE-L and CIDEr-D of vlnkit.captioning against pycocoevalcap 1.2's Python scorers.

Both score the same N items (default 100,000) with the same tokens, each in a fresh process (its peak
RSS measured by `benchmarks.measure`); the timed part is scoring only (the tokens are made once, by
vlnkit's tokenizer, and read by both). Items: R2R train paths in turn, the hypothesis one of a path's
instructions and the references its others, so the set is N items over R2R's real vocabulary. The
benchmark checks that both give the same per-item and corpus scores (max abs difference printed):

    python -m benchmarks.bench_instruction_metrics              # 100k items
    python -m benchmarks.bench_instruction_metrics --n 20000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

from benchmarks.measure import measured

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("VLNKIT_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
METRICS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d")


def make_items(n: int, path: str) -> None:
    from vlnkit.captioning.ptb import tokenize

    records = json.load(open(os.path.join(DATA, "r2r", "R2R_train.json")))
    records = [r for r in records if len(r["instructions"]) >= 2]
    hyps, refs = [], []
    for i in range(n):
        r = records[i % len(records)]
        k = (i // len(records)) % len(r["instructions"])
        tokens = [" ".join(tokenize(t)) for t in r["instructions"]]
        hyps.append(tokens[k])
        refs.append(tokens[:k] + tokens[k + 1 :])
    with open(path, "w") as f:
        json.dump({"hyps": hyps, "refs": refs}, f)


def score(side: str, items: str, out: str) -> None:
    data = json.load(open(items))
    hyps, refs = data["hyps"], data["refs"]
    start, cpu = time.perf_counter(), time.process_time()
    if side == "vlnkit":
        from vlnkit.captioning.scores import score_set

        s = score_set([h.split() for h in hyps], [[r.split() for r in rs] for rs in refs])
        per_item, corpus = s.per_item, s.corpus
    else:
        import contextlib
        import io

        from pycocoevalcap.bleu.bleu import Bleu
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.rouge.rouge import Rouge

        res = {i: [h] for i, h in enumerate(hyps)}
        gts = {i: rs for i, rs in enumerate(refs)}
        with contextlib.redirect_stdout(io.StringIO()):
            b, bi = Bleu(4).compute_score(gts, res)
        r, ri = Rouge().compute_score(gts, res)
        c, ci = Cider().compute_score(gts, res)
        per_item = {**{f"bleu_{k + 1}": np.asarray(bi[k]) for k in range(4)}, "rouge_l": ri, "cider_d": ci}
        corpus = {**{f"bleu_{k + 1}": b[k] for k in range(4)}, "rouge_l": r, "cider_d": c}
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    np.savez(out, **{m: per_item[m] for m in METRICS}, corpus=np.array([corpus[m] for m in METRICS]))
    print(json.dumps({"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2)}))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--side", choices=("vlnkit", "pycocoevalcap"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--items", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        score(args.side, args.items, args.out)
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        items = os.path.join(tmp, "items.json")
        make_items(args.n, items)
        runs = {}
        for side in ("vlnkit", "pycocoevalcap"):
            out = os.path.join(tmp, f"{side}.npz")
            cmd = [
                sys.executable,
                "-m",
                "benchmarks.bench_instruction_metrics",
                "--side",
                side,
                "--items",
                items,
                "--out",
                out,
            ]
            run = measured(cmd)
            runs[side] = {**json.loads(run["stdout"].strip().splitlines()[-1]), "peak_rss_mb": run["peak_rss_mb"]}
        a, b = np.load(os.path.join(tmp, "vlnkit.npz")), np.load(os.path.join(tmp, "pycocoevalcap.npz"))
        diff = max(float(np.max(np.abs(a[k] - b[k]))) for k in (*METRICS, "corpus"))
    result = {
        "items": args.n,
        "vlnkit_s": runs["vlnkit"]["seconds"],
        "pycocoevalcap_s": runs["pycocoevalcap"]["seconds"],
        "speedup": round(runs["pycocoevalcap"]["seconds"] / runs["vlnkit"]["seconds"], 1),
        "vlnkit_cpu_s": runs["vlnkit"]["cpu_seconds"],
        "pycocoevalcap_cpu_s": runs["pycocoevalcap"]["cpu_seconds"],
        "cpu_speedup": round(runs["pycocoevalcap"]["cpu_seconds"] / runs["vlnkit"]["cpu_seconds"], 1),
        "vlnkit_peak_rss_mb": runs["vlnkit"]["peak_rss_mb"],
        "pycocoevalcap_peak_rss_mb": runs["pycocoevalcap"]["peak_rss_mb"],
        "max_abs_diff": diff,
    }
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
