"""Instruction-perturbation throughput (instructions per second on one core) against a naive loop.

    taskset -c 0 python -m benchmarks.bench_instruction_perturbations [--model=NAME] [--repeat=1] \\
        [--batch_sizes=64,256,1024] [--rounds=2]

Naive: the full pipeline loaded as is (tagger, parser, NER, lemmatizer...), `[nlp(t) for t in texts]`
one document at a time, then every method on each Doc. Ours: the pipeline loaded with only the
components the methods need (`vlnkit.perturbations.nlp.load_pipeline`: NER and senter excluded),
`nlp.pipe` in batches, every method on the one parse. In between, "batched full" (the full pipeline
through `nlp.pipe`) separates what batching buys from what excluding components buys. Each variant
runs in its own fresh process (so each reports its own peak RSS) on the same R2R val_seen
instructions, `--rounds` times interleaved, best kept; all outputs are checked equal. Times are
CPU seconds of the single-threaded process (OMP_NUM_THREADS=1): on a machine shared with other
jobs wall time mostly measures the neighbours; wall time is printed beside it.
The model defaults to the one the jobs use (`resolve_model(None)`); `--model=blank:en` runs
direction swap only.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def instructions(repeat: int) -> list[str]:
    path = os.path.join(ROOT, "..", "shared", "data", "r2r", "R2R_val_seen.json")
    with open(path) as f:
        texts = [t for r in json.load(f) for t in r["instructions"]]
    return texts * repeat


def perturb_all(docs, methods) -> list:
    from vlnkit.perturbations.compat import record_rng
    from vlnkit.perturbations.instructions import PERTURB

    out = []
    for n, doc in enumerate(docs):
        for m in methods:
            res = PERTURB[m](doc, record_rng(0, m, n, 0))
            out.append(getattr(res, "text", res))
    return out


def run_variant(variant: str, model: str, methods: list[str], repeat: int, batch_size: int, queue) -> None:
    """One measurement in this (fresh) process: (CPU s, wall s, outputs, peak RSS in MB) onto `queue`."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import spacy

    from vlnkit.perturbations.nlp import load_pipeline

    texts = instructions(repeat)
    if variant == "ours":
        nlp = load_pipeline(model, methods)
    else:
        nlp = spacy.blank(model.split(":", 1)[1]) if model.startswith("blank:") else spacy.load(model)
    nlp("Warm up the vocabulary and the models.")
    start, cpu_start = time.perf_counter(), time.process_time()
    if variant == "naive":
        docs = [nlp(t) for t in texts]
        out = perturb_all(docs, methods)
    else:
        out = perturb_all(nlp.pipe(texts, batch_size=batch_size), methods)
    cpu, wall = time.process_time() - cpu_start, time.perf_counter() - start
    queue.put((cpu, wall, out, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def measure(variant, model, methods, repeat, batch_size):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=run_variant, args=(variant, model, methods, repeat, batch_size, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main(argv=None):
    from vlnkit.perturbations.nlp import resolve_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="spaCy pipeline (default: the one the jobs resolve)")
    parser.add_argument("--methods", default=None, help="default: all three with a trained model, else direction_swap")
    parser.add_argument("--repeat", type=int, default=1, help="copies of val_seen's 1,021 instructions")
    parser.add_argument("--batch_sizes", default="64,256,1024", help="nlp.pipe batch sizes tried for ours")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds; the best time of each is kept")
    args = parser.parse_args(argv)
    model = resolve_model(args.model)
    methods = (
        args.methods or ("direction_swap" if model.startswith("blank:") else "direction_swap,entity_swap,phrase_swap")
    ).split(",")
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    variants = [("naive", "naive", 1), ("batched full", "batched", 256)] + [(f"ours b={b}", "ours", b) for b in sizes]
    best: dict[str, tuple] = {}
    reference = None
    for _ in range(args.rounds):
        for label, variant, b in variants:
            cpu, wall, out, rss = measure(variant, model, methods, args.repeat, b)
            if reference is None:
                reference = out
            assert out == reference, f"{label} disagrees with the naive loop"
            if label not in best or cpu < best[label][0]:
                best[label] = (cpu, wall, rss)
    n = len(reference) // len(methods)
    print(f"model={model} methods={','.join(methods)} instructions={n} rounds={args.rounds} (best of each)")
    t_naive = best["naive"][0]
    for label, _, _ in variants:
        cpu, wall, rss = best[label]
        print(
            f"{label:14s}: {n / cpu:7.0f} instr/CPU-s ({cpu:6.2f} CPU s, {wall:6.2f} s wall)  "
            f"{t_naive / cpu:5.2f}x naive  peak RSS {rss:6.0f} MB"
        )
    return {label: t_naive / best[label][0] for label in best}


if __name__ == "__main__":
    main()
