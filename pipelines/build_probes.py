"""Build behavioral probe episodes from sub-instruction alignments (docs/jobs/build_probes.md).

    python -m pipelines.build_probes --runner=DirectRunner \
        --alignments=../shared/data/fgr2r/FGR2R_val_unseen.json \
        --connectivity_dir=../shared/data/connectivity --output_dir=output/probes_val_unseen \
        [--probe_types=stop,direction,room,object] [--rooms=FILE] [--objects=FILE] [--seed=S]
    python -m pipelines.build_probes --alignment_format=rxr --alignments=rxr_val_unseen_guide.jsonl.gz \
        --pose_traces=pose_traces/ --connectivity_dir=... --output_dir=...

With `--alignment_format=rxr` the alignments are RxR guide files, each instruction aligned to its path
by the guide's pose trace (`vlnkit.probes.pose_alignment`); a missing or corrupt trace is a dead letter
naming the file. summary.json counts alignments, candidates, episodes and pairs per instruction
language (`by_language`; Fine-Grained R2R is "en"). The appended sentences are in the instruction's
language (`vlnkit.probes.templates`: Hindi and Telugu written for this toolkit, not reviewed by native
speakers); room and object probes have no Hindi or Telugu phrasings, so `by_language` counts them as
not applicable there (`not_applicable`: candidates per probe).

Writes `probes-SSSSS-of-NNNNN.parquet` (one row per episode), `episodes.json` (the same episodes
for agent code), `dead_letter-00000-of-00001.jsonl`, `summary.json`, `manifest.json`, `_SUCCESS`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.flags import add_shared
from pipelines.provenance import fingerprinted_settings
from pipelines.renamed_flags import add_renamed
from pipelines.verdict import JobError, user_error
from vlnkit.io import fileio
from vlnkit.io.redact import redact
from vlnkit.probes.episodes import ProbeConfig, agent_episode, load_objects, load_rooms
from vlnkit.probes.pose_alignment import ALIGNMENT_FORMATS, RXR_FORMAT
from vlnkit.probes.templates import PROBES, load_templates

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.runs.staging import Staging
    from vlnkit.runs.verdict import Outcome


EPISODES_JSON = "episodes.json"


def declare_flags(parser) -> None:
    parser.add_argument("--alignments", help="Alignment file(s): path, glob or comma-separated list (required)")
    parser.add_argument(
        "--alignment_format",
        default="fgr2r",
        choices=ALIGNMENT_FORMATS,
        help="Alignment reader: fgr2r (Fine-Grained R2R), or rxr (RxR guide files aligned by --pose_traces)",
    )
    parser.add_argument(
        "--pose_traces",
        help="RxR pose-trace folder (holding rxr_{split}/{instruction_id:06}_guide_pose_trace.npz); "
        "required by --alignment_format=rxr",
    )
    add_shared(parser, "connectivity_dir", "seed", "num_shards", seed={"help": "Seeds the choice of phrasing"})
    parser.add_argument(
        "--probe_types",
        default=",".join(PROBES),
        help="Comma-separated subset of " + ",".join(PROBES) + " (--probes: the old name, until the next release)",
    )
    add_renamed(parser, "--probes", "--probe_types")  # --probes is score_probes' probe files
    parser.add_argument("--rooms", help="Room labels table (CSV/TSV/JSONL: scan, viewpoint, room)")
    parser.add_argument("--objects", help="Objects table (CSV/TSV/JSONL: scan, viewpoint, object, heading, distance)")
    parser.add_argument(
        "--templates",
        help="YAML/JSON file of phrasings replacing the defaults per probe (and per language under 'languages')",
    )
    parser.add_argument("--room_max_hops", type=int, default=1, help="Room probes for targets up to k edges away")
    parser.add_argument("--object_max_distance", type=float, default=3.0, help="Objects farther (m) are ignored")
    parser.add_argument("--object_max_angle", type=float, default=15.0, help="Neighbour-to-object angle (degrees)")


JOB = Job("build_probes", __doc__, declare_flags)


def build(pipeline, out: Staging, files, opts, config: ProbeConfig) -> None:
    from transforms.deadletter import DEAD_LETTER
    from transforms.probes import STATS, MakeProbeEpisodes, ReadAlignments
    from transforms.read import UniqueBy
    from transforms.run_summary import finish_run
    from transforms.tally import tally
    from transforms.write import WriteJsonFile, WriteParquetShards
    from vlnkit.io.schemas import schema_version
    from vlnkit.probes.schemas import PROBE_EPISODES
    from vlnkit.probes.summary import build_probes_summary

    # Alignments are read and deduplicated in lists, then spread one by one for the per-episode work.
    read = pipeline | "ReadAlignments" >> ReadAlignments(
        files, opts.alignment_format, batched=True, pose_traces=opts.pose_traces
    )
    unique = read["records"] | "UniqueInstructions" >> UniqueBy(lambda r: r["instr_id"], "instr_id", files)
    made = unique["records"] | "MakeProbes" >> MakeProbeEpisodes(
        opts.connectivity_dir, config, opts.rooms, opts.objects
    )
    episodes = made["episodes"]
    episodes | "WriteProbes" >> WriteParquetShards(out.join("probes"), PROBE_EPISODES, opts.num_shards)
    episodes | "WriteEpisodesJson" >> WriteJsonFile(
        out.join(EPISODES_JSON), project=agent_episode, sort_key=lambda e: (e["_order"], e["episode_id"])
    )
    dead = (read[DEAD_LETTER], unique[DEAD_LETTER], made[DEAD_LETTER])
    tallies = (
        made[STATS],
        episodes | "TallyEpisodes" >> tally("episodes"),
    )
    static = {
        "job": JOB.name,
        "schema_version": schema_version(PROBE_EPISODES),
        "probes": list(config.probes),
        "seed": config.seed,
        "alignment_format": opts.alignment_format,
        "pose_traces": opts.pose_traces,
        "rooms": opts.rooms,
        "objects": opts.objects,
        "room_max_hops": config.room_max_hops,
        "options": redact(fingerprinted_settings(opts)),
    }
    _ = finish_run(out.folder, lambda t: build_probes_summary(static, t), dead, tallies)


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table, print_outputs
    from vlnkit.probes.scoring import skill_sort_key

    output_dir = ctx.output_dir
    rows = [
        ("instructions (alignments) read", summary["alignments"]),
        ("truncation candidates", summary["candidates"]),
        ("episodes (interventions + controls)", summary["episodes"]),
    ]
    rows += [(f"pairs: {k}", v) for k, v in summary["pairs_per_probe"].items()]
    skills = summary["pairs_per_skill"]
    rows += [(f"pairs: {k}", skills[k]) for k in sorted(skills, key=skill_sort_key) if k.startswith("direction:")]
    for k, v in summary["by_language"].items():
        rows.append((f"pairs in {k} ({v['alignments']} instructions)", v["pairs"]))
        rows += [(f"  {k}: {p} probes not applicable (candidates)", n) for p, n in v["not_applicable"].items()]
    rows.append(("dead-lettered records", summary["dead_letters"]))
    print(format_table(rows, "Probe episodes"))
    print_outputs(output_dir, summary["dead_letters"], f"  (agent input: {fileio.join(output_dir, EPISODES_JSON)})")


def outcome(summary: dict) -> Outcome:
    from vlnkit.runs.verdict import Outcome

    return Outcome(int(summary.get("alignments", 0)), int(summary.get("dead_letters", 0)))


def check_pose_traces(opts, files: list[str]) -> None:
    """--pose_traces goes with --alignment_format=rxr (and the folder exists); an RxR guide file read as
    Fine-Grained R2R stops the job with the flags to use."""
    from vlnkit.datasets.formats import RXR_GUIDE_FORMAT, file_format

    if opts.alignment_format == RXR_FORMAT:
        if not opts.pose_traces:
            raise JobError("--alignment_format=rxr needs --pose_traces (the folder holding rxr_{split}/)")
        if not fileio.is_remote(opts.pose_traces) and not os.path.isdir(opts.pose_traces):
            raise JobError(f"--pose_traces={opts.pose_traces}: no such folder")
        return
    if opts.pose_traces:
        raise JobError(f"--pose_traces only applies to --alignment_format=rxr (not {opts.alignment_format})")
    if files and file_format(files[0]) == RXR_GUIDE_FORMAT:
        raise JobError(f"--alignments={files[0]} is an RxR guide file: use --alignment_format=rxr --pose_traces=DIR")


def run(ctx: Run) -> dict:
    from pipelines.input_checks import refuse_continuous

    opts = ctx.args
    files = ctx.inputs("alignments", opts.alignments, refuse=refuse_continuous(JOB.name))
    ctx.graphs(opts.connectivity_dir)
    check_pose_traces(opts, files)
    with user_error():
        config = ProbeConfig(
            probes=tuple(p.strip() for p in opts.probe_types.split(",") if p.strip()),
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
    for flag, probe, given in (("--rooms", "room", opts.rooms), ("--objects", "object", opts.objects)):
        if probe in config.probes and not given and opts.probe_types != ",".join(PROBES):
            raise JobError(f"--probe_types asks for {probe} probes, which need {flag}")
    ctx.inputs("rooms", opts.rooms, required=False)
    ctx.inputs("objects", opts.objects, required=False)
    ctx.inputs("templates", opts.templates, required=False)
    return ctx.execute(
        lambda p, out: build(p, out, files, opts, config),
        ["probes"],
        extra_outputs=(fileio.join(ctx.output_dir, EPISODES_JSON),),
        outcome=outcome,
        declared=lambda summary: {"probes": summary["episodes"], EPISODES_JSON: summary["episodes"]},
    )


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
