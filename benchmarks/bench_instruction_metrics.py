"""Benchmark: BLEU-1..4, ROUGE-L and CIDEr-D of vlnkit.captioning against pycocoevalcap 1.2's Python scorers.

Both score the same N items (default 100,000) with the same tokens, each in a fresh process (its peak
RSS measured by `benchmarks.measure`); the timed part is scoring only (the tokens are made once, by
vlnkit's tokenizer, and read by both). Items: R2R train paths in turn, the hypothesis one of a path's
instructions and the references its others, so the set is N items over R2R's real vocabulary. The
benchmark checks that both give the same per-item and corpus scores (max abs difference printed):

    python -m benchmarks.bench_instruction_metrics              # 100k items
    python -m benchmarks.bench_instruction_metrics --n 20000

Job mode (`--job`): the score_instructions job itself, in-process DirectRunner with --bootstrap=0, on
synthetic systems of N instructions for each N given (R2R train's instructions, each against its path's
other instructions, repeated with new path ids and shuffled; JSON Lines files of at most 100,000 lines,
written under --tmp, not the repository), each run in a fresh process: wall time and peak RSS, and how the
peak grows against the input (the baseline is the smallest run):

    python -m benchmarks.bench_instruction_metrics --job 100000,1000000 --tmp /tmp/si_scale
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


FILE_LINES = 100_000


def make_job_input(n: int, folder: str) -> list[str]:
    """N instructions of one system as JSON Lines files under `folder` (made once; reused when present)."""
    import random

    os.makedirs(folder, exist_ok=True)
    files = [os.path.join(folder, f"part-{k:04d}.jsonl") for k in range((n + FILE_LINES - 1) // FILE_LINES)]
    if all(os.path.exists(f) for f in files):
        return files
    records = json.load(open(os.path.join(DATA, "r2r", "R2R_train.json")))
    combos = [(r, k) for r in records if len(r["instructions"]) >= 2 for k in range(len(r["instructions"]))]
    order = list(range(n))
    random.Random(0).shuffle(order)
    for k, f in enumerate(files):
        with open(f + ".tmp", "w") as out:
            for i in order[k * FILE_LINES : (k + 1) * FILE_LINES]:
                r, j = combos[i % len(combos)]
                path_id = f"{i // len(combos)}{r['path_id']:06d}"
                refs = r["instructions"][:j] + r["instructions"][j + 1 :]
                row = {"instr_id": f"{path_id}_{j}", "path_id": path_id, "scan": r["scan"]}
                out.write(json.dumps({**row, "instruction": r["instructions"][j], "instructions": refs}) + "\n")
        os.replace(f + ".tmp", f)
    return files


def job_scale(sizes: list[int], tmp: str) -> dict:
    """The job on each size in a fresh process; peak RSS against the smallest run's."""
    import subprocess

    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    runs = []
    for n in sizes:
        files = make_job_input(n, os.path.join(tmp, f"input_{n}"))
        out = os.path.join(tmp, f"out_{n}")
        subprocess.run(["rm", "-rf", out], check=True)
        cmd = [
            sys.executable,
            "-m",
            "pipelines.score_instructions",
            "--runner=DirectRunner",
            f"--predictions=synthetic={','.join(files)}",
            "--bootstrap=0",
            f"--output_dir={out}",
        ]
        run = measured(cmd)
        summary = json.load(open(os.path.join(out, "summary.json")))
        runs.append(
            {
                "instructions": n,
                "scored": summary["instructions"],
                "wall_s": run["wall_s"],
                "peak_rss_mb": run["peak_rss_mb"],
            }
        )
    base = min(runs, key=lambda r: r["instructions"])
    for r in runs:
        r["input_ratio"] = round(r["instructions"] / base["instructions"], 1)
        r["peak_ratio"] = round(r["peak_rss_mb"] / base["peak_rss_mb"], 2)
    result = {"load": load, "runs": runs}
    print(json.dumps(result, indent=1))
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--job", default=None, help="Job mode: comma-separated sizes (e.g. 100000,1000000)")
    parser.add_argument("--tmp", default="/tmp/si_scale", help="Job mode: where inputs and outputs go")
    parser.add_argument("--side", choices=("vlnkit", "pycocoevalcap"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--items", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        score(args.side, args.items, args.out)
        return {}
    if args.job:
        return job_scale([int(x) for x in args.job.split(",")], args.tmp)
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
