"""Wayfinding outcomes from the score job's episode rows, joined to the instructions their followers followed.

A user scores followers (an agent, or people) of generated instructions with `python -m pipelines.score`;
its `episodes-*.parquet` rows (`agent`, `instr_id`, one column per path metric) become outcomes of the
score_instructions job's agreement table (Kendall's tau-b of each text metric against each outcome), joined
on (system, instr_id):
- `SYSTEM=FILES`: every row of FILES is a follower of system SYSTEM's instructions (the rows of one agent);
- `FILES`: each row's `agent` names the system whose instruction it followed.
An episode metric `m` is the outcome `episode_m` (`sr` -> `episode_sr`), never the name of an outcome a
file carries itself (zhao2023's `human_scores`: `score`, `ndtw`, ...): the two are measured apart.

Files are read in Arrow record batches, only the columns needed; the join is Arrow's hash join, not a
loop per row. Every row that does not join is a dead letter with its reason (`Unjoined`): an episode row
whose system is not scored in the run, or whose instruction is not among the scored ones, two rows for
one instruction, and an instruction of a system with episode rows that has none.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from vlnkit.io import fileio

PREFIX = "episode_"
DEFAULT_METRICS = ("sr", "spl", "ndtw", "sdtw", "ne")
KEYS = ("system", "instr_id")
BATCH_ROWS = 65536


class OutcomeFileError(ValueError):
    """A file of --outcomes that is not the score job's episode rows (or holds several agents for one
    named system): the message names the file and why."""


def outcome_name(metric: str) -> str:
    """The agreement table's name of an episode metric: `episode_<metric>`.

    >>> outcome_name("ndtw")
    'episode_ndtw'
    """
    return PREFIX + metric


def episode_batches(
    path: str, system: str | None, metrics: tuple[str, ...], rows: int = BATCH_ROWS
) -> Iterator[pa.Table]:
    """One score-job Parquet file as tables of at most `rows` rows: `system`, `agent`, `instr_id`, `source`
    and `episode_<m>` (float64, NaN where the row's metric is null) for each of `metrics`.

    `system` None: each row's `agent` names its system. A named system takes the rows of one agent only.
    Raises OutcomeFileError for a file that is not Parquet, lacks a column, or mixes agents under a name."""
    try:
        with fileio.open_read(path) as f:
            parquet = pq.ParquetFile(f)
            names = parquet.schema_arrow.names
            missing = [c for c in ("agent", "instr_id", *metrics) if c not in names]
            if missing:
                raise OutcomeFileError(
                    f"{path}: not the score job's episode rows (no column {', '.join(missing)}; has {', '.join(names[:12])})"
                )
            agents: set[str] = set()
            for batch in parquet.iter_batches(rows, columns=["agent", "instr_id", *metrics]):
                agent = batch.column("agent").cast(pa.string())
                if system is not None:
                    agents.update(pc.unique(agent).to_pylist())
                    if len(agents) > 1:
                        raise OutcomeFileError(
                            f"{path}: rows of agents {', '.join(sorted(map(str, agents)))} given as system {system!r}; "
                            "SYSTEM=FILES takes one agent's rows (give the files without a name: each row's agent "
                            "then names its system)"
                        )
                n = batch.num_rows
                columns = {
                    "system": agent if system is None else pa.array([system] * n, pa.string()),
                    "agent": agent,
                    "instr_id": batch.column("instr_id").cast(pa.string()),
                    "source": pa.array([path] * n, pa.string()),
                }
                for m in metrics:
                    columns[outcome_name(m)] = pc.fill_null(batch.column(m).cast(pa.float64()), np.nan)
                yield pa.table(columns)
    except OutcomeFileError:
        raise
    except (OSError, pa.ArrowException) as exc:
        raise OutcomeFileError(f"{path}: cannot read as Parquet ({exc})") from None


@dataclass(frozen=True)
class Unjoined:
    """A row that joined nothing: `source` (file, or `--outcomes`), `record` (`system/instr_id`), `reason`."""

    source: str
    record: str
    reason: str
    kind: str  # which rule: UNSCORED_SYSTEM, NO_INSTRUCTION, REPEATED, NO_EPISODE (the summary's counts)


UNSCORED_SYSTEM, NO_INSTRUCTION, REPEATED, NO_EPISODE = (
    "episode rows of systems not scored",
    "episode rows naming no scored instruction",
    "episode rows repeating an instruction",
    "instructions without an episode row",
)


def _keys(table: pa.Table) -> pa.Array:
    """One string per row: `system/instr_id` (the join key, and how a dead letter names its record)."""
    return pc.binary_join_element_wise(table["system"], table["instr_id"], "/")


def _unjoined(table: pa.Table, mask, kind: str, reason_of) -> list[Unjoined]:
    """The rows of `table` where `mask` holds, as dead letters (few by nature)."""
    rows = table.filter(mask).select(["system", "instr_id", "source"]).to_pylist()
    return [Unjoined(r["source"], f"{r['system']}/{r['instr_id']}", reason_of(r), kind) for r in rows]


def join_outcomes(scored: pa.Table, episodes: pa.Table) -> tuple[pa.Table, list[Unjoined]]:
    """(the scored instructions with their episode outcomes, the rows that did not join).

    `scored`: one row per scored instruction (`system`, `instr_id`, `path_id`, the metrics); `episodes`:
    `episode_batches` tables concatenated. The result keeps the scored rows of every instruction that has
    exactly one episode row, with its `episode_*` columns. Not joined, each a dead letter:
    - an episode row whose system is not scored in this run;
    - an episode row whose instruction the system's file does not have, or that was dead-lettered;
    - every row of an instruction given two or more episode rows (which one is the outcome is unknown);
    - an instruction of a system with episode rows that has none (it stays in the run's rows and
      corpus scores, and is left out of the agreement table).
    One full outer hash join on (system, instr_id) finds them all; the rest is `take` by row number.
    """
    lost: list[Unjoined] = []
    systems = pa.array(sorted(set(pc.unique(scored["system"]).to_pylist())), pa.string())
    known = pc.is_in(episodes["system"], value_set=systems)
    lost += _unjoined(
        episodes,
        pc.invert(known),
        UNSCORED_SYSTEM,
        lambda r: (
            f"episode row of system {r['system']!r}, which this run does not score (--predictions names "
            f"{', '.join(systems.to_pylist())})"
        ),
    )
    episodes = episodes.filter(known)
    left = scored.select(list(KEYS)).append_column("_scored", pa.array(np.arange(scored.num_rows)))
    right = episodes.select(list(KEYS)).append_column("_episode", pa.array(np.arange(episodes.num_rows)))
    both = left.join(right, keys=list(KEYS), join_type="full outer", use_threads=False)
    no_instruction = both.filter(pc.is_null(both["_scored"]))["_episode"]
    lost += _unjoined(
        episodes.take(no_instruction),
        pa.array(np.ones(len(no_instruction), bool)),
        NO_INSTRUCTION,
        lambda r: (
            f"system {r['system']!r} has no scored instruction with instr_id {r['instr_id']!r} (not in its "
            "file, or dead-lettered)"
        ),
    )
    matched = both.filter(pc.and_(pc.is_valid(both["_scored"]), pc.is_valid(both["_episode"])))
    counts = pc.value_counts(matched["_scored"])
    repeated = counts.field("values").filter(pc.greater(counts.field("counts"), 1))
    twice = pc.is_in(matched["_scored"], value_set=repeated)
    lost += _unjoined(
        episodes.take(matched.filter(twice)["_episode"]),
        pa.array(np.ones(int(pc.sum(twice).as_py() or 0), bool)),
        REPEATED,
        lambda r: "two or more episode rows for this instruction of --outcomes: none is used",
    )
    good = matched.filter(pc.invert(twice))
    followed = pc.unique(episodes["system"])
    missing = both.filter(pc.is_null(both["_episode"]))["_scored"]
    missing = pa.concat_arrays([missing.combine_chunks(), repeated.cast(pa.int64())])
    without = scored.take(missing).select(list(KEYS))
    without = without.append_column("source", pa.array(["--outcomes"] * without.num_rows, pa.string()))
    lost += _unjoined(
        without,
        pc.is_in(without["system"], value_set=followed),
        NO_EPISODE,
        lambda r: "no episode row in --outcomes for this instruction: left out of the agreement table",
    )
    outcomes = episodes.take(good["_episode"]).select([c for c in episodes.column_names if c.startswith(PREFIX)])
    joined = scored.take(good["_scored"])
    for name in outcomes.column_names:
        joined = joined.append_column(name, outcomes[name])
    return joined, lost


def system_means(joined: pa.Table) -> dict[str, dict[str, float]]:
    """{system: {episode outcome: mean over its joined instructions}}, NaN (a null metric) left out: what
    the report draws each system's corpus scores against. Arrow's group-by, not a loop per row.

    >>> t = pa.table({"system": ["a", "a", "b"], "instr_id": ["1", "2", "1"], "episode_sr": [1.0, float("nan"), 0.0]})
    >>> system_means(t)
    {'a': {'episode_sr': 1.0}, 'b': {'episode_sr': 0.0}}
    """
    names = [c for c in joined.column_names if c.startswith(PREFIX)]
    columns = {"system": joined["system"]}
    for name in names:
        columns[name] = pc.if_else(pc.is_nan(joined[name]), pa.scalar(None, pa.float64()), joined[name])
    means = pa.table(columns).group_by("system").aggregate([(n, "mean") for n in names]).to_pylist()
    out = {}
    for row in sorted(means, key=lambda r: r["system"]):
        values = {n: row[f"{n}_mean"] for n in names if row[f"{n}_mean"] is not None}
        if values:
            out[row["system"]] = values
    return out
