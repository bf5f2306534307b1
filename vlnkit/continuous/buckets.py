"""Joining and scoring one bucket of continuous pieces: the score job's core for a VLN-CE dataset.

`score_bucket(pieces, agents, dataset_files, config, options)` takes a bucket's `Piece`s
(`vlnkit.continuous.pieces`: the episodes whose id hashes to it and every agent's rows of them) and
returns a `ContinuousBucket`: the episode rows (`CONTINUOUS_EPISODE_SCORES`), the summable totals,
the two episode lists, the dead letters, each row's reference path length (the length breakdown)
and, per agent that gave both positions and results, how far the results' metrics are from ours.

The rules, each written here once, with the one wording of each dead letter:

0. an episode id in several dataset rows: the first (file rank, then row) is kept, the others are
   "dedupe" dead letters naming the one kept;
1. an agent's row for an episode the dataset does not have is a "match" dead letter ("no episode N
   in <dataset>", or, when its dataset record was refused at reading, that it was, or when a dataset
   file was refused whole, that file);
2. several rows of one agent for one episode in files of one kind (positions, or results): the first
   (file rank, then row) is kept, the others are "match" dead letters naming the one kept;
3. an episode with neither positions nor results of an agent is without a usable row, and missing unless
   the agent gave a row for it that was refused at reading (a prediction was given);
4. the scored row: from positions, the metrics of `score_paths` (one compiled call for every agent's
   pairs of the bucket); from results, the simulator's metrics; from both, the results' value wherever
   they give one (the file is the simulator's measurement, under its codebase's conventions) and ours
   for the rest, with SDTW from the file's success and our nDTW when the file has none; where both give
   a metric, |file - ours| goes into `differences` (count, exact sum, max per agent and metric).

Sums are exact integers (`vlnkit.io.exactsum`) under `agent_key` / `language_key`, so buckets add up
to the same summary in any order on any runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from vlnkit.continuous.pieces import EPISODES, MATCH, POSITIONS, REFUSED, RESULTS, UNREADABLE, Piece
from vlnkit.continuous.points import PointPaths
from vlnkit.continuous.schemas import CE_METRICS, CONTINUOUS_EPISODE_SCORES, POINT_LIST
from vlnkit.continuous.scoring import DTW_MODES, FASTDTW_RULES, GOAL_DISTANCES, REFERENCES, score_paths
from vlnkit.datasets.first_wins import first_of_each
from vlnkit.evaluation.batch import add_group_sums
from vlnkit.evaluation.bucket_scores import BucketScores
from vlnkit.evaluation.score_summary import agent_key, language_key
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.io.dead_letters import RecordError
from vlnkit.io.exactsum import exact_sum

# Metrics both inputs can give: where an agent gives both, the file's value is kept and the difference reported.
COMPARED = ("ndtw", "sdtw", "pl", "steps")
SOURCE_COUNTS = {"positions": "rows_from_positions", "results": "rows_from_results",
                 "positions+results": "rows_from_both"}  # fmt: skip


@dataclass(frozen=True)
class ContinuousOptions:
    """How continuous positions are scored (the score job's --dtw, --fastdtw_rules, --ce_reference,
    --goal_distance and --ce_gt), recorded in every summary.

    >>> ContinuousOptions().to_dict()
    {'dtw': 'exact', 'fastdtw_rules': 'compiled', 'ce_reference': 'gt', 'goal_distance': None, 'ce_gt': 'auto'}
    """

    dtw: str = "exact"
    fastdtw_rules: str = "compiled"
    reference: str = "gt"
    goal_distance: str | None = None
    gt: str | None = "auto"

    def __post_init__(self) -> None:
        for flag, value, allowed in (
            ("--dtw", self.dtw, DTW_MODES),
            ("--fastdtw_rules", self.fastdtw_rules, tuple(FASTDTW_RULES)),
            ("--ce_reference", self.reference, REFERENCES),
            ("--goal_distance", self.goal_distance, GOAL_DISTANCES),
        ):
            if value not in allowed:
                raise ValueError(f"{flag} must be one of {', '.join(str(a) for a in allowed)}, got {value!r}")

    def to_dict(self) -> dict:
        return {
            "dtw": self.dtw,
            "fastdtw_rules": self.fastdtw_rules,
            "ce_reference": self.reference,
            "goal_distance": self.goal_distance,
            "ce_gt": self.gt,
        }


@dataclass
class ContinuousBucket(BucketScores):
    """`BucketScores` (rows in `CONTINUOUS_EPISODE_SCORES`) and, per agent that gave both positions and
    results, how far the results' metrics are from ours."""

    differences: dict = field(default_factory=dict)  # {agent: {metric: {"count", "sum", "max"}}}


