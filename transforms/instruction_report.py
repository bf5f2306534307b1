"""The report's pages of a score_instructions run (`vlnkit.reports.instruction_pages`), in one step.

What the pages need beyond the run's `summary.json` is read here, where both the caption layouts
(`vlnkit.captioning.layouts`) and the report code may be imported: the run's per-instruction rows
(`instructions-*.parquet`, in Arrow batches; only the sampled paths' rows are kept), the systems' files
the run names (references, human outcomes, scans and paths where they carry them) and R2R-format files
for the paths they do not carry (the run's `--references`, the report's `--dataset`).
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass

import apache_beam as beam

from transforms.graphs import GraphDoFn
from vlnkit.io import fileio

ROW_COLUMNS = ("system", "instr_id", "path_id", "scan", "instruction")


KEY = "\x1f"  # joins system and instr_id into one key (a character no id holds)


def _scored_rows(files: list[str], label: str, seed: int, draw: int, metrics: list[str], keys: set[str]):
    """(instructions scored, which of `keys` ("<system>\x1f<instr_id>", those with outcomes) were scored,
    the `draw` sampled paths in sample order, their rows): two passes over Arrow batches, filtered by
    Arrow, the first choosing the paths with the smallest `sample_key(seed, label, path_id)`."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from vlnkit.reports.stats import sample_key

    def batches(columns):
        for path in files:
            with fileio.open_read(path) as f:
                parquet = pq.ParquetFile(f)
                names = set(parquet.schema_arrow.names)
                yield from parquet.iter_batches(batch_size=65536, columns=[c for c in columns if c in names])

    wanted = pa.array(sorted(keys), pa.string())
    count, scored, paths = 0, set(), set()
    for batch in batches(["system", "instr_id", "path_id"]):
        count += batch.num_rows
        joined = pc.binary_join_element_wise(batch.column("system"), batch.column("instr_id"), KEY)
        scored.update(pc.filter(joined, pc.is_in(joined, value_set=wanted)).to_pylist())
        paths.update(pc.unique(batch.column("path_id")).to_pylist())
    order = heapq.nsmallest(draw, sorted(paths), key=lambda p: sample_key(seed, label, p))
    rows = []
    if order:
        chosen = pa.array(order, pa.string())
        for batch in batches([*ROW_COLUMNS, *metrics]):
            rows += batch.filter(pc.is_in(batch.column("path_id"), value_set=chosen)).to_pylist()
    return count, scored, order, rows


def _carried(systems: dict[str, list[str]]):
    """From the systems' files: {(system, instr_id): human_scores} and {path_id: {"references", "scan", "path"}}
    (the longest reference list a path's records carry)."""
    from vlnkit.captioning.layouts import LayoutError, parse

    outcomes, paths = {}, {}
    for system, files in systems.items():
        for path in files:
            try:
                records = parse(fileio.read_bytes(path).decode("utf-8"), system, path)
            except LayoutError:  # the run dead-lettered this file: nothing of it was scored
                continue
            for g in records:
                if g.extra.get("human_scores"):
                    outcomes[(g.system, g.instr_id)] = g.extra["human_scores"]
                known = paths.setdefault(g.path_id, {"references": [], "scan": None, "path": None})
                if g.references and len(g.references) > len(known["references"]):
                    known["references"] = list(g.references)
                known["scan"] = known["scan"] or g.scan
                known["path"] = known["path"] or g.extra.get("path")
    return outcomes, paths


def _dataset_paths(files: list[str], references: bool, paths: dict) -> None:
    """R2R-format files' scans and paths into `paths` (where the systems' files named none); their
    instructions too when they are the run's --references."""
    from vlnkit.datasets.r2r import parse_r2r

    for path in files:
        for r in parse_r2r(fileio.read_bytes(path), path):
            if not isinstance(r, dict):
                continue
            known = paths.setdefault(str(r["path_id"]), {"references": [], "scan": None, "path": None})
            if references:
                known["references"] = list(r["instructions"])
            if not known["path"]:
                known["scan"], known["path"] = r["scan"], list(r["path"])


