"""Report aggregation on Beam: any amount of job output in, a few small tables and samples out.

Thin wrappers around `vlnkit.reports.stats`: datasets are read with the scoring job's
`ReadDataset` and measured per batch on each scan's graph; Parquet outputs are read per file in
column batches and reduced to one mergeable partial per batch. Only merged partials (fine
histograms, counts) and the N sampled episodes ever reach the single step that draws.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.graphs import GraphDoFn
from transforms.read import DedupeBy, ReadDataset
from transforms.tally import MergeWith
from vlnkit.datasets.buckets import bucket_count
from vlnkit.datasets.r2r import record_label
from vlnkit.datasets.rxr import episode_ids, path_key
from vlnkit.io import fileio
from vlnkit.reports.report_inputs import ReportInput
from vlnkit.reports.stats import (
    METRIC_WIDTHS,
    PARAPHRASES,
    PERTURBATIONS,
    SCORES,
    instructions_partial,
    merge,
    paraphrases_partial,
    paths_partial,
    perturbations_partial,
    sample_key,
    scores_partial,
    unmeasurable,
)

BATCH_ROWS = 65536


class MergePartials(MergeWith):
    """Partials -> one merged partial (an empty input gives {})."""

    def __init__(self):
        super().__init__(merge)


# ----------------------------------------------------------------------------- datasets
def reference_lite(record: dict, label: str) -> dict:
    """What a drawing needs of a dataset record (small, picklable): `instr_ids` are its episodes'
    (`vlnkit.datasets.rxr.episode_ids`: "<path_id>_<k>" for R2R, str(instruction_id) for an RxR guide line)."""
    out = {
        "label": label,
        "path_id": record["path_id"],
        "scan": record["scan"],
        "path": list(record["path"]),
        "instr_ids": episode_ids(record),
    }
    for key in ("first_path_id", "second_path_id", "join_distance"):
        if record.get(key) is not None:
            out[key] = record[key]
    return out


@dataclass
class _PathsPartial(GraphDoFn):
    """A list of records, one per path -> its path statistics (`paths_partial`); unmeasurable ones are dead letters."""

    label: str  # the data set's
    measured = Metrics.counter("report", "dataset_records")
    bad = Metrics.counter("report", "dead_letter")

    def process(self, batch):
        partial, bad = paths_partial(self.label, batch, self.graphs)
        self.measured.inc(len(batch) - len(bad))
        for record, reason in bad:
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter("measure", record.get("_source", ""), record_label(record), reason)
            )
        yield partial


@dataclass
class _InstructionsPartial(GraphDoFn):
    """A list of records -> the statistics of the instructions of those whose path is on the graph."""

    label: str  # the data set's

    def process(self, batch):
        yield instructions_partial(self.label, [r for r in batch if unmeasurable(r, self.graphs) is None])


@dataclass
class DatasetStats(beam.PTransform):
    """Dataset files of one label -> {"partials", "references" (lite records), dead_letter}.

    Paths are measured once each (the first record of each `path_key`: several RxR guide lines share a
    path), instructions and their languages on every record whose path is on the graph, both in lists (`stats.dataset_partial` is
    the same computation on one list).
    """

    dataset_label: str  # not `label`: that is the PTransform's own name
    files: list[str]
    connectivity_dir: str

    def expand(self, pbegin):
        read = pbegin | "Read" >> ReadDataset(self.files, batched=True)
        lists = read["records"]
        # The other records of a path are not errors: DedupeBy's dead letters are dropped on purpose.
        paths = lists | "OnePerPath" >> DedupeBy(path_key, "path", batched=True, buckets=bucket_count(self.files))
        measured = paths["records"] | "MeasurePaths" >> beam.ParDo(
            _PathsPartial(self.connectivity_dir, self.dataset_label)
        ).with_outputs(DEAD_LETTER, main="partials")
        instructions = lists | "MeasureInstructions" >> beam.ParDo(
            _InstructionsPartial(self.connectivity_dir, self.dataset_label)
        )
        partials = (measured.partials, instructions) | "Partials" >> beam.Flatten()
        lite = lists | "Lite" >> beam.FlatMap(
            lambda batch, label: [reference_lite(r, label) for r in batch], self.dataset_label
        )
        dead = (read[DEAD_LETTER], measured[DEAD_LETTER]) | "Dead" >> beam.Flatten()
        return {"partials": partials, "references": lite, DEAD_LETTER: dead}


# ----------------------------------------------------------------------------- Parquet outputs
_COLUMNS = {
    SCORES: ["instr_id", *METRIC_WIDTHS],
    PERTURBATIONS: ["family", "method"],
    PARAPHRASES: ["language", "kept", "bleu"],
}


def _column(batch, name) -> np.ndarray:
    """A numeric Arrow column as float64 with nulls as NaN (vectorized)."""
    return batch.column(name).to_numpy(zero_copy_only=False).astype(np.float64)


@dataclass
class _ParquetPartials(beam.DoFn):
    """One Parquet output file, read in column batches -> one partial; with `sample` > 0 (score files), also
    the file's `sample` smallest-keyed episodes, so only a few rows per file travel to the sampler."""

    seed: int
    sample: int
    rows = Metrics.counter("report", "parquet_rows")
    bad = Metrics.counter("report", "dead_letter")

    def process(self, item: ReportInput):
        import pyarrow.parquet as pq

        try:
            with fileio.open_read(item.path) as f:
                parquet = pq.ParquetFile(f)
                names = set(parquet.schema_arrow.names)
                columns = [c for c in _COLUMNS[item.kind] if c in names]
                if item.kind == SCORES and "path" in names and self.sample:
                    columns.append("path")
                candidates: list = []
                partial: dict = {}
                rows = 0
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns):
                    rows += batch.num_rows
                    merge(partial, self._partial(item, batch))
                    if item.kind == SCORES and self.sample:
                        candidates = heapq.nsmallest(
                            self.sample, candidates + self._candidates(item, batch), key=lambda c: c[0]
                        )
        except Exception as exc:  # unreadable or not Parquet: the file is the dead letter
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter("read", item.path, "", f"cannot read Parquet ({exc})")
            )
            return
        # Only a wholly read file counts: a file failing half-way is a dead letter, not half a statistic.
        self.rows.inc(rows)
        yield partial
        for c in candidates:
            yield beam.pvalue.TaggedOutput("samples", c)

    @staticmethod
    def _partial(item, batch) -> dict:
        if item.kind == SCORES:
            return scores_partial(item.label, {m: _column(batch, m) for m in METRIC_WIDTHS if m in batch.schema.names})
        if item.kind == PERTURBATIONS:
            return perturbations_partial(
                item.label, batch.column("family").to_pylist(), batch.column("method").to_pylist()
            )
        return paraphrases_partial(
            item.label,
            batch.column("language").to_pylist(),
            batch.column("kept").to_numpy(zero_copy_only=False),
            _column(batch, "bleu"),
        )

    def _candidates(self, item, batch) -> list:
        ids = batch.column("instr_id").to_pylist()
        metrics = {m: _column(batch, m) for m in METRIC_WIDTHS if m in batch.schema.names}
        paths = batch.column("path").to_pylist() if "path" in batch.schema.names else None
        keyed = heapq.nsmallest(
            self.sample, ((sample_key(self.seed, item.label, i), k) for k, i in enumerate(ids)), key=lambda c: c[0]
        )
        out = []
        for key, k in keyed:
            values = {m: (float(v[k]) if np.isfinite(v[k]) else None) for m, v in metrics.items()}
            out.append(
                (
                    key,
                    {"instr_id": ids[k], "label": item.label, "metrics": values, "agent": paths[k] if paths else None},
                )
            )
        return out


