"""Scoring agent trajectories at scale: read predictions and references, match them, score per scan.

Thin wrappers around the core: parsing is `vlnkit.datasets.trajectories`, metrics are `vlnkit.evaluation.metrics`,
walks are `vlnkit.evaluation.random_baseline`. Scoring is batched per scan (one graph, one distance matrix,
thousands of pairs per numpy call); results leave as pyarrow Tables and summed totals, never as
one Python dict per episode.
"""

from __future__ import annotations

import zlib

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.graphs import GraphDoFn
from transforms.progress import Progress
from transforms.read import DedupeBy, ReadFiles, ReadR2R
from transforms.write import SHARD_TEMPLATE
from vlnkit.datasets.r2r import validate_record
from vlnkit.datasets.trajectories import episode_ids, is_parquet, parse_predictions, parse_predictions_parquet
from vlnkit.evaluation.metrics import (
    METRICS,
    collapse_repeats_padded,
    non_adjacent_steps,
    pack,
    score_batch,
    totals,
)
from vlnkit.evaluation.random_baseline import allocate, draw, neighbour_table, walk
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.io import fileio
from vlnkit.io.schemas import EPISODE_SCORES, RANDOM_EPISODE_SCORES
from vlnkit.navigation.graph import GraphError

MISSING = "missing"
TOTALS = "totals"


def metric_columns(scores: dict[str, np.ndarray]) -> dict[str, pa.Array]:
    """Metric arrays as Arrow columns; +inf (unreachable) becomes null."""
    return {m: pa.array(scores[m], type=pa.float64(), mask=~np.isfinite(scores[m])) for m in METRICS}


# ----------------------------------------------------------------------------- reading
def _parse_prediction_file(data: bytes, path: str):
    parse = parse_predictions_parquet if is_parquet(path) else parse_predictions
    return parse(data, path)


class ReadPredictions(beam.PTransform):
    """Prediction files (JSON list, JSON Lines or Parquet; any trajectory layout) -> prediction dicts."""

    def __init__(self, files: list[str]):
        super().__init__()
        self.files = list(files)

    def expand(self, pbegin):
        read = pbegin | "Read" >> ReadFiles(self.files, _parse_prediction_file, "score")
        return {"predictions": read["records"], DEAD_LETTER: read[DEAD_LETTER]}


class _ReadParquetPaths(beam.DoFn):
    """`build_r4r`'s paths-*.parquet -> validated record dicts, like ReadR2R does for JSON."""

    def __init__(self):
        self.read = Metrics.counter("read", "records")
        self.bad = Metrics.counter("read", "dead_letter")

    def process(self, element):
        import pyarrow.parquet as pq

        rank, path = element
        try:
            with fileio.open_read(path) as f:
                rows = pq.read_table(f).to_pylist()
        except Exception as exc:  # unreadable or not Parquet: the file is the dead letter
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read Parquet ({exc})"))
            return
        for index, row in enumerate(rows):
            reason = validate_record(row)
            if reason is not None:
                self.bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, f"#{index}", reason))
                continue
            self.read.inc()
            yield {**row, "_source": path, "_index": index, "_order": (rank, index)}


class ReadDataset(beam.PTransform):
    """Dataset files (R2R/R4R JSON or JSON Lines, or build_r4r Parquet) -> records unique by path_id."""

    def __init__(self, files: list[str]):
        super().__init__()
        self.files = list(files)

    def expand(self, pbegin):
        ranked = list(enumerate(self.files))
        json_files = [p for _, p in ranked if not is_parquet(p)]
        parquet = [(r, p) for r, p in ranked if is_parquet(p)]
        pieces, dead = [], []
        if json_files:
            read = pbegin | "ReadJson" >> ReadR2R(json_files)
            pieces.append(read["records"])
            dead.append(read[DEAD_LETTER])
        if parquet:
            # Ranks continue after the JSON files' so `_order` stays a total order.
            parquet = [(len(json_files) + n, p) for n, (_, p) in enumerate(parquet)]
            read = (
                pbegin
                | "ParquetFiles" >> beam.Create(parquet)
                | "ReadParquet" >> beam.ParDo(_ReadParquetPaths()).with_outputs(DEAD_LETTER, main="records")
            )
            pieces.append(read.records)
            dead.append(read[DEAD_LETTER])
        records = tuple(pieces) | "AllRecords" >> beam.Flatten()
        unique = records | "UniquePathIds" >> DedupeBy(lambda r: r["path_id"], "path_id")
        dead.append(unique[DEAD_LETTER])
        return {"records": unique["records"], DEAD_LETTER: tuple(dead) | "DatasetDeadLetters" >> beam.Flatten()}


