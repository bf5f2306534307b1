"""The R4R join as a Beam keyed join (rule and record building live in `vlnkit.datasets.r4r`).

Every path A is keyed by (scan, v) for each viewpoint v within the distance threshold of its
end; every path B by (scan, b_first). CoGroupByKey brings together exactly the pairs that
pass the distance rule, so the work grows with the output rather than with the square of
each scan's paths.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter, record_label
from transforms.graphs import GraphDoFn
from transforms.progress import Progress
from vlnkit.datasets.r4r import (
    JoinConfig,
    JoinError,
    add_totals,
    build_joined,
    end_keys,
    group_totals,
    passes_heading,
    path_problem,
)
from vlnkit.navigation.graph import GraphError

FIRST, SECOND = "first", "second"
SCANS = "scans"
COUNTS = "counts"


class _KeyForJoin(GraphDoFn):
    """Check a record against its scan's graph and emit it under its join keys."""

    def __init__(self, connectivity_dir: str, distance_threshold: float):
        super().__init__(connectivity_dir)
        self.distance_threshold = distance_threshold
        self.keyed = Metrics.counter("r4r", "paths_keyed")
        self.bad = Metrics.counter("r4r", "dead_letter")

    def setup(self):
        super().setup()
        self.progress = Progress("r4r: paths keyed")

    def process(self, record):
        scan = record["scan"]
        try:
            graph = self.graphs.get(scan)
        except GraphError as exc:  # a refused scan: every one of its records, with the one reason
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter("graph", record.get("_source", ""), record_label(record), str(exc))
            )
            return
        problem = path_problem(graph, record)  # unknown viewpoints, steps that are not edges
        if problem is not None:
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter("graph", record.get("_source", ""), record_label(record), problem)
            )
            return
        keys = end_keys(graph, record, self.distance_threshold)
        self.keyed.inc()
        self.progress.tick()
        yield beam.pvalue.TaggedOutput(SCANS, (scan, record["_order"]))
        yield beam.pvalue.TaggedOutput(SECOND, ((scan, record["path"][0]), record))
        for key in keys:
            yield beam.pvalue.TaggedOutput(FIRST, ((scan, key), record))


class _BuildJoins(GraphDoFn):
    """All (A, B) pairs that met under one key: apply the heading rule and build joined records."""

    def __init__(self, connectivity_dir: str, config: JoinConfig):
        super().__init__(connectivity_dir)
        self.config = config
        self.joined = Metrics.counter("r4r", "joined")
        self.heading_filtered = Metrics.counter("r4r", "filtered_heading")
        self.bad = Metrics.counter("r4r", "dead_letter")

    def setup(self):
        super().setup()
        self.progress = Progress("r4r: joined paths built")

    def process(self, element):
        (scan, _), groups = element
        firsts, seconds = list(groups[FIRST]), list(groups[SECOND])
        if not firsts or not seconds:
            return
        graph = self.graphs.get(scan)
        passed = filtered = 0
        joined_here: list[dict] = []
        for first in firsts:
            for second in seconds:
                passed += 1
                if not passes_heading(graph, first, second, self.config):
                    filtered += 1
                    continue
                try:
                    joined = build_joined(graph, first, second)
                except (JoinError, GraphError) as exc:
                    self.bad.inc()
                    yield beam.pvalue.TaggedOutput(
                        DEAD_LETTER,
                        dead_letter(
                            "join",
                            first.get("_source", ""),
                            f"pair (path_id={first['path_id']}, path_id={second['path_id']})",
                            str(exc),
                        ),
                    )
                    continue
                joined["_order"] = (first["_order"], second["_order"])
                joined_here.append(joined)
        self.joined.inc(len(joined_here))
        self.progress.tick(len(joined_here))
        self.heading_filtered.inc(filtered)
        counts = {"passed_distance": passed, "filtered_heading": filtered}
        if joined_here:
            yield joined_here  # one element per meeting viewpoint: downstream writers take batches
            add_totals(counts, group_totals(joined_here))
        yield beam.pvalue.TaggedOutput(COUNTS, counts)


class JoinR4R(beam.PTransform):
    """Validated R2R records -> joined R4R records, plus dead letters and join statistics.

    Returns a dict of PCollections:
      `joined`: lists of record dicts (see `vlnkit.datasets.r4r.build_joined`), each with `_order`; one list per
        meeting viewpoint, so writers handle batches and per-element overhead stays off the hot path
        (`beam.FlatMap(lambda batch: batch)` gives single records);
      `dead_letter`: records that could not be used, with reasons;
      `scan_rank`: (scan, first `_order` of the scan), for the published output order;
      `stats`: {name: number} dicts to be summed: pairs considered, passed the distance rule,
        filtered by heading, and the joined records' totals (see `vlnkit.datasets.r4r.group_totals`).
    """

    def __init__(self, connectivity_dir: str, config: JoinConfig = JoinConfig()):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.config = config

    def expand(self, records):
        keyed = records | "KeyForJoin" >> beam.ParDo(
            _KeyForJoin(self.connectivity_dir, self.config.distance_threshold)
        ).with_outputs(FIRST, SECOND, SCANS, DEAD_LETTER)
        built = (
            {FIRST: keyed[FIRST], SECOND: keyed[SECOND]}
            | "MeetAtViewpoint" >> beam.CoGroupByKey()
            | "BuildJoins"
            >> beam.ParDo(_BuildJoins(self.connectivity_dir, self.config)).with_outputs(
                COUNTS, DEAD_LETTER, main="joined"
            )
        )
        scan_rank = keyed[SCANS] | "ScanRank" >> beam.CombinePerKey(min)
        pairs_considered = (
            keyed[SCANS]
            | "PathsPerScan" >> beam.combiners.Count.PerKey()
            | "PairsPerScan" >> beam.Map(lambda kv: {"pairs_considered": kv[1] * kv[1]})
        )
        stats = (pairs_considered, built[COUNTS]) | "JoinStats" >> beam.Flatten()
        dead = (keyed[DEAD_LETTER], built[DEAD_LETTER]) | "JoinDeadLetters" >> beam.Flatten()
        return {"joined": built.joined, DEAD_LETTER: dead, "scan_rank": scan_rank, "stats": stats}
