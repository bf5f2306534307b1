"""Scoring a joined bucket: every agent's pairs in one compiled call, into an Arrow table and exact totals.

`score_bucket(join, scans, config)` scores the pairs of a `vlnkit.scoring.join.BucketJoin` (all agents, all
scans, one `score_flat_pairs` call per thread) and returns a `BucketScores`: the episode rows (the
EPISODE_SCORES schema), the summable totals of the bucket (counts and exact metric sums per agent, and
per agent and language), the episode lines of the two lists the job writes, the dead letters, and each
row's reference path length (the bootstrap's length breakdown).

Totals are exact integers (`vlnkit.io.exactsum`), keyed by `agent_key` and `language_key`, so buckets add
up to the same summary in any order on any runner.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from vlnkit.datasets.columns import Paths, concat_extras
from vlnkit.evaluation import kernels
from vlnkit.evaluation.batch import add_group_sums
from vlnkit.evaluation.bucket_scores import BucketScores
from vlnkit.evaluation.common import ALL, METRICS
from vlnkit.evaluation.score_summary import agent_key, language_key
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.io.dead_letters import RecordError
from vlnkit.parallel import parts, run_in_parallel, thread_count
from vlnkit.scoring.join import BucketJoin
from vlnkit.scoring.scans import ScanTables
from vlnkit.scoring.task import R2R_TASK, Decision, RulePairs, Task

PAIR_WORK = 1 << 12  # about how many pairs cost one unit of `thread_count` work (a few us each)
NO_VALUE = np.iinfo(np.int64).min  # an integer column's null, in a rule's columns
RULE = "rule"  # the dead-letter stage of a pair a task's rule refuses


def metric_columns(scores: dict[str, np.ndarray], metrics=METRICS) -> dict[str, pa.Array]:
    """Metric arrays as Arrow columns; +inf (unreachable) and NaN (undefined) become null."""
    return {m: pa.array(scores[m], type=pa.float64(), mask=~np.isfinite(scores[m])) for m in metrics}


def _column(values, field: pa.Field) -> pa.Array:
    """A rule's extra column as the schema types it (a float NaN, or an integer NO_VALUE, is null)."""
    values = np.asarray(values)
    if pa.types.is_floating(field.type):
        return pa.array(values, field.type, mask=~np.isfinite(values))
    if pa.types.is_integer(field.type):
        return pa.array(values, field.type, mask=values == NO_VALUE)
    return pa.array(values, field.type)


def _lines(join: BucketJoin, agent: str, episodes: np.ndarray, label: bool) -> list[str]:
    ids = join.episode_ids(episodes).to_pylist() if len(episodes) else []
    return [f"{agent}\t{i}" for i in ids] if label else ids


@dataclass
class PairScores:
    """What the job keeps of each scored pair (arrays in pair order)."""

    scores: dict[str, np.ndarray]  # every metric of METRICS
    jumps: np.ndarray  # steps of the scored trajectory that are neither a repeat nor an edge
    query_lengths: np.ndarray  # length of the scored trajectory (repeats collapsed unless kept)
    reference_length: np.ndarray  # metres along the reference path
    query_nodes: np.ndarray  # the scored trajectories, each at its query's offsets (padded by what was cut)

    def scored_nodes(self, queries: Paths) -> np.ndarray:
        """The scored trajectories flat, one after the other (`query_lengths` each)."""
        given = queries.lengths
        keep = np.arange(len(self.query_nodes)) - np.repeat(queries.offsets[:-1], given)
        return self.query_nodes[keep < np.repeat(self.query_lengths, given)]


