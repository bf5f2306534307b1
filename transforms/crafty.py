"""Crafty's instructions as Beam transforms (the guide itself: `vlnkit.crafty`).

Two steps: `AppraiseScans` sums each training scan's category document frequencies into the Appraiser
(one small dict, a side input), and `DescribePaths` brings each scan's paths together (split by scan,
one GroupByKey) and describes them where they meet, with the scan's graph, objects and emission totals
built once per worker (`DoFn.setup` holds the stores; a few scans' models are kept). A scan missing from
objpos.json, or a path the graph does not connect, is a dead letter naming it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.graphs import GraphDoFn
from transforms.read import record_order, split_by
from transforms.worker_cache import per_worker
from vlnkit.crafty.appraiser import Appraiser, idf_appraiser, scan_documents
from vlnkit.crafty.batch import describe_scan
from vlnkit.crafty.guide import Guide
from vlnkit.crafty.objects import ObjectsError, ObjectSources
from vlnkit.crafty.observer import Observer, ObserverParams, ScanModel
from vlnkit.datasets.r2r import record_label
from vlnkit.navigation.graph import GraphError

STATS = "stats"
TABLES = "tables"
MODELS_KEPT = 8  # scans' models a worker keeps (each a few MB at most)


def worker_objects(objects_dir: str, bbox_dir: str, near: float) -> ObjectSources:
    return per_worker(
        "crafty_objects", f"{objects_dir}|{bbox_dir}|{near}", lambda: ObjectSources(objects_dir, bbox_dir, near)
    )


@dataclass
class _ScanDocuments(GraphDoFn):
    """scan -> ({category: panoramas seeing it}, panoramas); a scan that cannot be read counts nothing."""

    objects_dir: str
    bbox_dir: str
    near: float

    def setup(self):
        super().setup()
        self.objects = worker_objects(self.objects_dir, self.bbox_dir, self.near)

    def process(self, scan):
        try:
            df, n = scan_documents(self.objects.scan(self.graphs.get(scan)))
        except (GraphError, ObjectsError) as exc:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("appraiser", "", f"scan {scan}", str(exc)))
            return
        yield {"df": dict(df), "panoramas": n, "scans": 1}


def _merge_documents(acc: dict, part: dict) -> dict:
    df = acc.setdefault("df", {})
    for c, n in part.get("df", {}).items():
        df[c] = df.get(c, 0) + n
    acc["panoramas"] = acc.get("panoramas", 0) + part.get("panoramas", 0)
    acc["scans"] = acc.get("scans", 0) + part.get("scans", 0)
    return acc


def appraiser_table(totals: dict) -> dict:
    """The published Appraiser: {category: idf}, with the panoramas and scans it was computed over."""
    if not totals.get("panoramas"):
        return {"scans": totals.get("scans", 0), "panoramas": 0, "idf": {}}
    app = idf_appraiser(totals["df"], totals["panoramas"])
    return {"scans": totals["scans"], "panoramas": totals["panoramas"], "idf": dict(sorted(app.scores.items()))}


@dataclass
class AppraiseScans(beam.PTransform):
    """Scan ids -> {"table": the one Appraiser table dict, "dead_letter": scans that could not be read}."""

    connectivity_dir: str
    objects_dir: str
    bbox_dir: str
    near: float

    def expand(self, scans):
        from transforms.tally import MergeWith

        docs = (
            scans
            | "UniqueScans" >> beam.Distinct()
            | "ScanDocuments"
            >> beam.ParDo(
                _ScanDocuments(self.connectivity_dir, self.objects_dir, self.bbox_dir, self.near)
            ).with_outputs(DEAD_LETTER, main="docs")
        )
        table = (
            docs.docs
            | "SumDocuments" >> beam.CombineGlobally(MergeWith(_merge_documents))
            | "Idf" >> beam.Map(appraiser_table)
        )
        return {"table": table, DEAD_LETTER: docs[DEAD_LETTER]}


def _scan(record: dict) -> str:
    return record["scan"]


@dataclass
class _DescribeScan(GraphDoFn):
    objects_dir: str
    bbox_dir: str
    near: float
    params: ObserverParams
    num_instructions: int
    seed: int
    made = Metrics.counter("crafty", "instructions")
    bad = Metrics.counter("crafty", "dead_letter")

    def setup(self):
        super().setup()
        self.objects = worker_objects(self.objects_dir, self.bbox_dir, self.near)
        self.models: OrderedDict = OrderedDict()
        self.guide = None
        self._table_id = None

    def _guide(self, table: dict) -> Guide:
        if self.guide is None or self._table_id != id(table):
            self.guide = Guide(Observer(Appraiser(table["idf"], table["panoramas"]), self.params))
            self._table_id = id(table)
        return self.guide

    def _model(self, scan: str) -> ScanModel:
        model = self.models.get(scan)
        if model is None:
            graph = self.graphs.get(scan)
            model = ScanModel.build(graph, self.objects.scan(graph), self.params)
            self.models[scan] = model
            if len(self.models) > MODELS_KEPT:
                self.models.popitem(last=False)
        self.models.move_to_end(scan)
        return model

    def _dead(self, stage: str, record: dict, reason: str):
        self.bad.inc()
        return beam.pvalue.TaggedOutput(
            DEAD_LETTER, dead_letter(stage, record.get("_source", ""), record_label(record), reason)
        )

    def process(self, element, table):
        scan, batches = element
        records = sorted((r for batch in batches for r in batch), key=record_order)
        try:
            model = self._model(scan)
        except (GraphError, ObjectsError) as exc:  # every record of a refused scan, with the one reason
            for record in records:
                yield self._dead("objects" if isinstance(exc, ObjectsError) else "graph", record, str(exc))
            return
        out = describe_scan(self._guide(table), model, records, self.num_instructions, self.seed)
        for record, reason in out.refused:
            yield self._dead("graph", record, reason)
        if out.table.num_rows:
            yield beam.pvalue.TaggedOutput(TABLES, out.table)
        if out.records:
            yield out.records
        self.made.inc(out.table.num_rows)
        yield beam.pvalue.TaggedOutput(STATS, dict(out.counts))


@dataclass
class DescribePaths(beam.PTransform):
    """Lists of path records (R2R / RxR guide / joined paths) -> {"records": lists of R2R-format records with
    their instructions, "tables": Arrow tables of `CRAFTY_INSTRUCTIONS` rows, "stats": count dicts,
    "dead_letter"}. `table` is the Appraiser table (`AppraiseScans`' one-element PCollection), a side input."""

    table: beam.pvalue.PCollection
    connectivity_dir: str
    objects_dir: str
    bbox_dir: str
    near: float
    params: ObserverParams
    num_instructions: int
    seed: int

    def expand(self, batches):
        fn = _DescribeScan(
            self.connectivity_dir,
            self.objects_dir,
            self.bbox_dir,
            self.near,
            self.params,
            self.num_instructions,
            self.seed,
        )
        made = (
            batches
            | "SplitByScan" >> beam.FlatMap(split_by, _scan)
            | "GroupScans" >> beam.GroupByKey()
            | "DescribeScans"
            >> beam.ParDo(fn, beam.pvalue.AsSingleton(self.table)).with_outputs(
                TABLES, STATS, DEAD_LETTER, main="records"
            )
        )
        return {"records": made.records, TABLES: made[TABLES], STATS: made[STATS], DEAD_LETTER: made[DEAD_LETTER]}
