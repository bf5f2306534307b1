"""Build R4R: join R2R paths into longer paths (DESIGN.md, "R4R").

    python -m pipelines.build_r4r --runner=DirectRunner                      # built-in synthetic data
    python -m pipelines.build_r4r --runner=DirectRunner --config=configs/r4r_train.yaml
    python -m pipelines.build_r4r --r2r_path=R2R_train.json --connectivity_dir=connectivity/ \
        --output_dir=out/r4r_train --json_output=out/R4R_train.json

Writes `paths-SSSSS-of-NNNNN.parquet`, `dead_letter-SSSSS-of-NNNNN.jsonl`, `summary.json`,
`manifest.json` and `_SUCCESS` into --output_dir, and the R4R JSON file with --json_output.
"""

from __future__ import annotations

import os

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.common import (
    JobError,
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
from transforms.r4r import JoinR4R
from transforms.read import DedupeBy, ReadR2R
from transforms.tally import tally
from transforms.write import WriteJsonFile, WriteParquetShards, WriteSummary
from vlnkit.datasets.r4r import HEADING_CONVENTIONS, JoinConfig, summarize
from vlnkit.io import fileio
from vlnkit.io.schemas import R4R_JSON_KEYS, R4R_PATHS, schema_version

JOB = "build_r4r"
DEFAULT_OUTPUT_DIR = default_output_dir(JOB)


class BuildR4ROptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--r2r_path",
            help="R2R JSON / JSON Lines file(s): a path, glob or comma-separated list (local or gs://...). "
            "With neither this nor --connectivity_dir, a built-in synthetic environment is used.",
        )
        parser.add_argument("--connectivity_dir", help="Folder of <scan>_connectivity.json files")
        parser.add_argument("--output_dir", help=f"Folder for shards, summary, manifest (default {DEFAULT_OUTPUT_DIR})")
        parser.add_argument("--json_output", help="Also write the R4R JSON file (published generator's keys) here")
        parser.add_argument("--distance_threshold", type=float, default=3.0, help="Max d(a_last, b_first), metres")
        parser.add_argument(
            "--heading_threshold", type=float, default=None, help="Max heading difference, radians (off by default)"
        )
        parser.add_argument(
            "--heading_convention",
            choices=HEADING_CONVENTIONS,
            default="simulator",
            help="simulator: clockwise from +y, wrapped to [0, pi] (default); "
            "published_generator: the published generator's unwrapped atan2(y, x) check",
        )
        parser.add_argument("--num_shards", type=int, default=0, help="Parquet shards (0: let the runner decide)")
        parser.add_argument("--synthetic_paths_per_scan", type=int, default=40, help="Size of the built-in dataset")


def resolve_inputs(opts: BuildR4ROptions) -> tuple[str, str]:
    if opts.r2r_path is None and opts.connectivity_dir is None:
        from vlnkit.navigation.synthetic import write_environment

        where = os.path.join(opts.output_dir, "synthetic_input")
        print(f"No --r2r_path/--connectivity_dir given: using the built-in synthetic environment in {where}")
        return write_environment(where, paths_per_scan=opts.synthetic_paths_per_scan)
    if opts.r2r_path is None or opts.connectivity_dir is None:
        raise JobError("--r2r_path and --connectivity_dir must be given together (or neither, for the built-in demo)")
    return opts.r2r_path, opts.connectivity_dir


def json_order(record):
    return (record["scan"], record["_order"])


def published_order(key, scan_rank):
    """The published generator's order: scans by first appearance, then first path, then second path."""
    scan, order = key
    return (scan_rank[scan], order)


def json_record(record):
    return {k: record[k] for k in R4R_JSON_KEYS}


