"""The R4R join (and its longer chains) as a Beam transform (rule, chains and records: `vlnkit.datasets.r4r`).

Records travel in lists, keyed by scan: each input list is split by scan, one GroupByKey brings
a scan's R2R paths together, and the scan's join (`join_chains`: the keyed pair table, A under every
viewpoint within the threshold of its end, B under its start; for K >= 3 paths the chains enumerated
from it with numpy joins and sampled under the per-scan cap) runs where they meet, so the work grows
with the output rather than with the square of each scan's paths. One Beam element carries a
whole list, never one path or one pair.

Memory: a scan's R2R paths (hundreds in Matterport, a few hundred KB) and its joined paths (at most
the cap for K >= 3) are held by one worker; the joined paths leave in lists of at most
JOINED_PER_LIST records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import apache_beam as beam
import pyarrow as pa
from apache_beam.metrics import Metrics

from transforms.coders import declared_outputs
from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.graphs import GraphDoFn
from transforms.progress import Progress
from transforms.read import record_order, split_by
from vlnkit.datasets.r2r import record_label
from vlnkit.datasets.r4r import (
    JoinConfig,
    add_totals,
    group_totals,
    join_chains,
    path_problem,
)
from vlnkit.navigation.graph import GraphError

SCAN_RANK = "scan_rank"
COUNTS = "counts"
TABLES = "tables"
JOINED_PER_LIST = 4096


def _scan(record: dict) -> str:
    return record["scan"]


@dataclass
class _JoinScan(GraphDoFn):
    """(scan, lists of its records) -> lists of joined records; dead letters, the scan's rank and counts."""

    config: JoinConfig
    landmark: bool = False
    records: bool = True
    keyed = Metrics.counter("r4r", "paths_keyed")
    joined = Metrics.counter("r4r", "joined")
    heading_filtered = Metrics.counter("r4r", "filtered_heading")
    bad = Metrics.counter("r4r", "dead_letter")
    capped = Metrics.counter("r4r", "chains_capped")

    def setup(self):
        super().setup()
        self.progress = Progress("r4r: joined paths built")

    def _dead(self, stage: str, record: dict, label: str, reason: str):
        self.bad.inc()
        return beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(stage, record.get("_source", ""), label, reason))

    def process(self, element):
        scan, batches = element
        records = sorted((r for batch in batches for r in batch), key=record_order)
        try:
            graph = self.graphs.get(scan)
        except GraphError as exc:  # a refused scan: every one of its records, with the one reason
            for record in records:
                yield self._dead("graph", record, record_label(record), str(exc))
            return
        usable = []
        for record in records:
            problem = path_problem(graph, record)  # unknown viewpoints, steps that are not edges
            if problem is None:
                usable.append(record)
            else:
                yield self._dead("graph", record, record_label(record), problem)
        if not usable:
            return
        self.keyed.inc(len(usable))
        yield beam.pvalue.TaggedOutput(SCAN_RANK, (scan, usable[0]["_order"]))
        result = join_chains(graph, usable, self.config)  # joined records in the R4R generator's order
        for sources, reason in result.errors:
            label = "chain (" + ", ".join(f"path_id={s['path_id']}" for s in sources) + ")"
            yield self._dead("join", sources[0], label, reason)
        table = result.batch.table
        counts = add_totals(dict(result.counts), group_totals(table))
        if table.num_rows:
            yield beam.pvalue.TaggedOutput(TABLES, table)
        if self.records:  # dicts only for the outputs that take them
            joined = result.batch.records(usable, landmark=self.landmark, ordered=True)
            for start in range(0, len(joined), JOINED_PER_LIST):
                yield joined[start : start + JOINED_PER_LIST]
        self.joined.inc(table.num_rows)
        self.progress.tick(table.num_rows)
        self.heading_filtered.inc(counts["filtered_heading"])
        self.capped.inc(counts["chains_capped"])
        yield beam.pvalue.TaggedOutput(COUNTS, counts)


@dataclass
class JoinR4R(beam.PTransform):
    """Validated R2R records (unique path ids) -> joined records (R4R, or chains of `config.num_paths`
    paths), plus dead letters and join statistics.

    Takes single records, or with `batched=True` lists of records (as `ReadR2R(batched=True)` and
    `DedupeBy(batched=True)` give them). Returns a dict of PCollections:
      `joined`: lists of record dicts (see `vlnkit.datasets.r4r_batch.build_chains`), each with `_order`
        (the tuple of its sources' `_order`) and, with `landmark=True`, BabyWalk's `_landmark` layout,
        at most JOINED_PER_LIST per list (`beam.FlatMap(lambda batch: batch)` gives single records).
        Each list is one scan's, sorted by `_order`, and a scan's lists follow each other in `_order`
        without interleaving (so `WriteJsonFile(runs=True)` can write them whole); none with
        `records=False`;
      `tables`: the same joined paths as one Arrow table (`R4R_PATHS`) per scan, for `WriteTables`;
      `dead_letter`: records and pairs that could not be used, with reasons;
      `scan_rank`: (scan, first `_order` of the scan), for the R4R generator's output order;
      `stats`: {name: number} dicts to be summed: pairs considered, passed the distance rule,
        filtered by heading, valid pairs, valid chains and chains left out by the cap, and the joined
        records' totals (see `vlnkit.datasets.r4r.join_chains` and `group_totals`).
    """

    connectivity_dir: str
    config: JoinConfig = field(default_factory=JoinConfig)
    batched: bool = False
    landmark: bool = False
    records: bool = True

    def expand(self, records):
        batches = records if self.batched else records | "AsLists" >> beam.Map(lambda r: [r])
        built = (
            batches
            | "SplitByScan" >> beam.FlatMap(split_by, _scan)
            | "GroupScans" >> beam.GroupByKey()
            | "JoinScans"
            >> declared_outputs(
                beam.ParDo(_JoinScan(self.connectivity_dir, self.config, self.landmark, self.records)),
                "joined",
                *(SCAN_RANK, COUNTS, TABLES, DEAD_LETTER),
                **{TABLES: pa.Table},
            )
        )
        return {
            "joined": built.joined,
            TABLES: built[TABLES],
            DEAD_LETTER: built[DEAD_LETTER],
            "scan_rank": built[SCAN_RANK],
            "stats": built[COUNTS],
        }