def _concat(pieces: list[Piece], kind: str, agent: str = "") -> pa.Table | None:
    """The rows of every piece of `kind` (and agent), with a `rank` column; None when there are none."""
    tables = [
        p.table.append_column("rank", pa.array(np.full(len(p), p.rank, np.int64)))
        for p in pieces
        if p.kind == kind and p.agent == agent
    ]
    return pa.concat_tables(tables, promote_options="default") if tables else None


def _ints(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy().astype(np.int64, copy=False)


def _episodes(pieces: list[Piece], dataset_files: list[str]) -> tuple[pa.Table | None, list[RecordError]]:
    """Rule 0: the bucket's episodes, one row per id, sorted by id."""
    table = _concat(pieces, EPISODES)
    if table is None:
        return None, []
    ids, rank, index = _ints(table, "episode_id"), _ints(table, "rank"), _ints(table, "index")
    order, _, kept = first_of_each(ids, rank, index)
    dead = []
    for pos in np.flatnonzero(order != kept).tolist():
        dup, keep = int(order[pos]), int(kept[pos])
        dead.append(
            RecordError(
                dataset_files[int(rank[dup])],
                f"episode_id={int(ids[dup])}",
                f"duplicate episode_id {int(ids[dup])} (kept {dataset_files[int(rank[keep])]} #{int(index[keep])})",
                "dedupe",
            )
        )
    return table.take(pa.array(order[order == kept])), dead


def _match(
    table, kind, episode_ids, files, dataset, refused, unreadable=()
) -> tuple[np.ndarray, np.ndarray, list[RecordError]]:
    """Rules 1 and 2 for one agent's rows of one kind: (kept rows, their episode rows, dead letters)."""
    ids, rank, index = _ints(table, "episode_id"), _ints(table, "rank"), _ints(table, "index")
    at = np.minimum(np.searchsorted(episode_ids, ids), max(len(episode_ids) - 1, 0))
    found = (episode_ids[at] == ids) if len(episode_ids) else np.zeros(len(ids), bool)
    dead = []
    for row in np.flatnonzero(~found).tolist():
        eid = int(ids[row])
        where = refused.get(eid)
        if where:
            why = f"episode {eid} has no usable episode: its dataset record was refused ({where}; see that dead letter)"
        elif unreadable:
            why = (
                f"no episode {eid} in the dataset files that could be read: {', '.join(unreadable)} was refused "
                "whole (see its dead letter)"
            )
        else:
            why = f"no episode {eid} in {dataset}"
        dead.append(RecordError(files[int(rank[row])], f"episode_id={eid}", why, MATCH))
    rows = np.flatnonzero(found)
    order, _, kept = first_of_each(ids[rows], rank[rows], index[rows])
    for pos in np.flatnonzero(order != kept).tolist():
        dup, keep = int(rows[order[pos]]), int(rows[kept[pos]])
        eid = int(ids[dup])
        why = f"duplicate {kind} for episode {eid} (kept {files[int(rank[keep])]} episode_id={eid})"
        dead.append(RecordError(files[int(rank[dup])], f"episode_id={eid}", why, MATCH))
    keep = rows[order[order == kept]]
    return keep, at[keep], dead


def _scored_positions(episodes, agents_rows, config: ScoringConfig, options: ContinuousOptions):
    """Rule 4, positions: every agent's pairs of the bucket in one `score_paths` call.

    `agents_rows` is [(positions table, kept rows, episode rows, file sr per pair or NaN)], in agent order.
    Returns (scores per pair, the scored positions, positions given per pair)."""
    reference_all = PointPaths.from_arrow(episodes.column("reference"))
    ep_rows = np.concatenate([r[2] for r in agents_rows])
    query = PointPaths.from_arrow(
        pa.chunked_array([t.column("positions").take(pa.array(rows)) for t, rows, _, _ in agents_rows], POINT_LIST)
    )
    sr = np.concatenate([r[3] for r in agents_rows])
    known = np.isfinite(sr)
    extra = {}
    if options.goal_distance == "euclidean":
        goal = np.asarray(episodes.column("goal").combine_chunks().flatten(), np.float64).reshape(-1, 3)
        stopped = pa.chunked_array([t.column("stopped").take(pa.array(rows)) for t, rows, _, _ in agents_rows])
        extra = {
            "goal_distance": "euclidean",
            "goal": goal[ep_rows],
            "shortest": episodes.column("geodesic_distance").to_numpy()[ep_rows],
            "stopped": stopped.fill_null(True).to_numpy(zero_copy_only=False).astype(bool),
        }
    scores = score_paths(
        reference_all.take(ep_rows),
        query,
        dtw=options.dtw,
        fastdtw_rules=options.fastdtw_rules,
        threshold=config.success_distance,
        keep_repeats=config.keep_repeats,
        success=np.where(known, sr, 0.0) if known.any() else None,
        success_rule=config.success_rule,
        **extra,
    )
    if "sdtw" in scores:
        scores["sdtw"] = np.where(known, scores["sdtw"], np.nan)
    scored = query if config.keep_repeats else query.collapse_repeats()
    return scores, scored, query.lengths()


def _differences(file_values: dict, ours: dict, rows: np.ndarray) -> dict:
    """{metric: {"count", "sum", "max"}} of |file - ours| over `rows` where both are finite."""
    out = {}
    for m in COMPARED:
        if m in file_values and m in ours:
            diff = np.abs(file_values[m][rows] - ours[m][rows])
            diff = diff[np.isfinite(diff)]
            if len(diff):
                out[m] = {"count": len(diff), "sum": exact_sum(diff), "max": float(diff.max())}
    return out


def score_bucket(
    pieces: list[Piece],
    agents: dict[str, list[str]],
    dataset_files: list[str],
    config: ScoringConfig,
    options: ContinuousOptions,
    label_agents: bool = False,
) -> ContinuousBucket:
    """Join and score a bucket (see the module docstring). `agents` maps each agent to its files in rank
    order (for dead letters); `label_agents`: prefix episode lines with the agent."""
    episodes, dead = _episodes(pieces, dataset_files)
    refused: dict[int, str] = {}
    found_refused = _concat(pieces, REFUSED)
    if found_refused is not None:
        for eid, where in zip(_ints(found_refused, "episode_id").tolist(), found_refused.column("where").to_pylist()):
            refused.setdefault(eid, where)
    unreadable = sorted({w for p in pieces if p.kind == UNREADABLE for w in p.table.column("where").to_pylist()})
    n = episodes.num_rows if episodes is not None else 0
    episode_ids = _ints(episodes, "episode_id") if n else np.zeros(0, np.int64)
    instr = episodes.column("instr_id").to_numpy(zero_copy_only=False) if n else np.zeros(0, object)
    reference = episodes.column("reference") if n else None
    single = int((np.diff(reference.combine_chunks().offsets.to_numpy()) == 1).sum()) if n else 0
    totals = {"reference_episodes": n, "single_viewpoint_episodes": single}
    dataset = ",".join(dataset_files)

    # Rules 1-3, agent by agent: which episodes each agent gives positions or results for.
    per_agent = {}
    missing, unusable = [], []
    for agent, files in agents.items():
        mine = {"dead": []}
        for kind in (POSITIONS, RESULTS):
            table = _concat(pieces, kind, agent)
            if table is None:
                continue
            rows, ep_rows, bad = _match(table, kind, episode_ids, files, dataset, refused, unreadable)
            mine[kind] = (table, rows, ep_rows)
            mine["dead"] += bad
        has = np.zeros(n, bool)
        for kind in (POSITIONS, RESULTS):
            if kind in mine:
                has[mine[kind][2]] = True
        given = _concat(pieces, REFUSED, agent)  # rows the agent gave, refused at reading: not missing
        tried = np.isin(episode_ids, _ints(given, "episode_id")) if given is not None else np.zeros(n, bool)
        prefix = f"{agent}\t" if label_agents else ""
        lines = [f"{prefix}{i}" for i in instr[~has & ~tried].tolist()]
        without = [f"{prefix}{i}" for i in instr[~has].tolist()]
        missing += lines
        unusable += without
        dead += mine["dead"]
        for name, value in (
            ("dead_letters", len(mine["dead"])),
            ("missing_predictions", len(lines)),
            ("without_usable_prediction", len(without)),
        ):
            totals[agent_key(agent, name)] = totals.get(agent_key(agent, name), 0) + value
        per_agent[agent] = mine
    agents_scored = [a for a, m in per_agent.items() if (POSITIONS in m and len(m[POSITIONS][1])) or
                     (RESULTS in m and len(m[RESULTS][1]))]  # fmt: skip
    if not agents_scored:
        return ContinuousBucket(None, totals, missing, unusable, dead)

    # The file's values per episode row of each agent (NaN where its results do not give one).
    file_values: dict[str, dict[str, np.ndarray]] = {}
    for agent in agents_scored:
        values = {}
        if RESULTS in per_agent[agent]:
            table, rows, ep_rows = per_agent[agent][RESULTS]
            for name in table.column_names:
                if name in CE_METRICS:
                    column = np.full(n, np.nan)
                    column[ep_rows] = table.column(name).to_numpy()[rows]
                    values[name] = column
        file_values[agent] = values

    # Rule 4, positions: one call for every agent's pairs.
    with_positions = [a for a in agents_scored if POSITIONS in per_agent[a] and len(per_agent[a][POSITIONS][1])]
    ours: dict[str, dict[str, np.ndarray]] = {a: {} for a in agents_scored}
    scored_paths: dict[str, tuple[PointPaths, np.ndarray, np.ndarray]] = {}
    if with_positions:
        batches = []
        for agent in with_positions:
            table, rows, ep_rows = per_agent[agent][POSITIONS]
            sr = file_values[agent].get("sr", np.full(n, np.nan))[ep_rows]
            batches.append((table, rows, ep_rows, sr))
        scores, scored, given = _scored_positions(episodes, batches, config, options)
        start = 0
        for agent, (_, rows, ep_rows, _) in zip(with_positions, batches):
            stop = start + len(rows)
            for name, values in scores.items():
                if name in CE_METRICS:
                    column = np.full(n, np.nan)
                    column[ep_rows] = values[start:stop]
                    ours[agent][name] = column
            kept = np.arange(start, stop)
            scored_paths[agent] = (scored.take(kept), ep_rows, given[start:stop])
            start = stop

    # The rows, agent by agent (episodes in id order): the file's value where it gives one, else ours.
    tables, lengths, who, rows_ep, all_values, differences = [], [], [], [], [], {}
    ref_length = episodes.column("reference_length").to_numpy()
    for a, agent in enumerate(agents_scored):
        mine = per_agent[agent]
        pos_rows = mine[POSITIONS][2] if POSITIONS in mine else np.zeros(0, np.int64)
        res_rows = mine[RESULTS][2] if RESULTS in mine else np.zeros(0, np.int64)
        rows = np.union1d(pos_rows, res_rows)
        has_pos, has_res = np.isin(rows, pos_rows), np.isin(rows, res_rows)
        values = {}
        for m in CE_METRICS:
            column = ours[agent].get(m, np.full(n, np.nan))[rows]
            theirs = file_values[agent].get(m)
            if theirs is not None:
                column = np.where(np.isfinite(theirs[rows]), theirs[rows], column)
            values[m] = column
        both = rows[has_pos & has_res]
        if len(both) and ours[agent]:
            found = _differences(file_values[agent], ours[agent], both)
            if found:
                differences[agent] = found
        sources = np.where(has_pos & has_res, "positions+results", np.where(has_pos, "positions", "results"))
        positions = pa.nulls(len(rows), POINT_LIST)
        if agent in scored_paths:
            paths, p_rows, given = scored_paths[agent]  # p_rows ascending (episodes are sorted by id)
            # Only the rows with positions are gathered; the others are null lists of length 0 (pyarrow
            # before 17 cannot write a null list that spans values).
            taken = np.minimum(np.searchsorted(p_rows, rows), len(p_rows) - 1)[has_pos]
            gathered = paths.take(taken).to_arrow()
            spans = np.zeros(len(rows), np.int64)
            spans[has_pos] = np.diff(gathered.offsets.to_numpy())
            offsets = pa.array(np.concatenate([[0], np.cumsum(spans)]), gathered.offsets.type)
            positions = type(gathered).from_arrays(offsets, gathered.values, mask=pa.array(~has_pos))
            collapsed = int(given.sum() - paths.lengths().sum())
            key = agent_key(agent, "repeats_collapsed")
            totals[key] = totals.get(key, 0) + collapsed
        for source, name in SOURCE_COUNTS.items():
            count = int((sources == source).sum())
            totals[agent_key(agent, name)] = totals.get(agent_key(agent, name), 0) + count
        tables.append(
            pa.table(
                {
                    "agent": pa.array([agent] * len(rows), pa.string()),
                    "episode_id": episodes.column("episode_id").take(pa.array(rows)),
                    "trajectory_id": episodes.column("trajectory_id").take(pa.array(rows)),
                    "instr_id": episodes.column("instr_id").take(pa.array(rows)),
                    "scan": episodes.column("scan").take(pa.array(rows)),
                    "language": episodes.column("language").take(pa.array(rows)),
                    **{m: pa.array(v, pa.float64(), mask=~np.isfinite(v)) for m, v in values.items()},
                    "sources": pa.array(sources.tolist(), pa.string()),
                    "positions": positions,
                },
                schema=CONTINUOUS_EPISODE_SCORES,
            )
        )
        all_values.append(values)
        lengths.append(ref_length[rows])
        who.append(np.full(len(rows), a))
        rows_ep.append(rows)
    table = pa.concat_tables(tables)
    who_all, ep_all = np.concatenate(who), np.concatenate(rows_ep)
    scores = {m: np.concatenate([v[m] for v in all_values]) for m in CE_METRICS}

    # Exact sums per agent, and per agent and language (RxR-Habitat).
    add_group_sums(totals, scores, who_all, [agent_key(a, "") for a in agents_scored])
    language = episodes.column("language").to_numpy(zero_copy_only=False)[ep_all]
    known = np.asarray([x is not None for x in language], bool)
    if known.any():
        names, codes = np.unique(language[known].astype(str), return_inverse=True)
        keys = [agent_key(a, language_key(lang, "")) for a in agents_scored for lang in names.tolist()]
        groups = who_all[known] * len(names) + codes
        add_group_sums(totals, {m: v[known] for m, v in scores.items()}, groups, keys)
    return ContinuousBucket(table, totals, missing, unusable, dead, np.concatenate(lengths), differences)
