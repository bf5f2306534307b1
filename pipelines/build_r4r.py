"""Build R4R: join R2R paths into longer paths (docs/design.md, "R4R"); --num_paths=3 / 4 gives R6R / R8R.

    python -m pipelines.build_r4r --runner=DirectRunner                      # built-in synthetic data
    python -m pipelines.build_r4r --runner=DirectRunner --config=configs/r4r_train.yaml
    python -m pipelines.build_r4r --r2r_path=R2R_train.json --connectivity_dir=connectivity/ \
        --output_dir=out/r4r_train --json_output=out/R4R_train.json

Writes `paths-SSSSS-of-NNNNN.parquet`, `dead_letter-SSSSS-of-NNNNN.jsonl`, `summary.json`,
`manifest.json` and `_SUCCESS` into --output_dir, and the R4R JSON file with --json_output.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.flags import add_shared
from pipelines.renamed_flags import renamed_values
from pipelines.verdict import JobError, user_error
from vlnkit.datasets.formats import RXR_FOLLOWER_FORMAT, RXR_GUIDE_FORMAT
from vlnkit.datasets.r4r import DEFAULT_MAX_PATHS_PER_SCAN, HEADING_CONVENTIONS, JoinConfig

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.runs.staging import Staging


def declare_flags(parser) -> None:
    add_shared(
        parser,
        "dataset",
        "connectivity_dir",
        "num_shards",
        "seed",
        dataset={
            "help": "R2R JSON / JSON Lines file(s) (.gz/.bz2 too): a path, glob or comma-separated list (local or "
            "gs://). With neither this nor --connectivity_dir, a built-in synthetic environment is used. "
            "(--r2r_path is an alias.)"
        },
    )
    parser.add_argument(
        "--json_output", help="Also write the R4R JSON file (the R4R generator's keys) here; default: none"
    )
    parser.add_argument("--distance_threshold", type=float, default=3.0, help="Max d(a_last, b_first), metres")
    parser.add_argument(
        "--heading_threshold", type=float, default=None, help="Max heading difference, radians (off by default)"
    )
    parser.add_argument(
        "--heading_convention",
        choices=HEADING_CONVENTIONS,
        type=renamed_values({"published_generator": "r4r_generator"}, "--heading_convention"),
        default="simulator",
        help="simulator: clockwise from +y, wrapped to [0, pi]; "
        "r4r_generator: the R4R generator's unwrapped atan2(y, x) check",
    )
    parser.add_argument(
        "--num_paths",
        type=int,
        default=2,
        help="K, the R2R paths chained into one: 2 is R4R, 3 BabyWalk's R6R, 4 its R8R",
    )
    parser.add_argument(
        "--max_paths_per_scan",
        type=int,
        default=None,
        help="Keep at most this many joined paths per scan, a seeded sample (--seed); 0: no cap. "
        f"Default: none for --num_paths=2 (R4R), {DEFAULT_MAX_PATHS_PER_SCAN} from 3",
    )
    parser.add_argument(
        "--landmark_layout",
        action="store_true",
        help="With --json_output, also write BabyWalk's layout (per instruction: lists of sub-paths and "
        "sub-instructions) next to it as <name>_landmark.json",
    )
    parser.add_argument("--synthetic_paths_per_scan", type=int, default=40, help="Size of the built-in dataset")


JOB = Job("build_r4r", __doc__, declare_flags)


def resolve_inputs(opts) -> tuple[str, str]:
    if opts.dataset is None and opts.connectivity_dir is None:
        from vlnkit.fixtures.grid import write_environment

        where = os.path.join(opts.output_dir, "synthetic_input")
        print(f"No --dataset/--connectivity_dir given: using the built-in synthetic environment in {where}")
        return write_environment(where, paths_per_scan=opts.synthetic_paths_per_scan)
    if opts.dataset is None or opts.connectivity_dir is None:
        raise JobError("--dataset and --connectivity_dir must be given together (or neither, for the built-in demo)")
    return opts.dataset, opts.connectivity_dir


def json_order(record):
    return (record["scan"], record["_order"])


def r4r_order(key, scan_rank):
    """The R4R generator's order: scans by first appearance, then first path, then second path."""
    scan, order = key
    return (scan_rank[scan], order)


