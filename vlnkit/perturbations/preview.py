"""Look at instruction perturbations before training on them: sample pairs and applicability.

    python -m vlnkit.perturbations.preview --dataset=R2R_val_seen.json [--sample=5] \\
        [--methods=direction_swap,entity_swap,phrase_swap] [--spacy_model=NAME] [--seed=0] \\
        [--max_instructions=N]

Parses every instruction of an R2R-format file (a JSON list or JSON Lines) once with the same
pipeline and the same per-record seeds as `python -m pipelines.perturb` (variant 0), so what it
shows is what the job writes. For each method it prints `--sample` source/perturbed pairs with
each change marked in the source: `[[old -> new]]` for a replacement, `[[+new]]` for an insertion
and `[[-old]]` for a deletion; then a table of how often each method applied, its operations and why
it did not apply. Records that fail validation and instructions spaCy cannot parse are counted,
never dropped silently. Structural problems (no file, unknown method, no usable pipeline) end with
one line on stderr and exit status 2.

    >>> from vlnkit.perturbations.instructions import Change
    >>> mark("Turn left now.", [Change(5, 9, "left", "right")])
    'Turn [[left -> right]] now.'
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import numpy as np

from vlnkit.datasets.r2r import RecordError, parse_r2r
from vlnkit.perturbations.compat import INSTRUCTION_METHODS, NotApplicable, parse_methods, record_rng
from vlnkit.perturbations.instructions import PERTURB
from vlnkit.perturbations.nlp import NLPError, ParseFailure, load_pipeline, parse_batch, resolve_model


class PreviewError(ValueError):
    """The preview cannot run at all (bad flags, unreadable file, unusable pipeline)."""


def mark(source: str, changes) -> str:
    """The source with every change shown in place (changes in source order, non-overlapping)."""
    out, cursor = [], 0
    for c in sorted(changes, key=lambda c: (c.start, c.end)):
        if not c.before:
            edit = f"[[+{c.after}]]"
        elif not c.after:
            edit = f"[[-{c.before}]]"
        else:
            edit = f"[[{c.before} -> {c.after}]]"
        out += [source[cursor : c.start], edit]
        cursor = c.end
    out.append(source[cursor:])
    return "".join(out)


def read_instructions(path: str) -> tuple[list[tuple[str, str]], list[RecordError]]:
    """(instr_id, instruction) for every instruction of the file's valid records, and the invalid ones."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise PreviewError(f"--dataset={path}: cannot read ({exc.strerror or exc})") from None
    items, errors = [], []
    for rec in parse_r2r(data, path):
        if isinstance(rec, RecordError):
            errors.append(rec)
            continue
        items += [(f"{rec['path_id']}_{k}", text) for k, text in enumerate(rec["instructions"])]
    if not items and errors and errors[0].record == "":
        raise PreviewError(errors[0].message())
    return items, errors


def preview(items, nlp, methods, seed: int = 0, sample: int = 5) -> dict:
    """Results of every method on every instruction, a seeded sample of applied ones, and tallies."""
    docs = parse_batch(nlp, [text for _, text in items])
    unparsable = sum(isinstance(d, ParseFailure) for d in docs)
    pick = np.random.default_rng(seed)
    report = {"instructions": len(items), "unparsable": unparsable, "methods": {}}
    for method in methods:
        applied, operations, reasons = [], Counter(), Counter()
        for (iid, text), doc in zip(items, docs):
            if isinstance(doc, ParseFailure):
                continue
            res = PERTURB[method](doc, record_rng(seed, method, iid, 0))
            if isinstance(res, NotApplicable):
                reasons[res.reason] += 1
            else:
                operations[res.operation] += 1
                applied.append((iid, text, res))
        chosen = sorted(pick.choice(len(applied), size=min(sample, len(applied)), replace=False)) if applied else []
        report["methods"][method] = {
            "applied": len(applied),
            "operations": dict(sorted(operations.items())),
            "not_applicable": dict(sorted(reasons.items())),
            "samples": [
                {
                    "instr_id": iid,
                    "source": text,
                    "perturbed": res.text,
                    "operation": res.operation,
                    "marked": mark(text, res.changes),
                }
                for iid, text, res in (applied[k] for k in chosen)
            ],
        }
    return report


def _share(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "n/a"


def applicability_table(report: dict) -> str:
    """One line per method: applied count and share, operations, reasons it did not apply."""
    total = report["instructions"] - report["unparsable"]
    header = ("method", "applied", "share", "operations", "not applicable")
    rows = [
        (
            method,
            str(m["applied"]),
            _share(m["applied"], total),
            ", ".join(f"{k} {v}" for k, v in m["operations"].items()) or "-",
            ", ".join(f"{k} {v}" for k, v in m["not_applicable"].items()) or "-",
        )
        for method, m in report["methods"].items()
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def format_report(report: dict, dataset: str, model: str, seed: int) -> str:
    lines = [
        f"Instruction perturbations of {dataset}: {report['instructions']} instructions "
        f"({report['unparsable']} unparsable, {report.get('invalid_records', 0)} invalid records), "
        f"spaCy pipeline {model}, seed {seed}",
        "",
    ]
    for method, m in report["methods"].items():
        lines.append(f"== {method}: {len(m['samples'])} of {m['applied']} applied")
        for s in m["samples"]:
            lines += [
                f"-- {s['instr_id']} ({s['operation']})",
                f"   source:    {s['source'].strip()}",
                f"   perturbed: {s['perturbed'].strip()}",
                f"   changes:   {s['marked'].strip()}",
            ]
        lines.append("")
    lines += ["Applicability", applicability_table(report)]
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        prog="python -m vlnkit.perturbations.preview", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--dataset", required=True, help="R2R-format JSON or JSON Lines file")
    parser.add_argument("--sample", type=int, default=5, help="pairs shown per method (default 5)")
    parser.add_argument("--methods", default=",".join(INSTRUCTION_METHODS), help="instruction methods, comma-separated")
    parser.add_argument("--spacy_model", default=None, help="spaCy pipeline (default: en_core_web_sm or its mirror)")
    parser.add_argument("--seed", type=int, default=0, help="the job's --seed (same results), also picks the sample")
    parser.add_argument("--max_instructions", type=int, default=0, help="a seeded subset of this size (0: all)")
    args = parser.parse_args(argv)
    try:
        report, model = _run(args)
    except (PreviewError, NLPError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(format_report(report, args.dataset, model, args.seed))
    return report


def _run(args) -> tuple[dict, str]:
    try:
        methods = parse_methods(args.methods)
    except ValueError as exc:
        raise PreviewError(f"--methods={args.methods}: {exc}") from None
    others = [m for m in methods if m not in INSTRUCTION_METHODS]
    if others:
        raise PreviewError(
            f"--methods: {', '.join(others)} perturb paths, not instructions; choose among "
            f"{', '.join(INSTRUCTION_METHODS)}"
        )
    if args.sample < 0 or args.max_instructions < 0:
        raise PreviewError("--sample and --max_instructions must be 0 or more")
    items, errors = read_instructions(args.dataset)
    if args.max_instructions and len(items) > args.max_instructions:
        keep = np.random.default_rng(args.seed).choice(len(items), size=args.max_instructions, replace=False)
        items = [items[k] for k in sorted(keep)]
    model = resolve_model(args.spacy_model)
    nlp = load_pipeline(model, methods)
    report = preview(items, nlp, methods, args.seed, args.sample)
    report["invalid_records"] = len(errors)
    return report, model


if __name__ == "__main__":
    main()
