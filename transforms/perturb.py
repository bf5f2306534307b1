"""Hard-negative perturbations as PTransforms (logic in `vlnkit.perturbations.instructions`,
`vlnkit.perturbations.trajectories`, `vlnkit.perturbations.compat`).

Instruction perturbations run on batches: each worker loads the spaCy pipeline once
(`vlnkit.perturbations.nlp.worker_pipeline`) and parses a whole batch with `nlp.pipe`; every requested method
reuses the parse. Trajectory perturbations read graphs through the worker's graph store. Every
choice is seeded from (seed, method, instr_id, variant), so the output is the same on any runner.
Besides rows, both emit {counter: n} dicts for the job summary: per method, the instructions it
applied to, the rows emitted, and the reasons it did not apply.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import partial

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.gather import flatten
from transforms.graphs import GraphDoFn
from transforms.progress import Progress
from vlnkit.datasets.languages import primary_language, record_instructions
from vlnkit.datasets.r2r import record_label
from vlnkit.navigation.graph import GraphError
from vlnkit.perturbations import instructions as instruction_perturbations
from vlnkit.perturbations import trajectories as trajectory_perturbations
from vlnkit.perturbations.compat import (
    INSTRUCTION_METHODS,
    TRAJECTORY_METHODS,
    NotApplicable,
    perturbation_row,
    record_rng,
)
from vlnkit.perturbations.nlp import LANGUAGE as ENGLISH
from vlnkit.perturbations.nlp import (
    ParseFailure,
    language_support,
    language_tokenizer,
    parse_batch,
    worker_pipeline,
)

STATS = "stats"


def instruction_items(record: dict) -> list[dict]:
    """One item per instruction of an R2R or RxR record: {source_instr_id, scan, path, instruction, language}
    (+ bookkeeping); addresses and languages as `vlnkit.datasets.languages.record_instructions` gives them."""
    return [
        {
            "source_instr_id": instr_id,
            "scan": record["scan"],
            "path": list(record["path"]),
            "instruction": text,
            "language": language,
            "_source": record.get("_source", ""),
            "_index": record.get("_index"),
        }
        for instr_id, text, language in record_instructions(record)
    ]


@dataclass
class _Perturber:
    """Runs the requested methods on one item and keeps the per-method tallies (shared by both DoFns)."""

    methods: tuple[str, ...]
    per_instruction: int
    seed: int
    namespace: str  # of the per-method counters

    def start(self):
        self.applied = {m: Metrics.counter(self.namespace, f"{m}_applied") for m in self.methods}
        self.skipped = {m: Metrics.counter(self.namespace, f"{m}_not_applicable") for m in self.methods}

    def run(self, item: dict, perturb, stats: dict) -> list[dict]:
        """perturb(method, rng) -> result; rows for every distinct result, tallies into `stats`: per method
        ("<method>.applied", ...) and per method and language ("language.<tag>.<method>.applied", ...)."""
        rows = []
        per_language = f"language.{item['language']}."
        for method in self.methods:
            seen, reasons = set(), []
            for variant in range(self.per_instruction):
                rng = record_rng(self.seed, method, item["source_instr_id"], variant)
                result = perturb(method, rng)
                if isinstance(result, NotApplicable):
                    reasons.append(result.reason)
                    continue
                key = getattr(result, "text", None) or tuple(getattr(result, "path", ()))
                if key in seen:
                    _inc2(stats, per_language, f"{method}.duplicate")
                    continue
                seen.add(key)
                rows.append(perturbation_row(item, result, variant))
            _inc2(stats, per_language, f"{method}.emitted", len(seen))
            if seen:
                _inc2(stats, per_language, f"{method}.applied")
                self.applied[method].inc()
            else:  # the first reason is the one every variant met (they differ only by chance, e.g. dead ends)
                _inc2(stats, per_language, f"{method}.not_applicable.{reasons[0]}")
                self.skipped[method].inc()
        return rows


def _inc(stats: dict, key: str, n: int = 1) -> None:
    stats[key] = stats.get(key, 0) + n


def _inc2(stats: dict, prefix: str, key: str, n: int = 1) -> None:
    """Count `key` over all instructions and under `prefix` (one language's)."""
    _inc(stats, key, n)
    _inc(stats, prefix + key, n)


def _perturb_instruction(doc, language: str, method: str, rng):
    """One instruction method on a parsed instruction in `language`, or why it does not apply there."""
    why = language_support(method, language)
    if why is not None:
        return NotApplicable(method, why)
    perturb = instruction_perturbations.PERTURB[method]
    if primary_language(language) != ENGLISH:  # only direction swap applies (language_support): its lexicon
        return perturb(doc, rng, language=language)
    return perturb(doc, rng)


@dataclass
class _PerturbInstructionBatch(beam.DoFn):
    """A batch of instruction items -> perturbed-instruction rows (one `nlp.pipe` pass per batch).

    An instruction that cannot be parsed (longer than the pipeline's max_length, a component error)
    or perturbed (any exception) becomes a dead letter naming its file, record and reason; the rest
    of the batch is still parsed and perturbed (`vlnkit.perturbations.nlp.parse_batch`).
    """

    model: str | None
    perturber: _Perturber
    pipe_batch_size: int

    def setup(self):
        self.nlp = worker_pipeline(self.model, self.perturber.methods)
        self.perturber.start()
        self.parsed = Metrics.counter("perturb_instruction", "instructions_parsed")
        self.bad = Metrics.counter("perturb_instruction", "dead_letter")
        self.progress = Progress("perturb: instructions parsed")

    def process(self, batch):
        self.progress.tick(len(batch))
        stats: dict = {"instructions_parsed": len(batch)}
        docs = self._parse(batch)
        for item, doc in zip(batch, docs):
            if isinstance(doc, ParseFailure):
                yield self._dead(item, "parse", doc.reason)
                continue
            item_stats: dict = {}
            try:
                rows = self.perturber.run(item, partial(_perturb_instruction, doc, item["language"]), item_stats)
            except Exception as exc:  # one bad record never takes the batch down
                yield self._dead(item, "perturb", f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
                continue
            for key, n in item_stats.items():
                _inc(stats, key, n)
            yield from rows
        self.parsed.inc(len(batch))
        yield beam.pvalue.TaggedOutput(STATS, stats)

    def _parse(self, batch) -> list:
        """One Doc (or ParseFailure) per item: English instructions by the job's pipeline, the others by
        their language's tokenizer, and None for an instruction no requested method applies to."""
        docs: list = [None] * len(batch)
        groups: dict[str, list[int]] = defaultdict(list)
        for k, item in enumerate(batch):
            language = item["language"]
            primary = primary_language(language)
            if primary == ENGLISH or any(language_support(m, language) is None for m in self.perturber.methods):
                groups[primary].append(k)
        for primary, ks in groups.items():
            nlp = self.nlp if primary == ENGLISH else language_tokenizer(primary)
            parsed = parse_batch(nlp, [batch[k]["instruction"] for k in ks], self.pipe_batch_size)
            for k, doc in zip(ks, parsed):
                docs[k] = doc
        return docs

    def _dead(self, item: dict, stage: str, reason: str):
        self.bad.inc()
        label = f"#{item.get('_index', '?')} (instr_id={item['source_instr_id']!r})"
        return beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(stage, item.get("_source", ""), label, reason))


@dataclass
class _PerturbTrajectories(GraphDoFn):
    """An R2R record -> perturbed-trajectory rows for each of its instructions (graph looked up once)."""

    perturber: _Perturber

    def setup(self):
        super().setup()
        self.perturber.start()
        self.bad = Metrics.counter("perturb_trajectory", "dead_letter")
        self.progress = Progress("perturb: trajectories perturbed")

    def process(self, record):
        self.progress.tick()
        try:
            graph = self.graphs.get(record["scan"])
            graph.indices(record["path"])
        except GraphError as exc:
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter("graph", record.get("_source", ""), record_label(record), str(exc))
            )
            return
        funcs = trajectory_perturbations.PERTURB
        stats: dict = {"paths": 1}
        for item in instruction_items(record):
            path = item["path"]
            yield from self.perturber.run(item, lambda m, rng, p=path: funcs[m](graph, p, rng), stats)
        yield beam.pvalue.TaggedOutput(STATS, stats)


