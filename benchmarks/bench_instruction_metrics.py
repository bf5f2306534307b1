"""Benchmark: BLEU-1..4, ROUGE-L and CIDEr-D of vlnkit.captioning against pycocoevalcap 1.2's Python scorers.

Both score the same N items (default 100,000) with the same tokens, each in a fresh process (its peak
RSS measured by `benchmarks.measure`); the timed part is scoring only (the tokens are made once, by
vlnkit's tokenizer, joined by spaces, and both take those strings: pycocoevalcap's scorers, and
`score_texts`). Items: R2R train paths in turn, the hypothesis one of a path's
instructions and the references its others, so the set is N items over R2R's real vocabulary. The
benchmark checks that both give the same per-item and corpus scores (max abs difference printed):

    python -m benchmarks.bench_instruction_metrics              # 100k items, both sides on all of them
    python -m benchmarks.bench_instruction_metrics --n 20000
    python -m benchmarks.bench_instruction_metrics --sample 5000,10000   # pycocoevalcap on subsamples of 100k

By default both sides score all N items in the same run (pycocoevalcap takes about 400 s of one core for
100k; this is how RESULTS.md's figure is measured). For a quicker look, `--sample` times pycocoevalcap
on fixed random subsamples of two sizes instead (both sides scoring each subsample, scores compared) and
extrapolates its time to N linearly only when its per-item CPU time is the same at both sizes (within
20%); the output says so. The load (`uptime`) is printed as it was at the start and at the end.

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
import subprocess
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
        from vlnkit.captioning.scores import score_texts

        s = score_texts(hyps, refs)
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
    parser.add_argument(
        "--sample",
        default=None,
        help="Time pycocoevalcap on fixed random subsamples of these sizes (e.g. 5000,10000) and extrapolate "
        "linearly to N when its per-item time is the same at both",
    )
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
    sample = sorted(int(x) for x in args.sample.split(",")) if args.sample else []
    load_start = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        items = os.path.join(tmp, "items.json")
        make_items(args.n, items)
        sets = {args.n: items}
        data = json.load(open(items))
        for k in sample:  # a fixed random subsample of the same items: both sides score it, for the rate
            pick = np.sort(np.random.default_rng(0).choice(args.n, k, replace=False)).tolist()
            sets[k] = os.path.join(tmp, f"items_{k}.json")
            with open(sets[k], "w") as f:
                json.dump({"hyps": [data["hyps"][i] for i in pick], "refs": [data["refs"][i] for i in pick]}, f)
        del data
        runs: dict = {}
        # interleaved: vlnkit on all N, then each size with both sides, vlnkit first
        plan = [("vlnkit", args.n)]
        plan += [(side, k) for k in sample for side in ("vlnkit", "pycocoevalcap")] or [("pycocoevalcap", args.n)]
        for side, k in plan:
            out = os.path.join(tmp, f"{side}_{k}.npz")
            cmd = [sys.executable, "-m", "benchmarks.bench_instruction_metrics", "--side", side]
            run = measured([*cmd, "--items", sets[k], "--out", out])
            runs[(side, k)] = {**json.loads(run["stdout"].strip().splitlines()[-1]), "peak_rss_mb": run["peak_rss_mb"]}
        diff = 0.0
        for k in sample or [args.n]:
            a, b = np.load(os.path.join(tmp, f"vlnkit_{k}.npz")), np.load(os.path.join(tmp, f"pycocoevalcap_{k}.npz"))
            diff = max(diff, *(float(np.max(np.abs(a[m] - b[m]))) for m in (*METRICS, "corpus")))
    ours = runs[("vlnkit", args.n)]
    result = {
        "items": args.n,
        "load_start": load_start,
        "load": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "vlnkit_s": ours["seconds"],
        "vlnkit_cpu_s": ours["cpu_seconds"],
        "vlnkit_peak_rss_mb": ours["peak_rss_mb"],
        "max_abs_diff": diff,
    }
    if not sample:
        theirs = runs[("pycocoevalcap", args.n)]
        result.update(pycocoevalcap_s=theirs["seconds"], pycocoevalcap_cpu_s=theirs["cpu_seconds"])
        result["pycocoevalcap_peak_rss_mb"] = theirs["peak_rss_mb"]
        result["speedup"] = round(theirs["seconds"] / ours["seconds"], 1)
        result["cpu_speedup"] = round(theirs["cpu_seconds"] / ours["cpu_seconds"], 1)
    else:
        # pycocoevalcap timed on the subsamples only: its time per item at each size, the same-size ratio, and
        # (only when the per-item CPU time of the two sizes agree within 20%, i.e. it is linear) N's time
        # extrapolated linearly from the largest subsample
        rates = {k: runs[("pycocoevalcap", k)]["cpu_seconds"] / k for k in sample}
        linear = max(rates.values()) <= 1.2 * min(rates.values())
        result["subsamples"] = {
            k: {
                "pycocoevalcap_s": runs[("pycocoevalcap", k)]["seconds"],
                "pycocoevalcap_cpu_s": runs[("pycocoevalcap", k)]["cpu_seconds"],
                "pycocoevalcap_peak_rss_mb": runs[("pycocoevalcap", k)]["peak_rss_mb"],
                "vlnkit_s": runs[("vlnkit", k)]["seconds"],
                "vlnkit_cpu_s": runs[("vlnkit", k)]["cpu_seconds"],
                "cpu_speedup_same_size": round(
                    runs[("pycocoevalcap", k)]["cpu_seconds"] / runs[("vlnkit", k)]["cpu_seconds"], 1
                ),
                "pycocoevalcap_cpu_ms_per_item": round(1000 * rates[k], 3),
            }
            for k in sample
        }
        result["pycocoevalcap_linear"] = linear
        if linear:
            big = sample[-1]
            wall = runs[("pycocoevalcap", big)]["seconds"] * args.n / big
            cpu = runs[("pycocoevalcap", big)]["cpu_seconds"] * args.n / big
            result["pycocoevalcap_s_extrapolated"] = round(wall, 1)
            result["pycocoevalcap_cpu_s_extrapolated"] = round(cpu, 1)
            result["speedup_extrapolated"] = round(wall / ours["seconds"], 1)
            result["cpu_speedup_extrapolated"] = round(cpu / ours["cpu_seconds"], 1)
            result["note"] = (
                f"pycocoevalcap timed on fixed random subsamples {sample} of the {args.n} items (its per-item "
                f"CPU time agrees within 20% between them: linear) and extrapolated linearly to {args.n}"
            )
        else:
            result["note"] = (
                "pycocoevalcap's per-item time differs by more than 20% between subsamples: not extrapolated"
            )
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
