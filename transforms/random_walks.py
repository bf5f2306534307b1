"""The random baseline as a transform: dataset record dicts in, random walks scored per scan out.

`RandomBaseline`: dataset records (dicts from `transforms.read.ReadDataset`) -> {"tables": pyarrow
Tables in the RANDOM_EPISODE_SCORES schema (if asked), "totals": summable dicts, "dead_letter":
dicts}. Walks are `vlnkit.evaluation.random_baseline`; they are grouped by scan and scored in
vectorized chunks with `score_batch`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.metrics import Metrics

from transforms.coders import BulkCoder  # noqa: F401 -- registers the coder of the declared tables
from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.graphs import GraphDoFn
from transforms.progress import Progress
from transforms.score.read import TOTALS
from vlnkit.datasets.r2r import record_label
from vlnkit.datasets.rxr import episode_ids
from vlnkit.evaluation.batch import score_batch, totals
from vlnkit.evaluation.common import collapse_repeats_padded, pack
from vlnkit.evaluation.random_baseline import allocate, draw, neighbour_table, walk
from vlnkit.evaluation.schemas import RANDOM_EPISODE_SCORES
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.navigation.graph import GraphError
from vlnkit.scoring.score import metric_columns


def allocation(episodes: list[tuple], num_trajectories: int) -> dict[str, int]:
    """{instr_id: walks} from all (order, instr_id) pairs: equal shares in dataset order."""
    ordered = [instr_id for _, instr_id in sorted(episodes)]
    return dict(zip(ordered, allocate(num_trajectories, len(ordered)).tolist()))


@dataclass
class _RandomScan(GraphDoFn):
    """All episodes of one scan -> random walks from their starts, scored in vectorized chunks."""

    config: ScoringConfig
    seed: int
    chunk_size: int
    tables: bool  # also the per-walk Arrow tables, besides the totals
    generated = Metrics.counter("random_baseline", "trajectories")

    def setup(self):
        super().setup()
        self.progress = Progress("random_baseline: episodes walked")

    def process(self, element, pool, shares):
        scan, episodes = element
        self.progress.tick(len(episodes))
        pool = np.asarray(sorted(pool), dtype=np.int64)
        episodes = sorted(episodes, key=lambda e: e[0])
        graph = self.graphs.get(scan)
        table, degree = neighbour_table(graph)
        batch, size = [], 0
        for instr_id, ref_idx in episodes:
            count = shares.get(instr_id, 0)
            if count:
                batch.append((instr_id, ref_idx, count))
                size += count
            if size >= self.chunk_size:
                yield from self._run(graph, table, degree, pool, batch)
                batch, size = [], 0
        if batch:
            yield from self._run(graph, table, degree, pool, batch)

    def _run(self, graph, table, degree, pool, batch):
        drawn = [draw(self.seed, instr_id, count, pool) for instr_id, _, count in batch]
        steps = np.concatenate([d[0] for d in drawn])
        uniforms = np.concatenate([d[1] for d in drawn])
        counts = np.asarray([count for *_, count in batch])
        which = np.repeat(np.arange(len(batch)), counts)
        ref_pad, ref_len = pack([ref for _, ref, _ in batch])
        refs = (ref_pad[which], ref_len[which])
        queries = walk(table, degree, refs[0][:, 0], steps, uniforms)
        if not self.config.keep_repeats:
            queries = collapse_repeats_padded(*queries)
        scores = score_batch(
            graph.distances,
            refs,
            queries,
            self.config.success_distance,
            keep_repeats=True,
            spl_reference=self.config.spl_reference,
            success_rule=self.config.success_rule,
        )
        self.generated.inc(len(which))
        yield beam.pvalue.TaggedOutput(TOTALS, totals(scores))
        if self.tables:
            ids = np.repeat(np.asarray([i for i, *_ in batch], dtype=object), counts)
            sample = np.concatenate([np.arange(c) for c in counts])
            yield pa.table(
                {
                    "instr_id": pa.array(ids.tolist(), pa.string()),
                    "sample": pa.array(sample, pa.int64()),
                    "scan": pa.array([graph.scan] * len(which), pa.string()),
                    **metric_columns(scores),
                },
                schema=RANDOM_EPISODE_SCORES,
            )


@dataclass
class RandomBaseline(beam.PTransform):
    """Dataset records -> random-walk scores: {"tables": pa.Table (if asked), "totals", "dead_letter"}.

    `pool` is a PCollection of training-path edge counts; walks are shared among episodes in
    dataset order (`allocation`), and each episode's walks are seeded from `seed` and its instr_id.
    """

    connectivity_dir: str
    pool: beam.PCollection
    num_trajectories: int
    seed: int
    config: ScoringConfig = field(default_factory=ScoringConfig)
    chunk_size: int = 65536
    tables: bool = False

    def expand(self, records):
        checked = records | "CheckPaths" >> beam.ParDo(_IndexReference(self.connectivity_dir)).with_outputs(
            DEAD_LETTER, main="episodes"
        )
        episodes = checked.episodes
        n = self.num_trajectories
        shares = (
            episodes
            | "EpisodeOrder" >> beam.Map(lambda e: (e[2], e[1][0]))
            | "AllEpisodes" >> beam.combiners.ToList()
            | "Allocate" >> beam.Map(allocation, n)
        )
        out = (
            episodes
            | "KeyByScan" >> beam.Map(lambda e: (e[0], e[1]))
            | "GroupByScan" >> beam.GroupByKey()
            | "WalkAndScore"
            >> beam.ParDo(
                _RandomScan(self.connectivity_dir, self.config, self.seed, self.chunk_size, self.tables),
                beam.pvalue.AsList(self.pool),
                beam.pvalue.AsSingleton(shares),
            )
            .with_output_types(pa.Table)
            .with_outputs(TOTALS, main="tables")
        )
        return {"tables": out.tables, TOTALS: out[TOTALS], DEAD_LETTER: checked[DEAD_LETTER]}


class _IndexReference(GraphDoFn):
    """A dataset record -> (scan, (instr_id, reference indices), order) per instruction, or a dead letter."""

    def process(self, record):
        try:
            ref_idx = self.graphs.get(record["scan"]).indices(record["path"])
        except GraphError as exc:
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter("graph", record.get("_source", ""), record_label(record), str(exc))
            )
            return
        for k, instr_id in enumerate(episode_ids(record)):
            yield record["scan"], (instr_id, ref_idx), (*record["_order"], k)