@dataclass
class ParquetStats(beam.PTransform):
    """Score / perturbation / paraphrase Parquet files -> {"partials", "samples", dead_letter}."""

    inputs: list[ReportInput]
    seed: int = 0
    sample_from: str | None = None
    sample: int = 0

    def expand(self, pbegin):
        sampled = [i for i in self.inputs if i.label == self.sample_from and i.kind == SCORES]
        others = [i for i in self.inputs if i not in sampled]
        outs = []
        for name, items, n in (("Sampled", sampled, self.sample), ("Other", others, 0)):
            if items:
                outs.append(
                    pbegin
                    | f"{name}Files" >> beam.Create(items)
                    | f"{name}Spread" >> beam.Reshuffle()
                    | f"{name}Read"
                    >> beam.ParDo(_ParquetPartials(self.seed, n)).with_outputs(DEAD_LETTER, "samples", main="partials")
                )
        if not outs:
            empty = pbegin | "NoFiles" >> beam.Create([])
            return {"partials": empty, "samples": empty, DEAD_LETTER: empty}
        flat = {}
        for tag in ("partials", "samples", DEAD_LETTER):
            flat[tag] = tuple(o[tag] for o in outs) | f"Flatten_{tag}" >> beam.Flatten()
        return flat


# ----------------------------------------------------------------------------- sampling for drawings
def _smallest(n: int):
    return beam.combiners.Top.Of(n, key=lambda c: c[0], reverse=True)