def json_record(record):
    """R4R's keys for a pair (the R4R generator's file, unchanged); chains add `path_ids`."""
    from vlnkit.datasets.schemas import R4R_JSON_KEYS

    keys = R4R_JSON_KEYS if len(record["path_ids"]) == 2 else (*R4R_JSON_KEYS, "path_ids")
    return {k: record[k] for k in keys}


def landmark_path(json_output: str) -> str:
    """Where --landmark_layout writes: R6R_train.json -> R6R_train_landmark.json (BabyWalk's names)."""
    stem = json_output[: -len(".json")] if json_output.endswith(".json") else json_output
    return f"{stem}_landmark.json"


def landmark_order(record):
    return (record["scan"], record["_order"], record["_k"])


def r4r_landmark_order(key, scan_rank):
    scan, order, k = key
    return (scan_rank[scan], order, k)


def landmark_json(record):
    return {k: v for k, v in record.items() if not k.startswith("_")}


def build(pipeline, out: Staging, files: list[str], connectivity_dir: str, opts, config: JoinConfig) -> None:
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER
    from transforms.r4r import JoinR4R
    from transforms.read import ReadR2R, UniqueBy
    from transforms.run_summary import finish_run
    from transforms.tally import tally
    from transforms.write import WriteJsonFile, WriteTables
    from vlnkit.datasets.r4r import landmark_records
    from vlnkit.datasets.schemas import R4R_PATHS
    from vlnkit.datasets.summary import build_r4r_summary
    from vlnkit.io.schemas import schema_version

    # Records travel in lists: read, deduplicated by path_id in buckets, joined per scan.
    read = pipeline | "ReadR2R" >> ReadR2R(files, require_distance=True, reshuffle=False, batched=True)
    unique = read["records"] | "UniquePathIds" >> UniqueBy(lambda r: r["path_id"], "path_id", files, batched=True)
    # The joined paths come as one Arrow table per scan (Parquet), and as dicts only for the JSON files.
    landmark = bool(opts.json_output and opts.landmark_layout)
    join = unique["records"] | "JoinR4R" >> JoinR4R(
        connectivity_dir, config, batched=True, landmark=landmark, records=bool(opts.json_output)
    )
    joined = join["joined"]
    join["tables"] | "WritePaths" >> WriteTables(out.join("paths"), R4R_PATHS, opts.num_shards)
    if opts.json_output:
        joined | "WriteR4RJson" >> WriteJsonFile(
            out.staged(opts.json_output),
            project=json_record,
            sort_key=json_order,
            final_key=r4r_order,
            side={"scan_rank": beam.pvalue.AsDict(join["scan_rank"])},
            batched=True,
            runs=True,  # JoinR4R's lists are sorted runs of one scan each
        )
    if opts.json_output and opts.landmark_layout:
        (
            joined
            | "LandmarkLayout" >> beam.Map(lambda batch: [x for record in batch for x in landmark_records(record)])
            | "WriteLandmarkJson"
            >> WriteJsonFile(
                out.staged(landmark_path(opts.json_output)),
                project=landmark_json,
                sort_key=landmark_order,
                final_key=r4r_landmark_order,
                side={"scan_rank": beam.pvalue.AsDict(join["scan_rank"])},
                batched=True,
                runs=True,
            )
        )
    dead_letters = (read[DEAD_LETTER], unique[DEAD_LETTER], join[DEAD_LETTER])
    tallies = (join["stats"], unique["records"] | "TallyRead" >> tally("records_read", batched=True))
    static = {
        "job": JOB.name,
        "schema_version": schema_version(R4R_PATHS),
        "distance_threshold": config.distance_threshold,
        "heading_threshold": config.heading_threshold,
        "heading_convention": config.heading_convention,
        "num_paths": config.num_paths,
        "max_paths_per_scan": config.cap,
        "seed": config.seed,
    }
    _ = finish_run(out.folder, lambda totals: build_r4r_summary(static, totals), dead_letters, tallies)


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table, print_outputs

    output_dir, json_output = ctx.output_dir, ctx.args.json_output
    d, j = summary["dataset"], summary["join"]
    rows = [
        ("R2R paths read", summary["records_read"]),
        ("paths generated", d["paths"]),
        ("instructions generated", d["instructions"]),
        ("pairs considered", j["pairs_considered"]),
        ("pairs filtered by distance", j["filtered_distance"]),
        ("pairs filtered by heading", j["filtered_heading"]),
        (f"valid chains of {summary['num_paths']} paths", j["chains_valid"]),
        ("chains left out by the cap", j["chains_capped"]),
        ("mean path distance (m)", d["mean_distance"]),
        ("mean shortest-path distance (m)", d["mean_shortest_path_distance"]),
        ("mean steps (viewpoints)", d["mean_steps"]),
        ("mean shortest-path steps", d["mean_shortest_path_steps"]),
        ("dead-lettered records", summary["dead_letters"]),
    ]
    print(format_table([(k, "n/a" if v is None else v) for k, v in rows], "R4R summary"))
    print_outputs(output_dir, summary["dead_letters"], f"  JSON: {json_output}" if json_output else "")


