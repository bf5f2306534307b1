"""How far our scores of RxR follower paths are from the metrics RxR released with them: a report, never a check.

RxR's follower lines carry `metrics` {ne, sr, spl, dtw, ndtw, sdtw} computed by RxR's own code, whose
distances may come from another graph revision (the README's sample differs by about 0.03 m of DTW,
see `../shared/data/rxr_sample/SOURCE.md`). Scoring the follower paths as an agent ("human") and
comparing episode by episode says how much: per metric, the count of episodes where both are
finite, the mean absolute difference (from an exact sum, so every runner gives the same bits) and
the largest. Partial results of table batches merge (`merge_differences`) in any order.

>>> theirs = follower_table([{"instruction_id": 26, "metrics": {"ne": 0.0, "dtw": 1.546}}])
>>> ours = {"instr_id": ["26", "27"], "ne": [0.0, 1.0], "dtw": [1.576, 0.0]}
>>> report = finish_differences(differences(ours, theirs))
>>> report["metrics"]["dtw"]["count"], round(report["metrics"]["dtw"]["max_abs_difference"], 3)
(1, 0.03)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vlnkit.datasets.records import RXR_FOLLOWER
from vlnkit.io.exactsum import exact_mean, exact_sum

FOLLOWER_METRICS = ("ne", "sr", "spl", "dtw", "ndtw", "sdtw")  # what RxR follower lines carry
COMPARE = "compare"  # the dead-letter stage of a follower line whose released metrics cannot be compared
METRICS_REFUSED = RXR_FOLLOWER.refused["metrics"](None)  # RxRFollowerLine's one wording of a bad `metrics`
COMPARED_LINES = "lines"  # in a partial comparison: how many scored rows had a follower line to compare with
COMPARISON_FILE = "human_metrics_comparison.json"
NOTE = (
    "Our scores of each follower path against the metrics RxR released with it (mean and max absolute "
    "difference over the episodes where both are finite). RxR computed its distances on another graph revision "
    "or position basis, so small differences are expected: a report, not a check."
)


def follower_agents(agents: dict[str, list[str]]) -> dict[str, list[str]]:
    """The agents whose every prediction file is an RxR follower file (by content: lines with
    `instruction_id` and `metrics`), e.g. `--predictions=human=rxr_val_unseen_follower.jsonl.gz`."""
    from vlnkit.datasets.formats import RXR_FOLLOWER_FORMAT, file_format

    found = {}
    for agent, files in agents.items():
        try:
            if files and all(file_format(p) == RXR_FOLLOWER_FORMAT for p in files):
                found[agent] = list(files)
        except (OSError, EOFError):  # unreadable: the read step reports it
            continue
    return found


def read_followers(files) -> tuple[list[dict], int, list]:
    """(the valid follower lines of `files`, how many lines there are, the RecordErrors of the lines refused
    for their `metrics` alone). Such a line is still a valid prediction (its path is read and scored as any
    other): only its released metrics cannot be compared, and it is a dead letter of stage `COMPARE` naming
    `metrics`. A line refused for another field is refused as a prediction too, by the prediction reader."""
    from vlnkit.datasets.rxr import parse_followers
    from vlnkit.io import fileio
    from vlnkit.io.dead_letters import RecordError

    kept, lines, refused = [], 0, []
    for path in files:
        for f in parse_followers(fileio.read_bytes(path), path):
            lines += f.record != "" if isinstance(f, RecordError) else 1
            if not isinstance(f, RecordError):
                kept.append(f)
            elif f.reason == METRICS_REFUSED:
                refused.append(RecordError(f.source, f.record, f.reason, COMPARE))
    return kept, lines, refused


def load_follower_metrics(files) -> pa.Table:
    """The released metrics of every valid follower line of `files` (`follower_table` of `read_followers`)."""
    return follower_table(read_followers(files)[0])


def check_follower_metrics(files) -> tuple[int, list]:
    """(how many follower lines `files` hold, the dead letters of those whose `metrics` cannot be compared)."""
    _, lines, refused = read_followers(files)
    return lines, refused


def follower_table(followers: list[dict]) -> pa.Table:
    """Follower records (`vlnkit.datasets.rxr.parse_followers`) -> a table of instr_id and the released metrics
    (null where a line does not carry one)."""
    columns = {"instr_id": pa.array([str(f["instruction_id"]) for f in followers], pa.string())}
    for m in FOLLOWER_METRICS:
        columns[m] = pa.array([(f.get("metrics") or {}).get(m) for f in followers], pa.float64())
    return pa.table(columns)


def differences(ours, theirs: pa.Table) -> dict:
    """Partial comparison of scored rows `ours` (a table or dict of columns with `instr_id` and metrics)
    with `theirs` (`follower_table`): {metric: {"count", "sum", "max"}} over the rows whose instr_id it holds."""
    ours = ours if isinstance(ours, pa.Table) else pa.table(ours)
    at = pc.index_in(ours.column("instr_id"), value_set=theirs.column("instr_id"))
    found = np.asarray(pc.is_valid(at).to_numpy(zero_copy_only=False), dtype=bool)
    rows = np.asarray(at.to_numpy(zero_copy_only=False), dtype=np.float64)[found].astype(np.int64)
    out = {COMPARED_LINES: int(found.sum())}
    for m in FOLLOWER_METRICS:
        if m not in ours.column_names:
            continue
        mine = np.asarray(ours.column(m).to_numpy(zero_copy_only=False), dtype=np.float64)[found]
        theirs_m = np.asarray(theirs.column(m).take(pa.array(rows)).to_numpy(zero_copy_only=False), np.float64)
        diff = np.abs(mine - theirs_m)
        diff = diff[np.isfinite(diff)]
        out[m] = {"count": len(diff), "sum": exact_sum(diff), "max": float(diff.max()) if len(diff) else 0.0}
    return out


def merge_by_agent(acc: dict, other: dict) -> dict:
    """{agent: partial comparison} dicts merged agent by agent (a `MergeWith` merge)."""
    for agent, part in other.items():
        acc[agent] = merge_differences([acc.get(agent, {}), part])
    return acc


def merge_differences(parts) -> dict:
    """Partial comparisons merged (counts and exact sums added, maxima taken)."""
    out: dict = {}
    for part in parts:
        for m, d in part.items():
            if m == COMPARED_LINES:
                out[m] = out.get(m, 0) + d
                continue
            o = out.setdefault(m, {"count": 0, "sum": 0, "max": 0.0})
            o["count"] += d["count"]
            o["sum"] += d["sum"]
            o["max"] = max(o["max"], d["max"])
    return out


def finish_differences(merged: dict, lines: int = 0, dead_lettered: int = 0) -> dict:
    """The report of merged partial comparisons: per metric count, mean and max absolute difference, and
    what became of every follower line: `lines` = `compared` (scored, its metrics compared) +
    `dead_lettered` (its `metrics` refused: a dead letter of stage `compare`; its path is scored) +
    `not_scored` (its path was not scored: see the dead letters and the episode lists). A metric's own
    count can be smaller than `compared`: a line without that metric, or with an unreachable distance.

    >>> r = finish_differences({"lines": 13, "ne": {"count": 13, "sum": 0, "max": 0.0}}, lines=18, dead_lettered=5)
    >>> r["lines"], r["compared"], r["dead_lettered"], r["not_scored"]
    (18, 13, 5, 0)
    """
    merged = dict(merged)
    compared = merged.pop(COMPARED_LINES, 0)
    return {
        "note": NOTE,
        "lines": lines,
        "compared": compared,
        "dead_lettered": dead_lettered,
        "not_scored": lines - compared - dead_lettered,
        "metrics": {
            m: {
                "count": d["count"],
                "mean_abs_difference": exact_mean(d["sum"], d["count"]),
                "max_abs_difference": d["max"] if d["count"] else None,
            }
            for m, d in sorted(merged.items())
        },
    }