def reference_episodes(record: dict):
    """(instr_id, reference) for each instruction of a dataset record."""
    ref = {"scan": record["scan"], "path": list(record["path"]), "_source": record.get("_source", "")}
    for instr_id in episode_ids(record):
        yield instr_id, ref


# ----------------------------------------------------------------------------- matching
class _Match(GraphDoFn):
    """One instr_id's predictions and reference -> (scan, (instr_id, ref indices, query indices)) or reasons."""

    def __init__(self, connectivity_dir: str, shards_per_scan: int):
        super().__init__(connectivity_dir)
        self.shards_per_scan = shards_per_scan
        self.matched = Metrics.counter("score", "matched")
        self.missing = Metrics.counter("score", "missing_predictions")
        self.bad = Metrics.counter("score", "dead_letter")

    def _dead(self, pred, stage, reason):
        self.bad.inc()
        label = f"#{pred.get('_index', '?')} (instr_id={pred['instr_id']})"
        return beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(stage, pred.get("_source", ""), label, reason))

    def process(self, element):
        instr_id, groups = element
        preds = sorted(groups["pred"], key=lambda p: p["_order"])
        refs = list(groups["ref"])
        if not refs:
            for pred in preds:
                yield self._dead(pred, "match", f"unknown instr_id {instr_id!r}: not in the dataset")
            return
        if not preds:
            self.missing.inc()
            yield beam.pvalue.TaggedOutput(MISSING, instr_id)
            return
        first = preds[0]
        for dup in preds[1:]:
            yield self._dead(
                dup,
                "match",
                f"duplicate prediction for instr_id {instr_id!r} (kept {first['_source']} #{first['_index']})",
            )
        ref = refs[0]
        try:
            graph = self.graphs.get(ref["scan"])
        except GraphError as exc:
            yield self._dead(first, "graph", str(exc))
            return
        try:
            ref_idx = graph.indices(ref["path"])
        except GraphError as exc:
            yield self._dead(first, "reference", f"reference path of {instr_id!r} is unusable: {exc}")
            return
        unknown = [v for v in first["path"] if v not in graph.index]
        if unknown:
            yield self._dead(
                first, "viewpoint", f"viewpoint {unknown[0]!r} is not an included viewpoint of scan {ref['scan']!r}"
            )
            return
        if first["path"][0] != ref["path"][0]:
            yield self._dead(
                first,
                "start",
                f"trajectory starts at {first['path'][0]!r} but the reference path starts at {ref['path'][0]!r} "
                "(predictions made on another revision of the dataset?)",
            )
            return
        self.matched.inc()
        # Keyed by (scan, shard): a scan with millions of episodes is scored by several workers.
        shard = zlib.crc32(instr_id.encode()) % self.shards_per_scan
        yield (ref["scan"], shard), (instr_id, ref_idx, graph.indices(first["path"]))


class MatchPredictions(beam.PTransform):
    """Join predictions to reference episodes by instr_id.

    Input: {"predictions": prediction dicts, "references": (instr_id, reference) pairs}.
    Returns {"matched": ((scan, shard), (instr_id, ref indices, query indices)), "missing": instr_ids
    with no prediction, "dead_letter": unknown ids, duplicates, unknown viewpoints, wrong starts}.
    The shard (a stable hash of the instr_id) spreads a large scan over several scoring workers.
    """

    def __init__(self, connectivity_dir: str, shards_per_scan: int = 8):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.shards_per_scan = shards_per_scan

    def expand(self, inputs):
        preds = inputs["predictions"] | "KeyPredictions" >> beam.Map(lambda p: (p["instr_id"], p))
        out = (
            {"pred": preds, "ref": inputs["references"]}
            | "ByInstrId" >> beam.CoGroupByKey()
            | "Match"
            >> beam.ParDo(_Match(self.connectivity_dir, self.shards_per_scan)).with_outputs(
                MISSING, DEAD_LETTER, main="matched"
            )
        )
        return {"matched": out.matched, MISSING: out[MISSING], DEAD_LETTER: out[DEAD_LETTER]}


