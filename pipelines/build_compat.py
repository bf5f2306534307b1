"""Build a compatibility training set: matching (instruction, path) pairs and hard negatives, 2:1:1
(docs/jobs/build_compat.md).

    python -m pipelines.build_compat --runner=DirectRunner --dataset=R2R_train.json \
        --connectivity_dir=connectivity/ --output_dir=out/compat_train [--paraphrases='out/para/paraphrases-*.parquet'] \
        [--seed=0] [--methods=...] [--spacy_model=NAME]

Positives are every instruction with its path and, with --paraphrases, every kept paraphrase with its
source's path. Paraphrases made by the `offline-demo` translator are not translations (and files too
old to record their `backend` cannot be told apart from them): the job refuses them as positives
unless --allow_demo_paraphrases is given. Negatives come from the perturbations (`pipelines.perturb`, one per instruction and
method): positives/2 instruction perturbations and positives/2 trajectory perturbations, split
equally over the requested methods of each family and chosen by a seeded hash of (method,
instr_id), so any runner picks the same rows. Writes `compat-SSSSS-of-NNNNN.parquet` (schema
`vlnkit.perturbations.schemas.COMPAT`), dead letters, `summary.json`, `manifest.json` and `_SUCCESS`.

--dataset may also be an RxR guide file (read as pipelines.perturb reads it): every row keeps its
instruction's `language`; Hindi and Telugu instructions get direction swaps from their lexicons, entity
and phrase swap count them as not applicable (`language_not_english`), and `summary.json` gains
`by_language` (perturb's shape, with the compatibility rows per family).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.perturbation_options import check_perturbation_flags, declare_perturbation_flags
from pipelines.verdict import JobError
from vlnkit.io import fileio
from vlnkit.paraphrases.translation import OFFLINE_DEMO

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.runs.staging import Staging


PARAPHRASE_COLUMNS = ["instr_id", "paraphrase", "kept"]


def declare_flags(parser) -> None:
    declare_perturbation_flags(parser)
    parser.add_argument(
        "--paraphrases",
        help="paraphrases-*.parquet of pipelines.paraphrase (glob or comma list): kept rows are extra positives",
    )
    parser.add_argument(
        "--allow_demo_paraphrases",
        action="store_true",
        help="Accept paraphrases of the offline-demo translator (not real translations) as positives",
    )


JOB = Job("build_compat", __doc__, declare_flags)


def read_paraphrases(pipeline, files: list[str]):
    """Paraphrase rows (instr_id, paraphrase, kept) of pipelines.paraphrase's Parquet files."""
    import apache_beam as beam

    return (
        pipeline
        | "ParaphraseFiles" >> beam.Create(files)
        | "ReadParaphrases" >> beam.io.ReadAllFromParquet(columns=PARAPHRASE_COLUMNS)
    )


def paraphrase_backends(files: list[str]) -> dict[str, dict[str, int]]:
    """{file: {backend: kept rows}}, read in the driver from the `backend` and `kept` columns only.

    A file without a `backend` column (paraphrases schema v1) counts its kept rows under "unknown".
    """
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    found = {}
    for path in files:
        try:
            with fileio.open_read(path) as f:
                pf = pq.ParquetFile(f)
                names = pf.schema_arrow.names
                missing = [c for c in PARAPHRASE_COLUMNS if c not in names]
                if missing:
                    raise JobError(
                        f"--paraphrases: {path} is not a paraphrases file of pipelines.paraphrase "
                        f"(no column {', '.join(missing)})"
                    )
                if "backend" not in names:
                    kept = pf.read(columns=["kept"]).column("kept")
                    found[path] = {"unknown": int(pc.sum(kept).as_py() or 0)}
                    continue
                table = pf.read(columns=["backend", "kept"]).filter(pc.field("kept"))
        except JobError:
            raise
        except Exception as exc:  # corrupt, truncated, not Parquet at all
            raise JobError(f"--paraphrases: {path} cannot be read as Parquet ({type(exc).__name__}: {exc})") from None
        counts = table.group_by("backend").aggregate([("kept", "count")]).to_pylist()
        found[path] = {r["backend"]: r["kept_count"] for r in counts}
    return found


def check_demo_paraphrases(backends: dict[str, dict[str, int]], allow: bool) -> None:
    """Refuse kept paraphrases that no real translator made, naming the first such file."""
    if allow:
        return
    for path, counts in backends.items():
        demo, unknown = counts.get(OFFLINE_DEMO, 0), counts.get("unknown", 0)
        if demo:
            raise JobError(
                f"--paraphrases: {path} holds {demo} kept paraphrase(s) made by the {OFFLINE_DEMO} translator "
                "(not real translations); refusing them as training positives (pass --allow_demo_paraphrases "
                "to use them anyway)"
            )
        if unknown:
            raise JobError(
                f"--paraphrases: {path} does not record which translator made its {unknown} kept paraphrase(s) "
                "(paraphrases schema v1); rerun pipelines.paraphrase, or pass --allow_demo_paraphrases"
            )