def build(pipeline, files: list[str], connectivity_dir: str, opts: BuildR4ROptions, config: JoinConfig) -> None:
    out = opts.output_dir
    # DedupeBy groups by path_id right after reading, which spreads the records already.
    read = pipeline | "ReadR2R" >> ReadR2R(files, require_distance=True, min_path_len=1, reshuffle=False)
    unique = read["records"] | "UniquePathIds" >> DedupeBy(lambda r: r["path_id"], "path_id")
    join = unique["records"] | "JoinR4R" >> JoinR4R(connectivity_dir, config)
    joined = join["joined"]
    joined | "WritePaths" >> WriteParquetShards(fileio.join(out, "paths"), R4R_PATHS, opts.num_shards, batched=True)
    if opts.json_output:
        joined | "WriteR4RJson" >> WriteJsonFile(
            opts.json_output,
            project=json_record,
            sort_key=json_order,
            final_key=published_order,
            side_inputs={"scan_rank": beam.pvalue.AsDict(join["scan_rank"])},
            batched=True,
        )
    dead = (read[DEAD_LETTER], unique[DEAD_LETTER], join[DEAD_LETTER]) | "DeadLetters" >> WriteDeadLetters(
        fileio.join(out, DEAD_LETTER_FILE)
    )
    tallies = (
        join["stats"],
        unique["records"] | "TallyRead" >> tally("records_read"),
        dead | "TallyDead" >> tally("dead_letters"),
    )
    static = {
        "job": JOB,
        "schema_version": schema_version(R4R_PATHS),
        "distance_threshold": config.distance_threshold,
        "heading_threshold": config.heading_threshold,
        "heading_convention": config.heading_convention,
    }
    _ = tallies | "Summary" >> WriteSummary(
        fileio.join(out, "summary.json"), lambda totals: finish_summary(static, totals)
    )


def finish_summary(static: dict, totals: dict) -> dict:
    considered = totals.get("pairs_considered", 0)
    return {
        **static,
        "records_read": totals.get("records_read", 0),
        "dead_letters": totals.get("dead_letters", 0),
        "join": {
            "pairs_considered": considered,
            "filtered_distance": considered - totals.get("passed_distance", 0),
            "filtered_heading": totals.get("filtered_heading", 0),
        },
        "dataset": summarize(totals),
    }


def print_summary(summary: dict, output_dir: str, json_output: str | None) -> None:
    d, j = summary["dataset"], summary["join"]
    rows = [
        ("R2R paths read", summary["records_read"]),
        ("paths generated", d["paths"]),
        ("instructions generated", d["instructions"]),
        ("pairs considered", j["pairs_considered"]),
        ("pairs filtered by distance", j["filtered_distance"]),
        ("pairs filtered by heading", j["filtered_heading"]),
        ("mean path distance (m)", d["mean_distance"]),
        ("mean shortest-path distance (m)", d["mean_shortest_path_distance"]),
        ("mean steps (viewpoints)", d["mean_steps"]),
        ("mean shortest-path steps", d["mean_shortest_path_steps"]),
        ("dead-lettered records", summary["dead_letters"]),
    ]
    print(format_table([(k, "n/a" if v is None else v) for k, v in rows], "R4R summary"))
    print_outputs(output_dir, summary["dead_letters"], f"  JSON: {json_output}" if json_output else "")


@main_wrapper
def main(argv=None) -> dict:
    options, opts = parse_options(BuildR4ROptions, argv)
    try:
        config = JoinConfig(opts.distance_threshold, opts.heading_threshold, opts.heading_convention)
    except ValueError as exc:
        raise JobError(str(exc)) from None
    opts.output_dir = opts.output_dir or DEFAULT_OUTPUT_DIR
    r2r_path, connectivity_dir = resolve_inputs(opts)
    inputs = require_inputs("--r2r_path", r2r_path)
    graphs = require_graphs(connectivity_dir)
    files = [p for p, _ in inputs]
    summary = run_job(
        JOB,
        options,
        opts.output_dir,
        ["paths", "dead_letter"],
        inputs + graphs,
        lambda p: build(p, files, connectivity_dir, opts, config),
        job_options=opts,
        extra_outputs=(opts.json_output,) if opts.json_output else (),
    )
    if summary.get("skipped"):
        return summary
    print_summary(summary, opts.output_dir, opts.json_output)
    return summary


if __name__ == "__main__":
    main()
