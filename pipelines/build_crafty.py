"""Build Crafty's template instructions for any path set (Zhao et al. 2021, appendix B; docs/jobs/build_crafty.md).

    python -m pipelines.build_crafty --runner=DirectRunner \
        --dataset=../shared/data/r2r/R2R_val_seen.json --connectivity_dir=../shared/data/connectivity \
        --objects_dir=../shared/data/crafty --bbox_dir=../shared/data/reverie/v1/BBox \
        --appraiser_dataset=../shared/data/r2r/R2R_train.json --output_dir=output/crafty_val_seen

--dataset takes R2R files, build_r4r's R4R JSON (any --num_paths) and RxR guide files (one path per
path_id). Each path gets --num_instructions instructions; every choice is seeded by --seed and the path,
so a run gives the same words on every runner. The Appraiser (per-category IDF, each panorama a document)
is computed over the scans of --appraiser_dataset (default: --dataset's) and published as appraiser.json.

Writes `instructions-SSSSS-of-NNNNN.parquet` (one row per instruction: its motion sequence and the
landmark at each step), `instructions.json` (R2R format: agent code reads it as it reads R2R),
`appraiser.json`, `dead_letter-00000-of-00001.jsonl`, `summary.json`, `manifest.json`, `_SUCCESS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.flags import add_shared
from pipelines.verdict import JobError
from vlnkit.crafty.objects import CATEGORY_FILE, NEAR, OBJPOS_FILE
from vlnkit.datasets.formats import RXR_FOLLOWER_FORMAT
from vlnkit.io import fileio

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.runs.staging import Staging

INSTRUCTIONS_JSON = "instructions.json"
APPRAISER_JSON = "appraiser.json"


def declare_flags(parser) -> None:
    add_shared(
        parser,
        "dataset",
        "connectivity_dir",
        "seed",
        "num_shards",
        dataset={
            "help": "Paths to describe: R2R JSON / JSON Lines, build_r4r's R4R JSON, or RxR guide files (.gz too); "
            "a path, glob or comma-separated list (required)"
        },
        seed={"help": "Seeds every template and phrase choice (with the path's scan and path_id)"},
    )
    parser.add_argument(
        "--objects_dir", help=f"Folder holding {OBJPOS_FILE} and Matterport3D's {CATEGORY_FILE} (required)"
    )
    parser.add_argument(
        "--bbox_dir", help="REVERIE's BBox folder (<scan>_<viewpoint>.json: objects seen from a viewpoint) (required)"
    )
    parser.add_argument(
        "--appraiser_dataset",
        help="R2R-format file(s) whose scans' panoramas are the Appraiser's documents (Crafty: R2R train); "
        "default: --dataset's scans",
    )
    parser.add_argument("--num_instructions", type=int, default=3, help="Instructions per path")
    parser.add_argument(
        "--seen_within",
        type=float,
        default=NEAR,
        help="Metres: an object REVERIE names anywhere in the scan counts as seen from a viewpoint this near "
        "(besides the objects REVERIE marks visible from it); 0: REVERIE's visibility only",
    )


JOB = Job("build_crafty", __doc__, declare_flags)


def json_order(record):
    return record["_order"]


def json_record(record):
    from vlnkit.crafty.schemas import R2R_JSON_KEYS

    return {k: record[k] for k in R2R_JSON_KEYS}


def write_appraiser(table: dict, path: str) -> dict:
    from transforms.write import write_json

    write_json(path, table, indent=True)
    return {
        "appraiser_categories": len(table["idf"]),
        "appraiser_panoramas": table["panoramas"],
        "appraiser_scans": table["scans"],
    }


def build(pipeline, out: Staging, files: list[str], appraiser_files: list[str], opts) -> None:
    import apache_beam as beam

    from transforms.crafty import STATS, TABLES, AppraiseScans, DescribePaths
    from transforms.deadletter import DEAD_LETTER
    from transforms.read import ReadR2R, UniqueBy
    from transforms.run_summary import finish_run
    from transforms.tally import tally
    from transforms.write import WriteJsonFile, WriteTables
    from vlnkit.crafty.observer import ObserverParams
    from vlnkit.crafty.schemas import CRAFTY_INSTRUCTIONS
    from vlnkit.crafty.summary import build_crafty_summary
    from vlnkit.datasets.rxr import path_key
    from vlnkit.io.schemas import schema_version

    read = pipeline | "ReadPaths" >> ReadR2R(files, reshuffle=False, batched=True, rxr_guides=True)
    unique = read["records"] | "UniquePaths" >> UniqueBy(path_key, "path_id", files, batched=True)
    if appraiser_files == files:
        training = unique["records"]
        dead_training = ()
    else:
        train = pipeline | "ReadAppraiserPaths" >> ReadR2R(
            appraiser_files, reshuffle=False, batched=True, rxr_guides=True
        )
        training, dead_training = train["records"], (train[DEAD_LETTER],)
    scans = training | "Scans" >> beam.FlatMap(lambda batch: sorted({r["scan"] for r in batch}))
    appraised = scans | "Appraise" >> AppraiseScans(
        opts.connectivity_dir, opts.objects_dir, opts.bbox_dir, opts.seen_within
    )
    appraiser_written = appraised["table"] | "WriteAppraiser" >> beam.Map(write_appraiser, out.join(APPRAISER_JSON))
    made = unique["records"] | "Describe" >> DescribePaths(
        appraised["table"],
        opts.connectivity_dir,
        opts.objects_dir,
        opts.bbox_dir,
        opts.seen_within,
        ObserverParams(),
        opts.num_instructions,
        opts.seed,
    )
    made[TABLES] | "WriteInstructions" >> WriteTables(out.join("instructions"), CRAFTY_INSTRUCTIONS, opts.num_shards)
    made["records"] | "WriteR2RJson" >> WriteJsonFile(
        out.join(INSTRUCTIONS_JSON), project=json_record, sort_key=json_order, batched=True
    )
    dead = (read[DEAD_LETTER], unique[DEAD_LETTER], appraised[DEAD_LETTER], made[DEAD_LETTER], *dead_training)
    tallies = (made[STATS], appraiser_written, unique["records"] | "TallyRead" >> tally("records_read", batched=True))
    static = {
        "job": JOB.name,
        "schema_version": schema_version(CRAFTY_INSTRUCTIONS),
        "num_instructions": opts.num_instructions,
        "seed": opts.seed,
        "seen_within": opts.seen_within,
        "observer": vars(ObserverParams()),
    }
    _ = finish_run(out.folder, lambda totals: build_crafty_summary(static, totals), dead, tallies)


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table, print_outputs

    rows = [
        ("paths read", summary["records_read"]),
        ("paths described", summary["paths"]),
        ("instructions", summary["instructions"]),
        ("fallback instructions (no object seen)", summary["fallback_instructions"]),
        ("mean words per instruction", summary["mean_words"]),
        (
            "Appraiser: categories / panoramas / scans",
            "{categories} / {panoramas} / {scans}".format(**summary["appraiser"]),
        ),
        ("dead-lettered records", summary["dead_letters"]),
    ]
    print(format_table([(k, "n/a" if v is None else v) for k, v in rows], "Crafty summary"))
    print_outputs(
        ctx.output_dir, summary["dead_letters"], f"  (agent input: {fileio.join(ctx.output_dir, INSTRUCTIONS_JSON)})"
    )


def check_objects(opts) -> None:
    if not opts.objects_dir or not opts.bbox_dir:
        raise JobError("--objects_dir and --bbox_dir are required (Crafty names the objects they hold)")
    if opts.num_instructions < 1:
        raise JobError(f"--num_instructions must be at least 1, got {opts.num_instructions}")
    if opts.seen_within < 0:
        raise JobError(f"--seen_within must be >= 0 metres, got {opts.seen_within}")


REFUSED = {RXR_FOLLOWER_FORMAT: "an RxR follower file; build_crafty describes paths (R2R, R4R or RxR guide files)"}


def run(ctx: Run) -> dict:
    opts = ctx.args
    check_objects(opts)
    files = ctx.inputs("dataset", opts.dataset, refuse=REFUSED)
    appraiser_files = ctx.inputs("appraiser_dataset", opts.appraiser_dataset, required=False, refuse=REFUSED) or files
    ctx.graphs(opts.connectivity_dir)
    ctx.inputs(
        "objects_dir", [fileio.join(opts.objects_dir, OBJPOS_FILE), fileio.join(opts.objects_dir, CATEGORY_FILE)]
    )
    ctx.input_set("bbox_dir", fileio.join(opts.bbox_dir, "*.json"))
    return ctx.execute(
        lambda p, out: build(p, out, files, appraiser_files, opts),
        ["instructions"],
        extra_outputs=(fileio.join(ctx.output_dir, INSTRUCTIONS_JSON), fileio.join(ctx.output_dir, APPRAISER_JSON)),
        declared=lambda summary: {
            "instructions": summary["instructions"],
            INSTRUCTIONS_JSON: summary["paths"],
            APPRAISER_JSON: None,
        },
    )


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
