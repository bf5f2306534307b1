"""Perturb: hard-negative instructions and trajectories for every instruction of an R2R-format dataset
or an RxR guide file (docs/design.md, "Instruction perturbations", "Trajectory perturbations").

    python -m pipelines.perturb --runner=DirectRunner --dataset=R2R_val_seen.json \
        --connectivity_dir=connectivity/ --output_dir=out/perturb_val_seen [--methods=...] \
        [--per_instruction=1] [--seed=0] [--spacy_model=NAME]

Writes `perturbations-SSSSS-of-NNNNN.parquet` (schema `vlnkit.perturbations.schemas.PERTURBATIONS`),
`dead_letter-00000-of-00001.jsonl`, `summary.json` (per-method applicability, overall and per
instruction language: `by_language`), `manifest.json` and `_SUCCESS` into --output_dir. RxR
instructions in Hindi and Telugu get direction swaps from their lexicons; entity and phrase swap
are English only and count them as not applicable (`language_not_english`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.perturbation_options import check_perturbation_flags, declare_perturbation_flags

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.runs.staging import Staging


def declare_flags(parser) -> None:
    declare_perturbation_flags(parser)
    parser.add_argument(
        "--per_instruction", type=int, default=1, help="Perturbations per instruction and method (distinct ones)"
    )


JOB = Job("perturb", __doc__, declare_flags)


def build(pipeline, out: Staging, files: list[str], opts, methods: tuple[str, ...]) -> None:
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER
    from transforms.perturb import STATS, Perturb
    from transforms.read import ReadUniqueR2R
    from transforms.run_summary import finish_run
    from transforms.tally import tally
    from transforms.write import WriteParquetShards
    from vlnkit.datasets.languages import language_counts
    from vlnkit.io.schemas import schema_version
    from vlnkit.perturbations.compat import INSTRUCTION_METHODS
    from vlnkit.perturbations.schemas import PERTURBATIONS
    from vlnkit.perturbations.summary import perturb_summary

    read = pipeline | "ReadDataset" >> ReadUniqueR2R(files, rxr_guides=True)
    records, dead = read["records"], [read[DEAD_LETTER]]
    perturbed = records | "Perturb" >> Perturb(
        methods, opts.spacy_model, opts.connectivity_dir, opts.per_instruction, opts.seed
    )
    rows = perturbed["rows"]
    rows | "WritePerturbations" >> WriteParquetShards(out.join("perturbations"), PERTURBATIONS, opts.num_shards)
    tallies = (
        perturbed[STATS],
        records | "TallyRecords" >> tally("records_read"),
        records | "TallyInstructions" >> beam.Map(language_counts),
        rows | "TallyRows" >> beam.Map(lambda r: {f"rows.{r['family']}": 1, f"rows.{r['language']}.{r['family']}": 1}),
    )
    static = {
        "job": JOB.name,
        "schema_version": schema_version(PERTURBATIONS),
        "methods": list(methods),
        "per_instruction": opts.per_instruction,
        "seed": opts.seed,
        "spacy_model": opts.spacy_model if any(m in INSTRUCTION_METHODS for m in methods) else None,
    }
    _ = finish_run(
        out.folder, lambda totals: perturb_summary(static, totals, methods), (*dead, perturbed[DEAD_LETTER]), tallies
    )


def applicability_rows(summary: dict) -> list[tuple[str, object]]:
    rows = []
    for method, m in summary["methods_applicability"].items():
        share = "n/a" if m["applicability"] is None else f"{100 * m['applicability']:.1f}%"
        why = ", ".join(f"{k} {v}" for k, v in m["not_applicable"].items()) or "-"
        rows.append((f"{method}", f"{m['applied']} instructions ({share}), {m['emitted']} rows; not applicable: {why}"))
    return rows


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table, print_outputs

    rows = [
        ("paths read", summary["records_read"]),
        ("instructions", summary["instructions"]),
        ("instruction perturbations", summary["rows"]["instruction"]),
        ("trajectory perturbations", summary["rows"]["trajectory"]),
        *applicability_rows(summary),
        ("dead-lettered records", summary["dead_letters"]),
    ]
    print(format_table(rows, "Perturbation summary"))
    print_outputs(ctx.output_dir, summary["dead_letters"])


def run(ctx: Run) -> dict:
    files, methods = check_perturbation_flags(ctx)
    return ctx.execute(
        lambda p, out: build(p, out, files, ctx.args, methods), ["perturbations"], declared=declared_outputs
    )


def declared_outputs(summary: dict) -> dict[str, int]:
    """One Parquet row per perturbation counted, of either family."""
    return {"perturbations": sum(summary["rows"].values())}


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