# ----------------------------------------------------------------------------- scoring
class _AdjacencyCache:
    def __init__(self):
        self._dense: dict[str, np.ndarray] = {}

    def get(self, graph) -> np.ndarray:
        dense = self._dense.get(graph.scan)
        if dense is None:
            dense = self._dense[graph.scan] = graph.adjacency.toarray() > 0
        return dense


def _viewpoint_lists(graph, padded: np.ndarray, lengths: np.ndarray) -> list[list[str]]:
    """Padded index rows back to viewpoint id lists (the trajectories as scored)."""
    ids = np.asarray(graph.viewpoints, dtype=object)
    return [ids[row[:n]].tolist() for row, n in zip(padded, lengths.tolist())]


class _ScoreScan(GraphDoFn):
    """All matched pairs of one scan -> pyarrow Tables of per-episode scores, plus summed totals."""

    def __init__(self, connectivity_dir: str, config: ScoringConfig, chunk_size: int):
        super().__init__(connectivity_dir)
        self.config = config
        self.chunk_size = chunk_size
        self.scored = Metrics.counter("score", "episodes_scored")
        self.jumps = Metrics.counter("score", "non_adjacent_steps")

    def setup(self):
        super().setup()
        self.adjacency = _AdjacencyCache()
        self.progress = Progress("score: episodes scored")

    def process(self, element):
        (scan, _), items = element
        self.progress.tick(len(items))
        items = sorted(items, key=lambda x: x[0])
        graph = self.graphs.get(scan)
        adjacent = self.adjacency.get(graph)
        for start in range(0, len(items), self.chunk_size):
            chunk = items[start : start + self.chunk_size]
            refs = pack([x[1] for x in chunk])
            queries, q_len = pack([x[2] for x in chunk])
            given = int(q_len.sum())
            if not self.config.keep_repeats:
                queries, q_len = collapse_repeats_padded(queries, q_len)
            jumps = non_adjacent_steps(adjacent, queries, q_len)
            scores = score_batch(
                graph.distances,
                refs,
                (queries, q_len),
                self.config.success_distance,
                keep_repeats=True,
                spl_reference=self.config.spl_reference,
            )
            self.scored.inc(len(chunk))
            self.jumps.inc(int(jumps.sum()))
            yield pa.table(
                {
                    "instr_id": pa.array([x[0] for x in chunk], pa.string()),
                    "scan": pa.array([scan] * len(chunk), pa.string()),
                    **metric_columns(scores),
                    "non_adjacent_steps": pa.array(jumps, pa.int64()),
                    "path": pa.array(_viewpoint_lists(graph, queries, q_len), pa.list_(pa.string())),
                },
                schema=EPISODE_SCORES,
            )
            yield beam.pvalue.TaggedOutput(
                TOTALS,
                {
                    **totals(scores),
                    "non_adjacent_steps": int(jumps.sum()),
                    "trajectories_with_jumps": int((jumps > 0).sum()),
                    "repeats_collapsed": given - int(q_len.sum()),
                },
            )


class ScoreByScan(beam.PTransform):
    """((scan, shard), (instr_id, ref indices, query indices)) -> {"tables": pa.Table, "totals": summable dicts}."""

    def __init__(self, connectivity_dir: str, config: ScoringConfig = ScoringConfig(), chunk_size: int = 8192):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.config = config
        self.chunk_size = chunk_size

    def expand(self, matched):
        out = (
            matched
            | "GroupByScan" >> beam.GroupByKey()
            | "Score"
            >> beam.ParDo(_ScoreScan(self.connectivity_dir, self.config, self.chunk_size)).with_outputs(
                TOTALS, main="tables"
            )
        )
        return {"tables": out.tables, TOTALS: out[TOTALS]}


