"""Instruction-perturbation throughput (instructions per second on one core) against a naive loop.

    python -m benchmarks.bench_instruction_perturbations [--model=en_core_web_sm] [--repeat=3]

Ours: the pipeline loaded with only the components the methods need (`vlnkit.perturbations.nlp`), `nlp.pipe` in
batches, every method run on the one parse. Naive: the full pipeline loaded as is, `nlp(text)`
one document at a time, the same methods on each Doc. Both run in this process on the same R2R
instructions (val_seen, or the synthetic set when ../shared/data is missing); outputs are checked equal.
With `--model=blank:en` (no trained English pipeline installs from PyPI) only direction swap runs.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import spacy

from vlnkit.perturbations.compat import record_rng
from vlnkit.perturbations.instructions import PERTURB
from vlnkit.perturbations.nlp import load_pipeline

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def instructions(repeat: int) -> list[str]:
    path = os.path.join(ROOT, "..", "shared", "data", "r2r", "R2R_val_seen.json")
    with open(path) as f:
        texts = [t for r in json.load(f) for t in r["instructions"]]
    return texts * repeat


def perturb_all(docs, methods):
    out = []
    for n, doc in enumerate(docs):
        for m in methods:
            res = PERTURB[m](doc, record_rng(0, m, n, 0))
            out.append(getattr(res, "text", res))
    return out


def ours(texts, model, methods):
    nlp = load_pipeline(model, methods)
    start = time.perf_counter()
    out = perturb_all(nlp.pipe(texts, batch_size=256), methods)
    return time.perf_counter() - start, out


def naive(texts, model, methods):
    nlp = spacy.blank(model.split(":", 1)[1]) if model.startswith("blank:") else spacy.load(model)
    start = time.perf_counter()
    out = perturb_all((nlp(t) for t in texts), methods)
    return time.perf_counter() - start, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="blank:en")
    parser.add_argument("--methods", default=None, help="default: all three with a trained model, else direction_swap")
    parser.add_argument("--repeat", type=int, default=3, help="copies of val_seen's 1,021 instructions")
    args = parser.parse_args(argv)
    methods = (
        args.methods
        or ("direction_swap" if args.model.startswith("blank:") else "direction_swap,entity_swap,phrase_swap")
    ).split(",")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    texts = instructions(args.repeat)
    naive(texts[:50], args.model, methods)  # warm-up (imports, vocab)
    t_naive, out_naive = naive(texts, args.model, methods)
    t_ours, out_ours = ours(texts, args.model, methods)
    assert out_naive == out_ours, "the two loops disagree"
    n = len(texts)
    print(f"model={args.model} methods={','.join(methods)} instructions={n}")
    print(f"naive one-document loop : {n / t_naive:10.0f} instructions/s ({t_naive:.2f} s)")
    print(f"ours (pipe, components) : {n / t_ours:10.0f} instructions/s ({t_ours:.2f} s)")
    print(f"ratio ours / naive      : {t_naive / t_ours:.2f}x")
    return t_naive / t_ours


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