@dataclass
class _WriteInstructionPages(GraphDoFn):
    run: dict  # `pipelines.report_plans.instruction_plan`: summary, label, rows, systems, references, dataset
    draw: int
    seed: int
    title: str

    def process(self, _):
        from vlnkit.navigation.graph import GraphError
        from vlnkit.reports.html import FIGURES_DIR, Figure
        from vlnkit.reports.instruction_pages import (
            AGREEMENT,
            SIDE_BY_SIDE,
            SYSTEMS,
            agreement_page,
            mean_outcomes,
            metrics_of,
            side_by_side_page,
            systems_page,
        )
        from vlnkit.reports.plots import path_figure
        from vlnkit.reports.stats import drawing_spec

        run = self.run
        summary = json.loads(fileio.read_bytes(run["summary"]))
        metrics = metrics_of(summary)
        outcomes, paths = _carried(run["systems"])
        keyed = {f"{s}{KEY}{i}": scores for (s, i), scores in outcomes.items()}
        count, scored, order, rows = _scored_rows(run["rows"], run["label"], self.seed, self.draw, metrics, set(keyed))
        _dataset_paths([run["references"]] if run["references"] else [], True, paths)
        _dataset_paths(run["dataset"], False, paths)
        means = mean_outcomes((key.split(KEY)[0], keyed[key]) for key in sorted(scored))
        for system, values in (summary.get("episode_outcomes") or {}).get("means", {}).items():
            means.setdefault(system, {}).update(values)  # --outcomes: the score job's, from the run's join

        examples, drawings, failed = [], {}, []
        for k, path_id in enumerate(order):
            known = paths.get(path_id, {"references": [], "scan": None, "path": None})
            mine = [
                {**r, "human_scores": outcomes.get((r["system"], r["instr_id"]))}
                for r in rows
                if r["path_id"] == path_id
            ]
            scan = known["scan"] or next((r["scan"] for r in mine if r.get("scan")), None)
            examples.append({"path_id": path_id, "scan": scan, "references": known["references"], "rows": mine})
            if not (scan and known["path"]):
                drawings[path_id] = "the run's files name no path for it (pass the R2R file as --dataset)"
                continue
            try:
                graph = self.graphs.get(scan)
                reference = {"label": run["label"], "path_id": path_id, "scan": scan, "path": known["path"]}
                spec = drawing_spec({"reference": reference}, graph)
                png = path_figure(graph, spec)
            except (GraphError, ValueError) as exc:  # unknown scan or viewpoint
                drawings[path_id] = str(exc)
                failed.append({"scan": scan, "path_id": path_id, "reason": str(exc)})
                continue
            file = f"{FIGURES_DIR}/instructions_path_{k:02d}.png"
            drawings[path_id] = Figure(file, f"{spec['title'].splitlines()[0]}: reference path", png)

        agreement, figures = agreement_page(summary, means, f"{self.title}: metrics against wayfinding")
        files = {**figures, **{f.file: f.png for f in drawings.values() if isinstance(f, Figure)}}
        files[SYSTEMS] = systems_page(summary, f"{self.title}: instruction generators").encode("utf-8")
        files[AGREEMENT] = agreement.encode("utf-8")
        side = side_by_side_page(summary, examples, drawings, f"{self.title}: instructions side by side")
        files[SIDE_BY_SIDE] = side.encode("utf-8")
        yield {
            "files": files,
            "info": {
                "run": run["label"],
                "systems": len(summary.get("by_system", {})),
                "instructions": count,
                "outcomes": len(means),
                "paths_shown": len(examples),
                "drawings_failed": failed,
            },
        }


@dataclass
class InstructionPages(beam.PTransform):
    """A score_instructions run (`run`, as planned) -> one {"files": {relative name: bytes}, "info"}: its
    pages and figures, which the report's drawing step writes beside index.html."""

    run: dict
    connectivity_dir: str
    draw: int
    seed: int
    title: str

    def expand(self, pbegin):
        step = _WriteInstructionPages(self.connectivity_dir, self.run, self.draw, self.seed, self.title)
        return pbegin | "One" >> beam.Create([None]) | "Write" >> beam.ParDo(step)
