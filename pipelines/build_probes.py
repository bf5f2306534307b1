"""Build behavioral probe episodes from sub-instruction alignments (issue 7; README, "Behavioral probes").

    python -m pipelines.build_probes --runner=DirectRunner \
        --alignments=../shared/data/fgr2r/FGR2R_val_unseen.json \
        --connectivity_dir=../shared/data/connectivity --output_dir=output/probes_val_unseen \
        [--probes=stop,direction,room,object] [--rooms=FILE] [--objects=FILE] [--seed=S]

Writes `probes-SSSSS-of-NNNNN.parquet` (one row per episode), `episodes.json` (the same episodes
for agent code), `dead_letter-00000-of-00001.jsonl`, `summary.json`, `manifest.json`, `_SUCCESS`.
"""

from __future__ import annotations

import argparse
import os
import sys

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.common import (
    JobError,
    connectivity_files,
    expand_config,
    format_table,
    main_wrapper,
    print_outputs,
    require_graphs,
    require_inputs,
    run_job,
)
from transforms.deadletter import DEAD_LETTER, DEAD_LETTER_FILE, WriteDeadLetters
from transforms.probes import STATS, MakeProbeEpisodes, ReadAlignments
from transforms.read import DedupeBy
from transforms.tally import tally
from transforms.write import WriteJsonFile, WriteParquetShards, WriteSummary
from vlnkit.datasets.alignments import READERS
from vlnkit.io import fileio
from vlnkit.io.schemas import schema_version
from vlnkit.probes.episodes import (
    PROBE_EPISODES,
    PROBES,
    ProbeConfig,
    ProbeInputError,
    agent_episode,
    load_objects,
    load_rooms,
    load_templates,
)
from vlnkit.probes.scoring import skill_sort_key

JOB = "build_probes"
EPISODES_JSON = "episodes.json"


def job_parser() -> argparse.ArgumentParser:
    """This job's own flags. A plain parser, not a PipelineOptions subclass: Beam merges every
    PipelineOptions subclass into one parser, so two jobs declaring the same flag (--output_dir,
    --seed, ...) would conflict once both are imported. Everything else goes to PipelineOptions."""
    parser = argparse.ArgumentParser(prog=f"python -m pipelines.{JOB}", allow_abbrev=False)
    parser.add_argument("--config", help="YAML profile of flags (see configs/); explicit flags override it")
    parser.add_argument("--alignments", help="Alignment file(s): path, glob or comma-separated list (required)")
    parser.add_argument("--alignment_format", default="fgr2r", choices=sorted(READERS), help="Alignment reader")
    parser.add_argument("--connectivity_dir", help="Folder of <scan>_connectivity.json files (required)")
    parser.add_argument("--output_dir", default=os.path.join("output", JOB), help="Folder for all outputs")
    parser.add_argument("--probes", default=",".join(PROBES), help="Comma-separated subset of " + ",".join(PROBES))
    parser.add_argument("--rooms", help="Room labels table (CSV/TSV/JSONL: scan, viewpoint, room)")
    parser.add_argument("--objects", help="Objects table (CSV/TSV/JSONL: scan, viewpoint, object, heading, distance)")
    parser.add_argument("--templates", help="YAML/JSON file of phrasings replacing the defaults per probe")
    parser.add_argument("--seed", type=int, default=0, help="Seeds the choice of phrasing (with each pair's id)")
    parser.add_argument("--room_max_hops", type=int, default=1, help="Room probes for targets up to k edges away")
    parser.add_argument("--object_max_distance", type=float, default=3.0, help="Objects farther (m) are ignored")
    parser.add_argument("--object_max_angle", type=float, default=15.0, help="Neighbour-to-object angle (degrees)")
    parser.add_argument("--num_shards", type=int, default=0, help="Parquet shards (0: let the runner decide)")
    return parser


def parse_args(argv):
    argv = expand_config(list(sys.argv[1:] if argv is None else argv))
    opts, rest = job_parser().parse_known_args(argv)
    return PipelineOptions(rest), opts