@dataclass
class PerturbInstructions(beam.PTransform):
    """Instruction items -> PERTURBATIONS rows of the instruction family, dead letters, summary tallies.

    `methods` may name trajectory methods too: this family runs its own."""

    methods: tuple[str, ...]
    model: str | None
    per_instruction: int = 1
    seed: int = 0
    batch_size: int = 512

    def expand(self, items):
        methods = tuple(m for m in self.methods if m in INSTRUCTION_METHODS)
        perturber = _Perturber(methods, self.per_instruction, self.seed, "perturb_instruction")
        out = (
            items
            | "Batch" >> beam.BatchElements(min_batch_size=min(64, self.batch_size), max_batch_size=self.batch_size)
            | "Perturb"
            >> beam.ParDo(
                # nlp.pipe minibatches of 64: as fast as 256 with the small English pipeline and about
                # 110 MB less peak memory (benchmarks/RESULTS.md, instruction perturbations).
                _PerturbInstructionBatch(self.model, perturber, 64)
            ).with_outputs(STATS, DEAD_LETTER, main="rows")
        )
        return {"rows": out.rows, STATS: out[STATS], DEAD_LETTER: out[DEAD_LETTER]}


@dataclass
class PerturbTrajectories(beam.PTransform):
    """R2R records -> PERTURBATIONS rows of the trajectory family, dead letters, and summary tallies.

    `methods` may name instruction methods too: this family runs its own."""

    connectivity_dir: str
    methods: tuple[str, ...]
    per_instruction: int = 1
    seed: int = 0

    def expand(self, records):
        methods = tuple(m for m in self.methods if m in TRAJECTORY_METHODS)
        perturber = _Perturber(methods, self.per_instruction, self.seed, "perturb_trajectory")
        out = records | "Perturb" >> beam.ParDo(_PerturbTrajectories(self.connectivity_dir, perturber)).with_outputs(
            STATS, DEAD_LETTER, main="rows"
        )
        return {"rows": out.rows, STATS: out[STATS], DEAD_LETTER: out[DEAD_LETTER]}


