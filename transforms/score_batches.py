"""Scoring joined buckets: per scan, one `score_batch` call over all of a bucket's pairs of an agent.

`ScoreBuckets`: (bucket, ("r" | "p", batch)) pieces -> {"tables": pyarrow Tables in the
EPISODE_SCORES schema, "totals": summable counter dicts (exact metric sums, per agent and, for
datasets with languages, per agent and language: `language_key`),
"dead_letter": dicts, "missing": lines, "unusable": lines}.

A bucket holds every reference path whose path_id hashes to it and every prediction for those
paths, so memory per bucket is bounded by the bucket count (chosen from the input size), and a
scan with millions of episodes is spread over all buckets instead of being one hot key.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER
from transforms.graphs import GraphDoFn
from transforms.progress import Progress
from transforms.score_join import BucketJoin, join_bucket, padded
from transforms.score_read import TOTALS, dataset_ranks, worker_vocabulary
from vlnkit.datasets.columns import Paths
from vlnkit.evaluation.batch import score_batch, totals
from vlnkit.evaluation.common import METRICS, collapse_repeats_padded, non_adjacent_steps
from vlnkit.evaluation.schemas import EPISODE_SCORES
from vlnkit.evaluation.score_summary import agent_key, language_key
from vlnkit.evaluation.scoring_config import ScoringConfig

MISSING = "missing"
UNUSABLE = "unusable"
BOOTSTRAP = "bootstrap"  # the `bootstrap` hook's output per bucket (transforms.score_bootstrap)


def metric_columns(scores: dict[str, np.ndarray]) -> dict[str, pa.Array]:
    """Metric arrays as Arrow columns; +inf (unreachable) becomes null."""
    return {m: pa.array(scores[m], type=pa.float64(), mask=~np.isfinite(scores[m])) for m in METRICS}


def _repeat(value: str, n: int) -> pa.Array:
    return pa.array([value], pa.string()).take(pa.array(np.zeros(n, np.int64)))


def score_pairs(graph, adjacent, refs, queries, config: ScoringConfig):
    """(scores, jumps, scored queries (padded, lengths), repeats collapsed per pair) of one scan's pairs.

    The same steps as the per-scan scorer before: collapse repeats (unless kept), count
    non-adjacent steps, then `score_batch` with keep_repeats=True. The compiled kernel scores each
    pair on its own, so a pair's scores do not depend on the pairs it shares a call with (bit for bit).
    """
    q, q_len = queries
    given = q_len
    if not config.keep_repeats:
        q, q_len = collapse_repeats_padded(q, q_len)
    jumps = non_adjacent_steps(adjacent, q, q_len)
    scores = score_batch(
        graph.distances,
        refs,
        (q, q_len),
        config.success_distance,
        keep_repeats=True,
        spl_reference=config.spl_reference,
        success_rule=config.success_rule,
    )
    return scores, jumps, (q, q_len), given - q_len


class _ScoreBucket(GraphDoFn):
    def __init__(
        self, connectivity_dir: str, agents: dict[str, list[str]], dataset_files: list[str], config, bootstrap=None
    ):
        super().__init__(connectivity_dir)
        self.bootstrap = bootstrap
        self.agents = agents
        self.dataset_files = dataset_files
        self.config = config
        self.label_agents = len(agents) > 1
        self.scored = Metrics.counter("score", "episodes_scored")
        self.bad = Metrics.counter("score", "dead_letter")

    def setup(self):
        super().setup()
        self.vocab = worker_vocabulary(self.connectivity_dir)
        self._adjacent: dict[str, np.ndarray] = {}
        self._names: dict[str, pa.Array] = {}
        self.progress = Progress("score: episodes scored")

    def _scan(self, scan: str):
        graph = self.graphs.get(scan)
        if scan not in self._adjacent:
            self._adjacent[scan] = graph.adjacency.toarray() > 0
            self._names[scan] = pa.array(graph.viewpoints, pa.string())
        return graph, self._adjacent[scan], self._names[scan]

    def _lines(self, agent: str, join: BucketJoin, episodes: np.ndarray) -> list[str]:
        ids = join.episode_ids(episodes).to_pylist() if len(episodes) else []
        return [f"{agent}\t{i}" for i in ids] if self.label_agents else ids

    def process(self, element):
        _, pieces = element
        join = join_bucket(list(pieces), self.agents, self.dataset_files, self.vocab, self.graphs)
        refs = join.references
        single = int(refs.instructions[refs.paths.lengths == 1].sum())
        out = {"reference_episodes": len(join.episode_ref), "single_viewpoint_episodes": single}
        for d in join.dead:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, d)
        for agent, match in join.agents.items():
            for d in match.dead:
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, d)
            self.bad.inc(len(match.dead))
            for line in self._lines(agent, join, match.missing):
                yield beam.pvalue.TaggedOutput(MISSING, line)
            for line in self._lines(agent, join, match.unusable):
                yield beam.pvalue.TaggedOutput(UNUSABLE, line)
            counts = {
                "dead_letters": len(match.dead),
                "missing_predictions": len(match.missing),
                "without_usable_prediction": len(match.unusable),
            }
            for name, value in counts.items():
                out[agent_key(agent, name)] = out.get(agent_key(agent, name), 0) + value
        self.progress.tick(sum(len(m.episodes) for m in join.agents.values()))
        reference_lengths: list[np.ndarray] = []
        tables = self._score(join, out, reference_lengths)
        if tables:
            # One chunk per column: a table of many small chunks costs a pickle per chunk wherever Beam
            # encodes it (its element-size sampling does), 7 s a run with 50 agents before this.
            table = pa.concat_tables(tables).combine_chunks()
            if self.bootstrap is not None:
                yield beam.pvalue.TaggedOutput(BOOTSTRAP, self.bootstrap(table, np.concatenate(reference_lengths)))
            yield table
        yield beam.pvalue.TaggedOutput(TOTALS, out)

    def _score(self, join: BucketJoin, out: dict, reference_lengths: list) -> list[pa.Table]:
        """Score every agent's pairs of the bucket, one `score_pairs` call per scan for all agents together
        (a pair's scores do not depend on the pairs it is scored with, see `score_pairs`), so the number of
        calls does not grow with the number of agents. Adds each agent's exact sums to `out`."""
        agents = [a for a, m in join.agents.items() if len(m.episodes)]
        if not agents:
            return []
        counts = [len(join.agents[a].episodes) for a in agents]
        who = np.repeat(np.arange(len(agents)), counts)  # agent number of each pair
        episodes = np.concatenate([join.agents[a].episodes for a in agents])
        queries_all = Paths.concat([Paths(join.pred_local[a].offsets, join.pred_local[a].local) for a in agents])
        refs_all = Paths(join.ref_local.offsets, join.ref_local.local)
        ref_rows = join.episode_ref[episodes]
        scans = join.references.scan[ref_rows]
        order = np.argsort(scans, kind="stable")
        cuts = np.flatnonzero(scans[order][1:] != scans[order][:-1]) + 1
        names_of_agents = pa.array(agents, pa.string())
        # Language per pair: the reference row's code into the bucket's dictionary (-1: none, a null).
        codes_all = join.references.language[ref_rows]
        languages = pa.array(list(join.references.languages), pa.string())
        # Each pair's results, in pair order (agent by agent), for the per-agent sums below.
        scores_all = {m: np.empty(len(episodes)) for m in METRICS}
        jumps_all = np.empty(len(episodes), np.int64)
        collapsed_all = np.empty(len(episodes), np.int64)
        tables = []
        for sel in np.split(order, cuts):
            scan = str(scans[sel[0]])
            graph, adjacent, names = self._scan(scan)
            q = queries_all.take(sel)
            r = refs_all.take(ref_rows[sel])
            rp, rl = padded(r.offsets, r.values)
            scores, jumps, (qp, ql), collapsed = score_pairs(
                graph, adjacent, (rp, rl), padded(q.offsets, q.values), self.config
            )
            # Each pair's reference path length in metres (the bootstrap's length breakdown), table order.
            steps = graph.distances[rp[:, :-1], rp[:, 1:]]
            reference_lengths.append(np.where(np.arange(1, rp.shape[1]) < rl[:, None], steps, 0.0).sum(axis=1))
            self.scored.inc(len(sel))
            for m in METRICS:
                scores_all[m][sel] = scores[m]
            jumps_all[sel], collapsed_all[sel] = jumps, collapsed
            offsets = np.zeros(len(ql) + 1, np.int32)
            np.cumsum(ql, out=offsets[1:])
            flat = qp[np.arange(qp.shape[1]) < ql[:, None]]
            tables.append(
                pa.table(
                    {
                        "agent": names_of_agents.take(pa.array(who[sel])),
                        "instr_id": join.episode_ids(episodes[sel]),
                        "scan": _repeat(scan, len(sel)),
                        "language": languages.take(pa.array(codes_all[sel], pa.int32(), mask=codes_all[sel] < 0)),
                        **metric_columns(scores),
                        "non_adjacent_steps": pa.array(jumps, pa.int64()),
                        "path": pa.ListArray.from_arrays(pa.array(offsets), names.take(pa.array(flat))),
                    },
                    schema=EPISODE_SCORES,
                )
            )
        # One exact sum per metric per agent over the whole bucket (exact sums do not depend on grouping).
        bounds = np.concatenate([[0], np.cumsum(counts)])
        for n, agent in enumerate(agents):
            mine = slice(int(bounds[n]), int(bounds[n + 1]))
            part = {
                **totals({m: scores_all[m][mine] for m in METRICS}),
                "non_adjacent_steps": int(jumps_all[mine].sum()),
                "trajectories_with_jumps": int((jumps_all[mine] > 0).sum()),
                "repeats_collapsed": int(collapsed_all[mine].sum()),
            }
            # Per language: the same exact sums over each language's pairs (a handful of masks, no loop per pair).
            codes = codes_all[mine]
            for code in np.unique(codes[codes >= 0]).tolist():
                of = codes == code
                language = join.references.languages[code]
                part.update(
                    {
                        language_key(language, name): value
                        for name, value in totals({m: scores_all[m][mine][of] for m in METRICS}).items()
                    }
                )
            for name, value in part.items():
                key = agent_key(agent, name)
                out[key] = out.get(key, 0) + value
        return tables


class ScoreBuckets(beam.PTransform):
    """Bucketed reference and prediction pieces -> scored tables, totals, dead letters, missing lines.

    `agents` maps agent name -> its prediction files (in rank order); `dataset_files` are the
    dataset files as given to `ReadReferenceBatches` (ranked the same way here).
    """

    def __init__(
        self, connectivity_dir: str, agents: dict[str, list[str]], dataset_files: list[str], config, bootstrap=None
    ):
        super().__init__()
        self.bootstrap = bootstrap  # (bucket table, reference lengths) -> a BOOTSTRAP output, see score_bootstrap
        self.connectivity_dir = connectivity_dir
        self.agents = agents
        self.dataset_files = [p for _, p in dataset_ranks(dataset_files)]
        self.config = config

    def expand(self, pieces):
        out = (
            pieces
            | "GroupByBucket" >> beam.GroupByKey()
            | "JoinAndScore"
            >> beam.ParDo(
                _ScoreBucket(self.connectivity_dir, self.agents, self.dataset_files, self.config, self.bootstrap)
            ).with_outputs(TOTALS, DEAD_LETTER, MISSING, UNUSABLE, BOOTSTRAP, main="tables")
        )
        return {
            "tables": out.tables,
            TOTALS: out[TOTALS],
            DEAD_LETTER: out[DEAD_LETTER],
            MISSING: out[MISSING],
            UNUSABLE: out[UNUSABLE],
            BOOTSTRAP: out[BOOTSTRAP],
        }