@dataclass
class SampleEpisodes(beam.PTransform):
    """N episodes to draw, chosen by `sample_key(seed, ...)`, never by run order.

    With score candidates, the N smallest-keyed scored episodes are drawn on their reference paths
    (found among all datasets by instr_id); without, the N smallest-keyed paths of `draw_label`.
    R4R paths bring their two source paths when a dataset holding them was given.
    Input: {"references": lite records of every dataset, "score_samples": (key, candidate) pairs}.
    Output: one list of episode dicts {"reference", "score", "sources"} in key order.
    """

    n: int
    seed: int
    draw_label: str | None
    with_scores: bool

    def expand(self, inputs):
        refs = inputs["references"]
        n, seed = self.n, self.seed
        if self.with_scores:
            chosen = (
                inputs["score_samples"]
                | "TopScores" >> _smallest(n)
                | "ScoreById" >> beam.Map(lambda cs: {c["instr_id"]: (k, c) for k, c in cs})
            )

            def match(ref, wanted):
                for instr_id in ref["instr_ids"]:
                    if instr_id in wanted:
                        key, score = wanted[instr_id]
                        yield key, {"reference": ref, "score": score, "instr_id": instr_id}

            picked = (
                refs
                | "MatchScored" >> beam.FlatMap(match, beam.pvalue.AsSingleton(chosen))
                | "FirstPerEpisode" >> beam.Map(lambda kv: ((kv[0], kv[1]["instr_id"]), kv[1]))
                | "OnePerKey" >> beam.CombinePerKey(lambda vs: min(vs, key=lambda v: v["reference"]["label"]))
                | "Unkey" >> beam.Map(lambda kv: (kv[0][0], kv[1]))
            )
        else:
            label = self.draw_label
            picked = (
                refs
                | "OfLabel" >> beam.Filter(lambda r: r["label"] == label)
                | "Keyed" >> beam.Map(lambda r: (sample_key(seed, r["label"], r["path_id"]), {"reference": r}))
                # RxR: several guide lines (instructions) share a path, which is drawn once.
                | "OnePerPath" >> beam.CombinePerKey(lambda vs: min(vs, key=lambda v: v["reference"]["instr_ids"]))
            )
        top = picked | "TopEpisodes" >> _smallest(n)
        wanted_sources = top | "SourceIds" >> beam.Map(
            lambda eps: sorted(
                {e["reference"][k] for _, e in eps for k in ("first_path_id", "second_path_id") if k in e["reference"]}
            )
        )

        def is_source(ref, wanted):
            return "first_path_id" not in ref and ref["path_id"] in set(wanted)

        sources = refs | "Sources" >> beam.Filter(is_source, beam.pvalue.AsSingleton(wanted_sources))

        def attach(eps, sources):
            by_id = {}
            for s in sorted(sources, key=lambda s: s["label"]):
                by_id.setdefault(s["path_id"], s)
            out = []
            for _, e in sorted(eps, key=lambda c: c[0]):
                ref = e["reference"]
                found = [by_id.get(ref.get(k)) for k in ("first_path_id", "second_path_id")]
                out.append({**e, "sources": found if all(found) and "first_path_id" in ref else None})
            return out

        return top | "AttachSources" >> beam.Map(attach, beam.pvalue.AsList(sources))


# ----------------------------------------------------------------------------- the comparison page
def _reference_paths(records: list[dict]) -> dict[str, list[str]]:
    """{instr_id: reference path} of a list of dataset records (one dict per batch, not one element per episode)."""
    return {i: list(record["path"]) for record in records for i in episode_ids(record)}


