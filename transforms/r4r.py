"""The R4R join as a Beam transform (rule and record building live in `vlnkit.datasets.r4r`).

Records travel in lists, keyed by scan: each input list is split by scan, one GroupByKey brings
a scan's R2R paths together, and the scan's keyed join (`join_firsts`: A under every viewpoint
within the threshold of its end, B under its start) runs where they meet, so the work grows
with the output rather than with the square of each scan's paths. One Beam element carries a
whole list, never one path or one pair.

Memory: a scan's R2R paths (hundreds in Matterport, a few hundred KB) are held by one worker
while its joined paths leave in lists of at most JOINED_PER_LIST records.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter, record_label
from transforms.graphs import GraphDoFn
from transforms.progress import Progress
from transforms.read import record_order, split_by
from vlnkit.datasets.r4r import (
    JoinConfig,
    add_totals,
    group_totals,
    join_firsts,
    path_problem,
)
from vlnkit.navigation.graph import GraphError

SCAN_RANK = "scan_rank"
COUNTS = "counts"
JOINED_PER_LIST = 4096


def _scan(record: dict) -> str:
    return record["scan"]


class _JoinScan(GraphDoFn):
    """(scan, lists of its records) -> lists of joined records; dead letters, the scan's rank and counts."""

    def __init__(self, connectivity_dir: str, config: JoinConfig):
        super().__init__(connectivity_dir)
        self.config = config
        self.keyed = Metrics.counter("r4r", "paths_keyed")
        self.joined = Metrics.counter("r4r", "joined")
        self.heading_filtered = Metrics.counter("r4r", "filtered_heading")
        self.bad = Metrics.counter("r4r", "dead_letter")

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
        counts = {"pairs_considered": len(usable) ** 2, "passed_distance": 0, "filtered_heading": 0}
        out: list[dict] = []
        for part in join_firsts(graph, usable, self.config):
            counts["passed_distance"] += part.passed_distance
            counts["filtered_heading"] += part.filtered_heading
            first = part.first
            for second, reason in part.errors:
                label = f"pair (path_id={first['path_id']}, path_id={second['path_id']})"
                yield self._dead("join", first, label, reason)
            for joined, second in sorted(zip(part.joined, part.seconds), key=lambda pair: pair[1]["_order"]):
                joined["_order"] = (first["_order"], second["_order"])
                out.append(joined)
            if len(out) >= JOINED_PER_LIST:
                yield from self._emit(out, counts)
                out = []
        yield from self._emit(out, counts)
        self.heading_filtered.inc(counts["filtered_heading"])
        yield beam.pvalue.TaggedOutput(COUNTS, counts)

    def _emit(self, joined: list[dict], counts: dict):
        if joined:
            self.joined.inc(len(joined))
            self.progress.tick(len(joined))
            add_totals(counts, group_totals(joined))
            yield joined


class JoinR4R(beam.PTransform):
    """Validated R2R records (unique path ids) -> joined R4R records, plus dead letters and join statistics.

    Takes single records, or with `batched=True` lists of records (as `ReadR2R(batched=True)` and
    `DedupeBy(batched=True)` give them). Returns a dict of PCollections:
      `joined`: lists of record dicts (see `vlnkit.datasets.r4r.build_joined`), each with `_order`,
        at most JOINED_PER_LIST per list (`beam.FlatMap(lambda batch: batch)` gives single records).
        Each list is one scan's, sorted by `_order`, and a scan's lists follow each other in `_order`
        without interleaving (so `WriteJsonFile(runs=True)` can write them whole);
      `dead_letter`: records and pairs that could not be used, with reasons;
      `scan_rank`: (scan, first `_order` of the scan), for the published output order;
      `stats`: {name: number} dicts to be summed: pairs considered, passed the distance rule,
        filtered by heading, and the joined records' totals (see `vlnkit.datasets.r4r.group_totals`).
    """

    def __init__(self, connectivity_dir: str, config: JoinConfig = JoinConfig(), batched: bool = False):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.config = config
        self.batched = batched

    def expand(self, records):
        batches = records if self.batched else records | "AsLists" >> beam.Map(lambda r: [r])
        built = (
            batches
            | "SplitByScan" >> beam.FlatMap(split_by, _scan)
            | "GroupScans" >> beam.GroupByKey()
            | "JoinScans"
            >> beam.ParDo(_JoinScan(self.connectivity_dir, self.config)).with_outputs(
                SCAN_RANK, COUNTS, DEAD_LETTER, main="joined"
            )
        )
        return {
            "joined": built.joined,
            DEAD_LETTER: built[DEAD_LETTER],
            "scan_rank": built[SCAN_RANK],
            "stats": built[COUNTS],
        }