def score_pairs(
    scans: ScanTables,
    pair_slot: np.ndarray,
    references: Paths,
    queries: Paths,
    config: ScoringConfig,
    success: np.ndarray | None = None,
    oracle: np.ndarray | None = None,
):
    """Score pairs of many scans in one compiled call per thread: `PairScores`. Pair b is scored on the scan in
    slot `pair_slot[b]`; both paths are node indices of that scan. A pair's scores do not depend on the pairs
    it is scored with, bit for bit (each is `pair_scores` of `vlnkit.evaluation.kernels` on its own).
    `success` and `oracle` (0/1 per pair) replace the distance rule for SR and OSR and gate SPL, SED and
    SDTW (a task's own success rule, `vlnkit.scoring.task`).

        >>> import numpy as np
        >>> from vlnkit.navigation.graph import GraphStore, NavGraph
        >>> line = NavGraph("s", ("a", "b", "c"), np.arange(9.0).reshape(3, 3) * [1, 0, 0], np.array([[0, 1], [1, 2]]))
        >>> scans = ScanTables(GraphStore("", {"s": line}))
        >>> refs, queries = Paths(np.array([0, 3]), np.array([0, 1, 2])), Paths(np.array([0, 3]), np.array([0, 0, 2]))
        >>> got = score_pairs(scans, np.array([scans.slot("s")]), refs, queries, ScoringConfig())
        >>> got.query_lengths.tolist(), got.jumps.tolist(), got.scores["ne"].tolist(), got.reference_length.tolist()
        ([2], [1], [0.0], [6.0])
    """
    n = len(pair_slot)
    out = np.empty((len(ALL), n))
    jumps = np.empty(n, np.int64)
    q_len = np.empty(n, np.int64)
    q_out = np.empty(len(queries.values), np.int64)
    ref_length = np.empty(n)
    given_sr = np.zeros(0) if success is None else np.ascontiguousarray(success, np.float64)
    given_osr = np.zeros(0) if oracle is None else np.ascontiguousarray(oracle, np.float64)
    if len(given_sr) != (n if success is not None else 0) or len(given_osr) != (n if oracle is not None else 0):
        raise ValueError(f"success and oracle must hold one value per pair ({n})")
    if success is not None and oracle is None:
        given_osr = np.full(n, -1.0)
    if oracle is not None and success is None:
        given_sr = np.full(n, -1.0)
    args = (
        scans.distances, scans.starts, scans.sizes, scans.adjacent, np.asarray(pair_slot, np.int64),
        references.offsets, references.values.astype(np.int64, copy=False),
        queries.offsets, queries.values.astype(np.int64, copy=False),
        float(config.success_distance), bool(config.keep_repeats), config.spl_reference == "path",
        config.success_rule == "lt", True, True,  # every metric: the DTW grid and the edit distance
    )  # fmt: skip

    def run(first: int, stop: int) -> None:
        kernels.score_flat_pairs(*args, first, stop, out, jumps, q_len, q_out, ref_length, given_sr, given_osr)

    run_in_parallel(run, parts(n, thread_count(n * (1 << 24) // PAIR_WORK)))
    return PairScores({m: out[ALL.index(m)] for m in METRICS}, jumps, q_len, ref_length, q_out)


def _refuse(join: BucketJoin, agents, who, episodes, output: Decision, dead, unusable, totals, label_agents):
    """The pairs a rule refused become dead letters (stage "rule") and their episodes unusable; returns the
    mask of the pairs kept."""
    refused = output.refused
    first = np.concatenate([[0], np.cumsum([len(join.agents[a].episodes) for a in agents])])
    for pair in np.flatnonzero(refused).tolist():
        a = int(who[pair])
        match = join.agents[agents[a]]
        row = pair - int(first[a])
        iid = join.episode_ids(episodes[pair : pair + 1])[0].as_py()
        source = match.sources[int(match.rank[row])] if match.sources else ""
        dead.append(RecordError(source, f"#{int(match.index[row])} (instr_id={iid})", output.reasons[pair], RULE))
        unusable += _lines(join, agents[a], episodes[pair : pair + 1], label_agents)
        for name in ("dead_letters", "without_usable_prediction"):
            totals[agent_key(agents[a], name)] = totals.get(agent_key(agents[a], name), 0) + 1
    return ~refused


def score_bucket(
    join: BucketJoin,
    scans: ScanTables,
    config: ScoringConfig,
    label_agents: bool = False,
    task: Task = R2R_TASK,
    context=None,
) -> BucketScores:
    """Score a joined bucket (see the module docstring) by `task`'s rule (`context`: the rule's
    per-worker data, `Task.context`). `label_agents`: prefix episode lines with the agent."""
    refs = join.references
    totals = {
        "reference_episodes": len(join.episode_ref),
        "single_viewpoint_episodes": int(refs.instructions[refs.paths.lengths == 1].sum()),
    }
    missing, unusable, dead = [], [], list(join.dead)
    for agent, match in join.agents.items():
        dead += match.dead
        missing += _lines(join, agent, match.missing, label_agents)
        unusable += _lines(join, agent, match.unusable, label_agents)
        for name, value in (
            ("dead_letters", len(match.dead)),
            ("missing_predictions", len(match.missing)),
            ("without_usable_prediction", len(match.unusable)),
        ):
            totals[agent_key(agent, name)] = totals.get(agent_key(agent, name), 0) + value
    agents = [a for a, m in join.agents.items() if len(m.episodes)]
    if not agents:
        return BucketScores(None, totals, missing, unusable, dead)

    # Every pair of every agent, agent by agent: episode, reference row, scan slot, both paths.
    counts = np.asarray([len(join.agents[a].episodes) for a in agents])
    who = np.repeat(np.arange(len(agents)), counts)
    episodes = np.concatenate([join.agents[a].episodes for a in agents])
    ref_rows = join.episode_ref[episodes]
    pair_slot = scans.slots(join.scan_names, join.scan_code[ref_rows])
    references = join.reference_nodes.take(ref_rows)
    queries = Paths.concat([join.agents[a].queries for a in agents])

    rule_pairs = RulePairs(
        agents,
        who,
        episodes,
        ref_rows,
        pair_slot,
        references,
        queries,
        {name: (c.take(ref_rows) if isinstance(c, Paths) else c[ref_rows]) for name, c in refs.extras.items()},
        concat_extras([join.agents[a].extras for a in agents]),
        scans,
        config,
    )
    output = task.decide(rule_pairs, context)
    pairs = score_pairs(scans, pair_slot, references, queries, config, output.success, output.oracle)
    scores = {**pairs.scores, **output.columns}
    if task.finish is not None:
        scores.update(task.finish(rule_pairs, context, output, pairs))
    jumps, q_len, ref_length = pairs.jumps, pairs.query_lengths, pairs.reference_length
    given = queries.lengths
    scored_nodes = pairs.scored_nodes(queries)
    for name, which in output.counts.items():
        for a, count in enumerate(np.bincount(np.asarray(which, np.int64), minlength=len(agents)).tolist()):
            totals[agent_key(agents[a], name)] = totals.get(agent_key(agents[a], name), 0) + count
    if output.refused is not None and output.refused.any():
        keep = _refuse(join, agents, who, episodes, output, dead, unusable, totals, label_agents)
        scored_nodes = scored_nodes[np.repeat(keep, q_len)]
        who, episodes, ref_rows, pair_slot = who[keep], episodes[keep], ref_rows[keep], pair_slot[keep]
        scores = {m: v[keep] for m, v in scores.items()}
        jumps, q_len, ref_length, given = jumps[keep], q_len[keep], ref_length[keep], given[keep]
        if not len(who):
            return BucketScores(None, totals, missing, unusable, dead)
    n = len(episodes)

    # The rows: the scored (collapsed) trajectory as viewpoint ids, flat, in one take.
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(q_len, out=offsets[1:])
    path_names = scans.names(np.repeat(pair_slot, q_len), scored_nodes)
    codes = refs.language[ref_rows]
    languages = pa.array(list(refs.languages), pa.string())
    shared = {
        "agent": pa.array(agents, pa.string()).take(pa.array(who)),
        "instr_id": join.episode_ids(episodes),
        "scan": pa.array(scans.scans, pa.string()).take(pa.array(pair_slot)),
        "language": languages.take(pa.array(codes, pa.int32(), mask=codes < 0)),
        **metric_columns(scores, task.metrics),
        "non_adjacent_steps": pa.array(jumps, pa.int64()),
        "path": pa.ListArray.from_arrays(pa.array(offsets), path_names),
    }
    schema = task.schema
    table = pa.table(
        [shared[f.name] if f.name in shared else _column(scores[f.name], f) for f in schema], schema=schema
    )
    scores = {m: scores[m] for m in task.metrics}

    # Exact sums per agent, and per agent and language (RxR); the counters of each agent.
    add_group_sums(totals, scores, who, [agent_key(a, "") for a in agents])
    if (codes >= 0).any():
        n_lang = len(refs.languages)
        known = codes >= 0
        keys = [agent_key(a, language_key(lang, "")) for a in agents for lang in refs.languages]
        add_group_sums(totals, {m: v[known] for m, v in scores.items()}, who[known] * n_lang + codes[known], keys)
    collapsed = given - q_len
    for a, agent in enumerate(agents):
        mine = who == a
        for name, value in (
            ("non_adjacent_steps", int(jumps[mine].sum())),
            ("trajectories_with_jumps", int((jumps[mine] > 0).sum())),
            ("repeats_collapsed", int(collapsed[mine].sum())),
        ):
            totals[agent_key(agent, name)] = totals.get(agent_key(agent, name), 0) + value
    return BucketScores(table, totals, missing, unusable, dead, ref_length)
