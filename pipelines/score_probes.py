"""Score an agent on behavioral probe episodes (docs/jobs/score_probes.md).

    python -m pipelines.score_probes --runner=DirectRunner \
        --probes='output/probes_val_unseen/probes-*.parquet' \
        --predictions=my_agent=agent_probs.jsonl --output_dir=output/probe_scores [--seed=S] [--bootstrap=1000]

Agent outputs (--predictions, one agent per run) are JSON Lines `{"episode_id": ..., "probs": {"<viewpoint id>": p, ..., "STOP": p}}`.
Writes `summary.json` ({"skills": {skill: {score, ci, shift, shift_ci, episodes, ...}}, ...}),
`scores-SSSSS-of-NNNNN.parquet` (one row per scored episode), `missing_episodes.txt` (episodes
without agent output, one id per line), `dead_letter-00000-of-00001.jsonl`, `manifest.json`, `_SUCCESS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.flags import SHARED, add_shared
from pipelines.provenance import fingerprinted_settings
from pipelines.renamed_flags import add_renamed
from pipelines.verdict import JobError, user_error
from vlnkit.io import fileio
from vlnkit.io.redact import redact
from vlnkit.probes.scoring import (
    LEVEL,
    N_BOOT,
    format_float,
    skill_sort_key,
    validate_probe_file,
)

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.runs.staging import Staging
    from vlnkit.runs.verdict import Outcome


MISSING_FILE = "missing_episodes.txt"
EPISODE_COLUMNS = ["episode_id", "pair_id", "variant", "skill", "scan", "path_id", "candidates", "correct"]


def declare_flags(parser) -> None:
    parser.add_argument("--probes", help="Probe episode Parquet file(s) from build_probes: path, glob or list")
    add_shared(
        parser,
        "predictions",
        predictions={
            "help": "Candidate probabilities: JSON Lines of {episode_id, probs}; one agent per run. "
            + SHARED["predictions"][1]["help"]
        },
    )
    add_renamed(parser, "--agent_outputs", "--predictions", dest="agent_outputs")  # its files: one agent
    add_shared(
        parser,
        "seed",
        "num_shards",
        "bootstrap",
        seed={"help": "Seeds the bootstrap"},
        bootstrap={
            "default": N_BOOT,
            "help": "Bootstrap replicates for each skill's intervals (hierarchical: scans, then trajectories "
            "within them); at least 1",
        },
    )
    add_renamed(parser, "--n_boot", "--bootstrap")


JOB = Job("score_probes", __doc__, declare_flags)


def build(pipeline, out: Staging, probe_files, output_files, opts, bootstrap, agent_name: str = "agent") -> None:
    """Wire the job; `bootstrap` is the run's `BootstrapConfig` (replicates and seed of the skills' intervals)."""
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER
    from transforms.probes import MISSING, ReadAgentOutputs, ScoreProbeEpisodes, SummarizeSkills
    from transforms.run_summary import finish_run
    from transforms.write import WriteParquetShards
    from vlnkit.probes.schemas import PROBE_SCORES as SCORES
    from vlnkit.probes.summary import score_probes_summary

    episodes = (
        pipeline
        | "ProbeFiles" >> beam.Create(probe_files)
        | "ReadProbes" >> beam.io.ReadAllFromParquet(columns=EPISODE_COLUMNS)
    )
    agent = pipeline | "ReadAgentOutputs" >> ReadAgentOutputs(output_files)
    scored = (episodes, agent["outputs"]) | "Score" >> ScoreProbeEpisodes()
    scored["scored"] | "WriteScores" >> WriteParquetShards(out.join("scores"), SCORES, opts.num_shards)
    dead = (agent[DEAD_LETTER], scored[DEAD_LETTER])
    skills = scored["scored"] | "Skills" >> SummarizeSkills(bootstrap)
    missing = scored[MISSING] | "MissingList" >> beam.combiners.ToList()
    tallies = (
        episodes | "TallyEpisodes" >> beam.Map(lambda _: {"episodes": 1}),
        scored["scored"] | "TallyScored" >> beam.Map(lambda r: {"scored": 1, "renormalized": int(r["renormalized"])}),
    )
    static = {
        "job": JOB.name,
        "agent": agent_name,
        "seed": bootstrap.seed,
        "bootstrap": bootstrap.replicates,
        "level": LEVEL,
        "options": redact(fingerprinted_settings(opts)),
    }
    missing_path = out.join(MISSING_FILE)

    def summarize(totals, skills, missing):
        missing = sorted(missing)
        with fileio.open_write(missing_path) as f:
            f.write("".join(m + "\n" for m in missing).encode())
        return score_probes_summary(static, totals, skills, missing, missing_path)

    side = {"skills": beam.pvalue.AsSingleton(skills), "missing": beam.pvalue.AsSingleton(missing)}
    _ = finish_run(out.folder, summarize, dead, tallies, side)


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table
    from transforms.deadletter import DEAD_LETTER_FILE

    output_dir = ctx.output_dir
    title = f"{'skill':<22}{'score':>8}{'95% CI':>18}{'shift':>9}{'shift 95% CI':>20}{'episodes':>10}"
    lines = ["Probe scores", title, "-" * len(title)]
    for skill in sorted(summary["skills"], key=skill_sort_key):
        s = summary["skills"][skill]
        ci = "n/a" if s["ci"] is None else f"[{format_float(s['ci'][0])}, {format_float(s['ci'][1])}]"
        sci = (
            "n/a" if s["shift_ci"] is None else f"[{format_float(s['shift_ci'][0])}, {format_float(s['shift_ci'][1])}]"
        )
        lines.append(
            f"{skill:<22}{format_float(s['score']):>8}{ci:>18}{format_float(s['shift']):>9}{sci:>20}{s['episodes']:>10}"
        )
    print("\n".join(lines))
    rows = [
        ("episodes in probe files", summary["episodes"]),
        ("episodes scored", summary["scored"]),
        ("episodes without agent output", summary["missing"]),
        ("outputs renormalized (sum != 1)", summary["renormalized"]),
        ("dead-lettered outputs", summary["dead_letters"]),
    ]
    print(format_table(rows, "Coverage"))
    if summary["missing"]:
        print(f"Episodes without agent output are listed in {summary['missing_file']} (not scored, not guessed)")
    if summary["dead_letters"]:
        print(f"Some agent outputs could not be used: see {output_dir}/{DEAD_LETTER_FILE}")


def outcome(summary: dict) -> Outcome:
    """Agent outputs are what this job reads: enough of them must be usable."""
    from vlnkit.runs.verdict import Outcome

    return Outcome(int(summary.get("scored", 0)), int(summary.get("dead_letters", 0)))


def one_agent(ctx: Run, opts) -> tuple[str, list[str]]:
    """The agent of this run and its files, from --predictions (as every job reads it) or the old
    --agent_outputs (all its files one agent, named `agent`)."""
    from pipelines.input_checks import refuse_continuous

    values = list(opts.predictions or [])
    if opts.agent_outputs:
        values.append(f"agent={opts.agent_outputs}")
    if not values:
        raise JobError("--predictions is required")
    agents = ctx.agents(values, refuse=refuse_continuous(JOB.name))
    if len(agents) > 1:
        raise JobError(
            f"--predictions names {len(agents)} agents ({', '.join(agents)}); score_probes scores one agent per "
            "run: run it once per agent, or make several files one agent with NAME=FILES"
        )
    ((agent, files),) = agents.items()
    return agent, files


def run(ctx: Run) -> dict:
    from vlnkit.comparison.config import BootstrapConfig

    opts = ctx.args
    with user_error():
        bootstrap = BootstrapConfig.from_flags(opts)
    if not bootstrap.enabled:
        raise JobError("--bootstrap must be above 0 here: the skills' intervals are this job's output")
    probe_files = ctx.inputs("probes", opts.probes)
    with user_error():
        for path in probe_files:
            validate_probe_file(path, "--probes")
    agent, output_files = one_agent(ctx, opts)
    return ctx.execute(
        lambda p, out: build(p, out, probe_files, output_files, opts, bootstrap, agent),
        ["scores"],
        extra_outputs=(fileio.join(ctx.output_dir, MISSING_FILE),),
        outcome=outcome,
        declared=lambda summary: {"scores": summary["scored"], MISSING_FILE: summary["missing"]},
    )


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
