"""What a score run writes and how it is judged, for the graph and the continuous (VLN-CE) wiring alike:
the two episode lists' file names, the episode tables and lists written from the score step's outputs,
the run's outcome (it counts only when it scored episodes) and what it declares it wrote (checked before
`_SUCCESS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vlnkit.io import fileio

if TYPE_CHECKING:
    from vlnkit.comparison.config import BootstrapConfig
    from vlnkit.runs.verdict import Outcome

JOB_NAME = "score"
MISSING_FILE = "missing_predictions-00000-of-00001.txt"
UNUSABLE_FILE = "without_usable_prediction-00000-of-00001.txt"


def write_episodes(scored, output_dir: str, schema, num_shards: int, bootstrap: BootstrapConfig) -> dict:
    """Write the scored episode tables and the two episode lists; the merged bootstrap sums as a side input
    of the summary (when the bootstrap is on). Shared by the graph and the continuous wiring."""
    import apache_beam as beam

    from transforms.score.outputs import MergeBootstrap, WriteEpisodeLists
    from transforms.score.score import BOOTSTRAP, LINES, MISSING, UNUSABLE
    from transforms.write import WriteTables

    scored["tables"] | "WriteEpisodes" >> WriteTables(fileio.join(output_dir, "episodes"), schema, num_shards)
    lists = {MISSING: fileio.join(output_dir, MISSING_FILE), UNUSABLE: fileio.join(output_dir, UNUSABLE_FILE)}
    scored[LINES] | "WriteEpisodeLists" >> WriteEpisodeLists(lists)
    side = {}
    if bootstrap.enabled:
        side["bootstrap_sums"] = beam.pvalue.AsSingleton(
            scored[BOOTSTRAP] | "Bootstrap" >> MergeBootstrap(), default_value={}
        )
    return side


def outcome(summary: dict) -> Outcome:
    """Scoring reads predictions: the run counts when it scored episodes and enough predictions could be
    used, and never when the references cannot be scored at all (e.g. the R2R test split, where success
    would be trivially 100%). A run that scored no episode fails whatever --max_failure_fraction says."""
    from vlnkit.runs.verdict import Outcome

    blocks = summary.get("agents", {}).values()
    read = sum(int(b.get("predictions_read", 0)) for b in blocks)
    scored = sum(int(b.get("count", 0)) for b in blocks)
    dead = int(summary.get("dead_letters", 0))
    reason = summary.get("unscorable") or (
        f"no episode was scored ({read} prediction(s) read, {dead} record(s) dead-lettered)"
        if read and not scored
        else None
    )
    return Outcome(read, dead, reason)


def declared_outputs(summary: dict, comparison: str | None) -> dict[str, int | None]:
    """What a score run wrote, from its tallies: one Parquet row per episode scored, one line per
    missing episode and per episode without a usable prediction, one leaderboard row per agent, and
    the comparison with the follower metrics RxR released when there is one."""
    from vlnkit.evaluation.leaderboard import LEADERBOARD_FILES

    blocks = list(summary.get("agents", {}).values())
    out = {
        "episodes": sum(int(b.get("count", 0)) for b in blocks),
        "missing_predictions": sum(int(b.get("missing_predictions", 0)) for b in blocks),
        "without_usable_prediction": sum(int(b.get("without_usable_prediction", 0)) for b in blocks),
        LEADERBOARD_FILES[0]: len(blocks),
        LEADERBOARD_FILES[1]: None,
    }
    if comparison:
        out[comparison] = None
    return out