@dataclass
class Perturb(beam.PTransform):
    """R2R records -> every requested perturbation (both families) as PERTURBATIONS rows.

    Returns {"rows", "stats", "dead_letter"}; a family with no requested method adds nothing.
    """

    methods: tuple[str, ...]
    model: str | None
    connectivity_dir: str | None
    per_instruction: int = 1
    seed: int = 0

    def expand(self, records):
        rows, stats, dead = [], [], []
        if any(m in INSTRUCTION_METHODS for m in self.methods):
            items = records | "Instructions" >> beam.FlatMap(instruction_items)
            ins = items | "PerturbInstructions" >> PerturbInstructions(
                self.methods, self.model, self.per_instruction, self.seed
            )
            rows.append(ins["rows"])
            stats.append(ins[STATS])
            dead.append(ins[DEAD_LETTER])
        if any(m in TRAJECTORY_METHODS for m in self.methods):
            traj = records | "PerturbTrajectories" >> PerturbTrajectories(
                self.connectivity_dir, self.methods, self.per_instruction, self.seed
            )
            rows.append(traj["rows"])
            stats.append(traj[STATS])
            dead.append(traj[DEAD_LETTER])
        p = records.pipeline
        return {
            "rows": flatten(rows, p, "AllRows"),
            STATS: flatten(stats, p, "AllStats"),
            DEAD_LETTER: flatten(dead, p, "AllDeadLetters"),
        }