def _read_page_files(files: list[str], names: list[dict], read) -> tuple:
    """(the episode files' rows as one table or None, the files read, dead letters of the unreadable ones):
    `read(path)` reads one file; an unreadable file is one dead letter, as in ParquetStats."""
    import pyarrow as pa

    from vlnkit.reports.comparison_inputs import SOURCE, rename_agents

    readable, tables, dead = [], [], []
    for path, renamed in zip(files, names):
        try:
            table = rename_agents(read(path), renamed)
        except Exception as exc:  # noqa: BLE001 -- any read error makes the whole file unusable
            dead.append(dead_letter("comparison", path, "", str(exc)))
            continue
        source = pa.array([len(readable)] * table.num_rows, pa.int32())
        tables.append(table.set_column(table.column_names.index(SOURCE), SOURCE, source))
        readable.append(path)
    return (pa.concat_tables(tables, promote_options="default") if tables else None), readable, dead


def _page_outputs(bad, dead: list[dict], kept, problems: list[dict], path: str, render):
    """The page step's outputs: every dead letter (counted in `bad`), then the page `render(rows)` written
    to `path` and what the report's summary says of it (nothing written when no row is usable)."""
    from vlnkit.reports.comparison_inputs import SOURCE

    for d in dead + [dead_letter("comparison", p["source"], p["record"], p["reason"]) for p in problems]:
        bad.inc()
        yield beam.pvalue.TaggedOutput(DEAD_LETTER, d)
    if kept is None or kept.num_rows == 0:
        yield {"written": False, "episodes": 0, "agents": [], "set_aside": len(problems)}
        return
    page = render(kept.drop_columns([SOURCE]))
    with fileio.open_write(path) as f:
        f.write(page.encode("utf-8"))
    agents = list(dict.fromkeys(kept["agent"].to_pylist()))
    yield {"written": True, "episodes": kept.num_rows, "agents": agents, "set_aside": len(problems)}


@dataclass
class _WriteComparisonPage(GraphDoFn):
    """The one step that reads every episode file (in Arrow batches), sets unusable rows aside as dead
    letters and writes comparison.html; yields what the report's summary says of the page."""

    files: list[str]
    path: str
    options: dict
    names: list[dict]
    bad = Metrics.counter("report", "dead_letter")

    def process(self, _, reference_batches):
        from vlnkit.reports.comparison_inputs import page_metrics, read_episodes, usable_episodes
        from vlnkit.reports.comparison_page import comparison_page

        references: dict[str, list[str]] = {}
        for batch in reference_batches:
            for instr_id, path in batch.items():
                references.setdefault(instr_id, path)
        metrics = page_metrics(self.options.get("own"))  # the task's own metrics too, as its summary declares them

        def read(path):
            return read_episodes([path], fileio.open_read, metrics)

        table, readable, dead = _read_page_files(self.files, self.names, read)
        kept, problems = usable_episodes(table, references, self.graphs, readable) if table is not None else (None, [])

        def render(rows):
            return comparison_page(rows, references, self.graphs, **self.options)

        yield from _page_outputs(self.bad, dead, kept, problems, self.path, render)


@dataclass
class _CVDNReferences(beam.DoFn):
    """A CVDN instance file -> one {instr_id: target path} dict, and a dead letter per unusable instance."""

    target_path: str

    def process(self, path: str):
        from vlnkit.datasets.cvdn import reference_paths

        refs, errors = reference_paths(fileio.read_bytes(path), path, self.target_path)
        for e in errors:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, e.to_dict())
        yield refs


@dataclass
class ComparisonPage(beam.PTransform):
    """Score episode files + the dataset they were scored on -> `path` (comparison.html).

    Output: {"page": one dict {"written", "episodes", "agents", "set_aside"}, dead_letter}. `options`
    are `comparison_page` keyword arguments (`bootstrap`, a `BootstrapConfig`, `title` and `own`, the task's
    own metrics);
    `names[k]` renames the agents of `files[k]` ({} keeps them; see `comparison_inputs.rename_agents`).
    """

    files: list[str]
    dataset_files: list[str]
    connectivity_dir: str
    path: str
    options: dict
    names: list[dict] | None = None  # per file, {agent: its name on the page}; None: agents keep their names
    target_path: str | None = None  # CVDN instance files: each episode's reference is this target path

    def expand(self, pbegin):
        if self.target_path is not None:
            read = (
                pbegin
                | "CVDNFiles" >> beam.Create(self.dataset_files)
                | "ReadReferences"
                >> beam.ParDo(_CVDNReferences(self.target_path)).with_outputs(DEAD_LETTER, main="records")
            )
            references = read.records
        else:
            read = pbegin | "ReadReferences" >> ReadDataset(self.dataset_files, batched=True)
            references = read["records"] | "ReferencePaths" >> beam.Map(_reference_paths)
        page = (
            pbegin
            | "One" >> beam.Create([None])
            | "Write"
            >> beam.ParDo(
                _WriteComparisonPage(
                    self.connectivity_dir, self.files, self.path, self.options, self.names or [{}] * len(self.files)
                ),
                beam.pvalue.AsList(references),
            ).with_outputs(DEAD_LETTER, main="page")
        )
        dead = (read[DEAD_LETTER], page[DEAD_LETTER]) | "Dead" >> beam.Flatten()
        return {"page": page.page, DEAD_LETTER: dead}