def build(pipeline, out: Staging, files, paraphrase_files, opts, methods, backends: dict | None = None) -> None:
    import apache_beam as beam

    from transforms.compat import AVAILABLE, AssembleCompat
    from transforms.deadletter import DEAD_LETTER
    from transforms.perturb import STATS, Perturb
    from transforms.read import ReadUniqueR2R
    from transforms.run_summary import finish_run
    from transforms.tally import tally
    from transforms.write import WriteParquetShards
    from vlnkit.datasets.languages import language_counts
    from vlnkit.io.schemas import schema_version
    from vlnkit.perturbations.compat import INSTRUCTION, family_methods
    from vlnkit.perturbations.schemas import COMPAT
    from vlnkit.perturbations.summary import build_compat_summary

    read = pipeline | "ReadDataset" >> ReadUniqueR2R(files, rxr_guides=True)
    records, dead = read["records"], [read[DEAD_LETTER]]
    perturbed = records | "Perturb" >> Perturb(methods, opts.spacy_model, opts.connectivity_dir, 1, opts.seed)
    dead.append(perturbed[DEAD_LETTER])
    inputs = {"records": records, "perturbations": perturbed["rows"]}
    if paraphrase_files:
        inputs["paraphrases"] = read_paraphrases(pipeline, paraphrase_files)
    compat = inputs | "Assemble" >> AssembleCompat(methods, opts.seed)
    dead.append(compat[DEAD_LETTER])
    rows, available = compat["rows"], compat[AVAILABLE]
    rows | "WriteCompat" >> WriteParquetShards(out.join("compat"), COMPAT, opts.num_shards)
    tallies = (
        perturbed[STATS],
        records | "TallyRecords" >> tally("records_read"),
        records | "TallyInstructions" >> beam.Map(language_counts),  # all and per language, as perturb
        available | "TallyAvailable" >> beam.Map(lambda kv: {f"available.{kv[0]}": kv[1]}),
        rows | "TallyRows" >> beam.Map(row_tallies),
    )
    static = {"job": JOB.name, "schema_version": schema_version(COMPAT), "methods": list(methods), "seed": opts.seed}
    # Kept paraphrases per translator backend over all --paraphrases files (demo rows only when allowed).
    totals_by_backend: dict[str, int] = {}
    for counts in (backends or {}).values():
        for name, n in counts.items():
            totals_by_backend[name] = totals_by_backend.get(name, 0) + n
    static["paraphrase_backends"] = dict(sorted(totals_by_backend.items()))
    static["spacy_model"] = opts.spacy_model if family_methods(methods)[INSTRUCTION] else None
    _ = finish_run(out.folder, lambda totals: build_compat_summary(static, totals, methods), dead, tallies)


def row_tallies(row: dict) -> dict[str, int]:
    """A COMPAT row's tallies: "rows.<family>.<method>", and "rows.<language>.<family>" for `by_language`."""
    return {f"rows.{row['family']}.{row['method']}": 1, f"rows.{row['language']}.{row['family']}": 1}


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table, print_outputs
    from vlnkit.datasets.languages import R2R_LANGUAGE

    pos, fam = summary["positives"], summary["families"]
    rows = [
        ("instructions read", summary["instructions"]),
        ("positives: ground truth", pos["ground_truth"]),
        ("positives: kept paraphrases", pos["paraphrase"]),
    ]
    for family, f in fam.items():
        detail = ", ".join(f"{m} {v['selected']}/{v['available']}" for m, v in f["per_method"].items()) or "none"
        rows.append((f"{family} negatives", f"{f['rows']} of target {f['target']} ({detail})"))
    if set(summary["by_language"]) - {R2R_LANGUAGE}:  # RxR: one line per language
        for language, v in summary["by_language"].items():
            counts = ", ".join(f"{family} {n}" for family, n in v["rows"].items())
            rows.append((f"{language}: {v['instructions']} instructions", f"rows: {counts}"))
    rows.append(("dead-lettered records", summary["dead_letters"]))
    print(format_table(rows, "Compatibility set summary"))
    for family, f in fam.items():
        if f["shortfall"]:
            print(f"note: {family} negatives are {f['shortfall']} short of the 2:1:1 target (methods kept equal)")
    print_outputs(ctx.output_dir, summary["dead_letters"])


def run(ctx: Run) -> dict:
    files, methods = check_perturbation_flags(ctx)
    paraphrase_files = ctx.inputs("paraphrases", ctx.args.paraphrases, required=False)
    if not all(p.endswith(".parquet") for p in paraphrase_files):
        raise JobError(f"--paraphrases={ctx.args.paraphrases}: expected .parquet files")
    backends = paraphrase_backends(paraphrase_files)
    check_demo_paraphrases(backends, ctx.args.allow_demo_paraphrases)
    return ctx.execute(
        lambda p, out: build(p, out, files, paraphrase_files, ctx.args, methods, backends),
        ["compat"],
        declared=declared_outputs,
    )


def declared_outputs(summary: dict) -> dict[str, int]:
    """One Parquet row per positive and per negative counted."""
    return {"compat": sum(summary["positives"].values()) + sum(f["rows"] for f in summary["families"].values())}


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