# ----------------------------------------------------------------------------- random baseline
def allocation(episodes: list[tuple], num_trajectories: int) -> dict[str, int]:
    """{instr_id: walks} from all (order, instr_id) pairs: equal shares in dataset order."""
    ordered = [instr_id for _, instr_id in sorted(episodes)]
    return dict(zip(ordered, allocate(num_trajectories, len(ordered)).tolist()))


class _RandomScan(GraphDoFn):
    """All episodes of one scan -> random walks from their starts, scored in vectorized chunks."""

    def __init__(self, connectivity_dir: str, config: ScoringConfig, seed: int, chunk_size: int, tables: bool):
        super().__init__(connectivity_dir)
        self.config = config
        self.seed = seed
        self.chunk_size = chunk_size
        self.tables = tables
        self.generated = Metrics.counter("random_baseline", "trajectories")

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
            chunk_size=16384,
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


class RandomBaseline(beam.PTransform):
    """Dataset records -> random-walk scores: {"tables": pa.Table (if asked), "totals", "dead_letter"}.

    `pool` is a PCollection of training-path edge counts; walks are shared among episodes in
    dataset order (`allocation`), and each episode's walks are seeded from `seed` and its instr_id.
    """

    def __init__(
        self,
        connectivity_dir: str,
        pool,
        num_trajectories: int,
        seed: int,
        config: ScoringConfig = ScoringConfig(),
        chunk_size: int = 65536,
        tables: bool = False,
    ):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.pool = pool
        self.num_trajectories = num_trajectories
        self.seed = seed
        self.config = config
        self.chunk_size = chunk_size
        self.tables = tables

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
            ).with_outputs(TOTALS, main="tables")
        )
        return {"tables": out.tables, TOTALS: out[TOTALS], DEAD_LETTER: checked[DEAD_LETTER]}


class _IndexReference(GraphDoFn):
    """A dataset record -> (scan, (instr_id, reference indices), order) per instruction, or a dead letter."""

    def process(self, record):
        try:
            ref_idx = self.graphs.get(record["scan"]).indices(record["path"])
        except GraphError as exc:
            label = f"#{record.get('_index', '?')} (path_id={record.get('path_id')!r})"
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter("graph", record.get("_source", ""), label, str(exc))
            )
            return
        for k, instr_id in enumerate(episode_ids(record)):
            yield record["scan"], (instr_id, ref_idx), (*record["_order"], k)


# ----------------------------------------------------------------------------- writing
class WriteTables(beam.PTransform):
    """pyarrow Tables -> `<prefix>-SSSSS-of-NNNNN.parquet` (tables are written as they come, no per-row work)."""

    def __init__(self, file_path_prefix: str, schema: pa.Schema, num_shards: int = 0):
        super().__init__()
        self.file_path_prefix = file_path_prefix
        self.schema = schema
        self.num_shards = num_shards

    def expand(self, tables):
        return tables | "WriteParquet" >> beam.io.WriteToParquetBatched(
            self.file_path_prefix,
            schema=self.schema,
            codec="snappy",
            file_name_suffix=".parquet",
            num_shards=self.num_shards,
            shard_name_template=SHARD_TEMPLATE,
        )


class WriteLines(beam.PTransform):
    """Gather strings into one sorted text file, one per line (empty file when there are none)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, lines):
        path = self.path

        def write(kv):
            items = sorted(x for x in kv[1] if x is not None)
            with fileio.open_write(path) as f:
                f.write("".join(x + "\n" for x in items).encode("utf-8"))
            return len(items)

        always = lines.pipeline | "AlwaysOneGroup" >> beam.Create([(0, None)])
        return (
            (lines | "KeyAll" >> beam.Map(lambda x: (0, x)), always)
            | "FlattenLines" >> beam.Flatten()
            | "Gather" >> beam.GroupByKey()
            | "Write" >> beam.Map(write)
        )