def build(pipeline, files, opts, config: ProbeConfig) -> None:
    out = opts.output_dir
    read = pipeline | "ReadAlignments" >> ReadAlignments(files, opts.alignment_format)
    unique = read["records"] | "UniqueInstructions" >> DedupeBy(lambda r: r["instr_id"], "instr_id")
    made = unique["records"] | "MakeProbes" >> MakeProbeEpisodes(
        opts.connectivity_dir, config, opts.rooms, opts.objects
    )
    episodes = made["episodes"]
    episodes | "WriteProbes" >> WriteParquetShards(fileio.join(out, "probes"), PROBE_EPISODES, opts.num_shards)
    episodes | "WriteEpisodesJson" >> WriteJsonFile(
        fileio.join(out, EPISODES_JSON), project=agent_episode, sort_key=lambda e: (e["_order"], e["episode_id"])
    )
    dead = (read[DEAD_LETTER], unique[DEAD_LETTER], made[DEAD_LETTER]) | "DeadLetters" >> WriteDeadLetters(
        fileio.join(out, DEAD_LETTER_FILE)
    )
    tallies = (
        made[STATS],
        episodes | "TallyEpisodes" >> tally("episodes"),
        dead | "TallyDead" >> tally("dead_letters"),
    )
    static = {
        "job": JOB,
        "schema_version": schema_version(PROBE_EPISODES),
        "probes": list(config.probes),
        "seed": config.seed,
        "rooms": opts.rooms,
        "objects": opts.objects,
        "room_max_hops": config.room_max_hops,
        "options": {k: v for k, v in sorted(vars(opts).items())},
    }
    _ = tallies | "Summary" >> WriteSummary(fileio.join(out, "summary.json"), lambda t: finish_summary(static, t))


def finish_summary(static: dict, totals: dict) -> dict:
    pairs = {k.split(":", 1)[1]: v for k, v in totals.items() if k.startswith("pairs:")}
    by_probe: dict[str, int] = {}
    for skill, n in pairs.items():
        probe = skill.split(":", 1)[0]
        by_probe[probe] = by_probe.get(probe, 0) + n
    return {
        **static,
        "alignments": totals.get("alignments", 0),
        "candidates": totals.get("candidates", 0),
        "episodes": totals.get("episodes", 0),
        "pairs_per_probe": dict(sorted(by_probe.items())),
        "pairs_per_skill": dict(sorted(pairs.items(), key=lambda kv: skill_sort_key(kv[0]))),
        "dead_letters": totals.get("dead_letters", 0),
    }


def print_summary(summary: dict, output_dir: str) -> None:
    rows = [
        ("instructions (alignments) read", summary["alignments"]),
        ("truncation candidates", summary["candidates"]),
        ("episodes (interventions + controls)", summary["episodes"]),
    ]
    rows += [(f"pairs: {k}", v) for k, v in summary["pairs_per_probe"].items()]
    skills = summary["pairs_per_skill"]
    rows += [(f"pairs: {k}", skills[k]) for k in sorted(skills, key=skill_sort_key) if k.startswith("direction:")]
    rows.append(("dead-lettered records", summary["dead_letters"]))
    print(format_table(rows, "Probe episodes"))
    print_outputs(output_dir, summary["dead_letters"], f"  (agent input: {fileio.join(output_dir, EPISODES_JSON)})")


@main_wrapper
def main(argv=None) -> dict:
    options, opts = parse_args(argv)
    if not opts.alignments or not opts.connectivity_dir:
        raise JobError("--alignments and --connectivity_dir are required")
    inputs = require_inputs("--alignments", opts.alignments)
    require_graphs(opts.connectivity_dir)
    try:
        config = ProbeConfig(
            probes=tuple(p.strip() for p in opts.probes.split(",") if p.strip()),
            seed=opts.seed,
            templates=load_templates(opts.templates),
            room_max_hops=opts.room_max_hops,
            object_max_distance=opts.object_max_distance,
            object_max_angle=opts.object_max_angle,
        )
        # Tables are checked here so a malformed one stops the job with one clear line, not on a worker.
        if opts.rooms:
            load_rooms(opts.rooms)
        if opts.objects:
            load_objects(opts.objects)
    except (ValueError, ProbeInputError) as exc:
        raise JobError(str(exc)) from None
    for flag, probe, given in (("--rooms", "room", opts.rooms), ("--objects", "object", opts.objects)):
        if probe in config.probes and not given and opts.probes != ",".join(PROBES):
            raise JobError(f"--probes asks for {probe} probes, which need {flag}")
    tables = [(p, s) for p in (opts.rooms, opts.objects) if p for p, s in fileio.match(p)]
    files = [p for p, _ in inputs]
    summary = run_job(
        JOB,
        options,
        opts.output_dir,
        ["probes", "dead_letter"],
        inputs + tables + connectivity_files(opts.connectivity_dir),
        lambda p: build(p, files, opts, config),
        settings=vars(opts),
    )
    print_summary(summary, opts.output_dir)
    return summary


if __name__ == "__main__":
    main()