# ----------------------------------------------------------------------------- the continuous comparison page
def _continuous_references(dataset_files: list[str], ground_truth: list[str | None]):
    """({instr_id: {"reference", "gt", "length"}} of continuous episode files, their dead letters): what the
    page draws and measures; `ground_truth[k]` is the gt file of `dataset_files[k]` ("auto": VLN-CE's name
    beside it)."""
    from vlnkit.continuous import kernels
    from vlnkit.continuous.episodes import read_episodes

    references, dead = {}, []
    for path, gt in zip(dataset_files, ground_truth):
        episodes, errors = read_episodes(path, gt)
        dead += [e.to_dict() for e in errors]
        lengths = np.empty(len(episodes))
        kernels.path_lengths(episodes.reference_path.points, episodes.reference_path.offsets, lengths)
        for row, instr_id in enumerate(episodes.instr_id.tolist()):  # one dict entry per episode: small, once
            gt_points = episodes.gt_locations.path(row) if episodes.gt_locations is not None else None
            references.setdefault(
                instr_id, {"reference": episodes.reference_path.path(row), "gt": gt_points, "length": lengths[row]}
            )
    return references, dead


@dataclass
class _WriteContinuousComparisonPage(GraphDoFn):
    """`_WriteComparisonPage` for a continuous dataset's episodes: the dataset read with its ground truth,
    rows whose instr_id it lacks set aside as dead letters, each scan's graph drawn when it has one."""

    files: list[str]
    dataset_files: list[str]
    ground_truth: list
    path: str
    options: dict
    names: list[dict]
    bad = Metrics.counter("report", "dead_letter")

    def process(self, _):
        from vlnkit.navigation.graph import GraphError
        from vlnkit.reports.comparison_inputs import CONTINUOUS_COLUMNS, read_episodes, usable_continuous
        from vlnkit.reports.comparison_page import CONTINUOUS_METRICS, continuous_comparison_page

        references, dead = _continuous_references(self.dataset_files, self.ground_truth)

        def read(path):
            return read_episodes([path], fileio.open_read, CONTINUOUS_METRICS, required=CONTINUOUS_COLUMNS)

        table, readable, unreadable = _read_page_files(self.files, self.names, read)
        kept, problems = usable_continuous(table, references, readable) if table is not None else (None, [])

        def render(rows):
            graphs = {}
            for scan in set(rows["scan"].to_pylist()):
                try:
                    graphs[scan] = self.graphs.get(scan)
                except GraphError:  # drawn without a graph (the page says so)
                    graphs[scan] = None
            return continuous_comparison_page(rows, references, graphs, **self.options)

        yield from _page_outputs(self.bad, dead + unreadable, kept, problems, self.path, render)


@dataclass
class ContinuousComparisonPage(beam.PTransform):
    """A continuous dataset's score episode files + its episode files (and ground truth) -> `path`
    (comparison.html), as `ComparisonPage`: {"page": one dict, dead_letter}."""

    files: list[str]
    dataset_files: list[str]
    ground_truth: list
    connectivity_dir: str
    path: str
    options: dict
    names: list[dict] | None = None

    def expand(self, pbegin):
        names = self.names or [{}] * len(self.files)
        step = _WriteContinuousComparisonPage(
            self.connectivity_dir, self.files, self.dataset_files, self.ground_truth, self.path, self.options, names
        )
        page = (
            pbegin | "One" >> beam.Create([None]) | "Write" >> beam.ParDo(step).with_outputs(DEAD_LETTER, main="page")
        )
        return {"page": page.page, DEAD_LETTER: page[DEAD_LETTER]}