def run(ctx: Run) -> dict:
    opts = ctx.args
    with user_error():
        config = JoinConfig(
            opts.distance_threshold,
            opts.heading_threshold,
            opts.heading_convention,
            num_paths=opts.num_paths,
            max_paths_per_scan=opts.max_paths_per_scan,
            seed=opts.seed,
        )
        if opts.landmark_layout and not opts.json_output:
            raise ValueError("--landmark_layout needs --json_output (it is written next to that file)")
    ctx.check_output_file("json_output", opts.json_output)
    if opts.landmark_layout:
        ctx.check_output_file("json_output", landmark_path(opts.json_output))
    dataset, connectivity_dir = resolve_inputs(opts)
    files = ctx.inputs("dataset", dataset, refuse=RXR_REFUSED)
    ctx.graphs(connectivity_dir)
    return ctx.execute(
        lambda p, out: build(p, out, files, connectivity_dir, opts, config),
        ["paths"],
        extra_outputs=extra_outputs(opts),
        declared=lambda summary: declared_outputs(summary, opts),
    )


def declared_outputs(summary: dict, opts) -> dict[str, int]:
    """What a run wrote, from its join's tallies: one Parquet row and one R4R JSON record per joined path,
    one landmark record per joined instruction."""
    paths = summary["dataset"]["paths"]
    out = {"paths": paths}
    if opts.json_output:
        out[opts.json_output] = paths
        if opts.landmark_layout:
            out[landmark_path(opts.json_output)] = summary["dataset"]["instructions"]
    return out


# RxR files are refused before the pipeline (exit 2): joining RxR paths is not defined (their instructions
# are in different languages), and every record would otherwise be dead-lettered one by one.
_NOT_JOINED = (
    "; build_r4r joins R2R-format paths (R2R JSON or JSON Lines), and joining RxR paths is not defined "
    "(their instructions are in different languages)"
)
RXR_REFUSED = {
    RXR_GUIDE_FORMAT: "an RxR guide file" + _NOT_JOINED,
    RXR_FOLLOWER_FORMAT: "an RxR follower file" + _NOT_JOINED,
}


def extra_outputs(opts) -> tuple[str, ...]:
    if not opts.json_output:
        return ()
    return (opts.json_output, landmark_path(opts.json_output)) if opts.landmark_layout else (opts.json_output,)


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
