"""Thin PTransforms of the score_instructions job over `vlnkit.captioning`."""

from __future__ import annotations

from dataclasses import dataclass

import apache_beam as beam
import numpy as np

from transforms.deadletter import DEAD_LETTER, dead_letter
from vlnkit.io import fileio

HUMAN = "human"
STAGE = "score_instructions"


class _ReadSystemFile(beam.DoFn):
    """(system, file) -> its generated instructions as dicts; a file in no known layout is a dead letter."""

    def process(self, element):
        from vlnkit.captioning.layouts import LayoutError, parse

        system, path = element
        try:
            text = fileio.read_bytes(path).decode("utf-8")
        except Exception as exc:  # any filesystem, decompression or decoding error: the file is the dead letter
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read file ({exc})"))
            return
        try:
            records = parse(text, system, path)
        except LayoutError as error:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(STAGE, path, "<file>", str(error)))
            return
        for g in records:
            yield {
                "system": g.system,
                "instr_id": g.instr_id,
                "path_id": g.path_id,
                "scan": g.scan,
                "text": g.text,
                "references": list(g.references) if g.references is not None else None,
                "human_scores": g.extra.get("human_scores"),
                "source": path,
            }


class _Check(beam.DoFn):
    """A record's instruction and references, or a dead letter saying why not (nothing dropped)."""

    def process(self, r, table):
        def dead(reason):
            return beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(STAGE, r["source"], r["instr_id"], reason))

        if not isinstance(r["text"], str):
            yield dead(f"instruction is not a string ({type(r['text']).__name__})")
            return
        if not r["text"].strip():
            yield dead("instruction is empty")
            return
        refs = r["references"]
        if table is not None:
            refs = table.get(r["path_id"])
            if refs is None:
                yield dead(f"path_id {r['path_id']} names no path of --references")
                return
        if not refs or not all(isinstance(x, str) for x in refs):
            yield dead(f"no references for path {r['path_id']}")
            return
        yield {**r, "references": list(refs)}


def _human_rows(path_id, records):
    """The human row: each reference of the path against the others (leave-one-out)."""
    first = next(iter(records))
    refs = first["references"]
    if len(refs) < 2:
        yield beam.pvalue.TaggedOutput(
            DEAD_LETTER, dead_letter(STAGE, first["source"], path_id, "human row: the path has one reference")
        )
        return
    for k, ref in enumerate(refs):
        yield {
            **first,
            "system": HUMAN,
            "instr_id": f"{path_id}_ref{k}",
            "text": ref,
            "references": refs[:k] + refs[k + 1 :],
            "human_scores": None,
        }


@dataclass
class ReadChecked(beam.PTransform):
    """Systems' files -> checked records (+ the human row) and dead letters."""

    systems: dict
    references: dict | None
    human_baseline: bool

    def expand(self, pipeline):
        pairs = [(system, f) for system, files in self.systems.items() for f in files]
        read = (
            pipeline
            | "SystemFiles" >> beam.Create(pairs)
            | "Read" >> beam.ParDo(_ReadSystemFile()).with_outputs(DEAD_LETTER, main="records")
        )
        table = self.references
        checked = read["records"] | "Check" >> beam.ParDo(_Check(), table).with_outputs(DEAD_LETTER, main="ok")
        dead = [read[DEAD_LETTER], checked[DEAD_LETTER]]
        records = checked["ok"]
        if self.human_baseline:
            human = (
                records
                | "ByPath" >> beam.Map(lambda r: (r["path_id"], r))
                | "OnePerPath" >> beam.combiners.Sample.FixedSizePerKey(1)
                | "LeaveOneOut" >> beam.FlatMapTuple(_human_rows).with_outputs(DEAD_LETTER, main="rows")
            )
            dead.append(human[DEAD_LETTER])
            records = (records, human["rows"]) | "WithHuman" >> beam.Flatten()
        return {"records": records, DEAD_LETTER: dead}


def _tokenized(batch):
    from vlnkit.captioning.ptb import tokenize

    system, records = batch
    return system, [
        {**r, "tokens": tokenize(r["text"]), "ref_tokens": [tokenize(x) for x in r["references"]]} for r in records
    ]


class _DfCombine(beam.CombineFn):
    """A system's CIDEr-D document frequencies and size, added up from its batches."""

    def create_accumulator(self):
        return ({}, 0)

    def add_input(self, acc, batch):
        from vlnkit.captioning.batches import batch_document_frequencies, merge_counts

        counts = batch_document_frequencies([r["tokens"] for r in batch], [r["ref_tokens"] for r in batch])
        return merge_counts(acc[0], counts), acc[1] + len(batch)

    def merge_accumulators(self, accs):
        from vlnkit.captioning.batches import merge_counts

        table, n = {}, 0
        for t, k in accs:
            table, n = merge_counts(table, t), n + k
        return table, n

    def extract_output(self, acc):
        return acc


@dataclass
class _ScoreBatch(beam.DoFn):
    replicates: int
    seed: int
    meteor: bool = False
    spice: bool = False
    followed: bool = False  # --outcomes: each batch's ids and metrics as one Arrow table ("scored"), for the join

    def setup(self):
        from vlnkit.captioning.meteor import Meteor
        from vlnkit.captioning.spice import Spice

        self._meteor = Meteor() if self.meteor else None  # one JVM per worker, many batches
        self._spice = Spice() if self.spice else None  # one parse cache per worker; one JVM call per batch

    def teardown(self):
        for jar in (getattr(self, "_meteor", None), getattr(self, "_spice", None)):
            if jar is not None:
                jar.close()

    def process(self, batch, frequencies):
        from vlnkit.captioning.batches import corpus_sums, score_batch
        from vlnkit.captioning.intervals import path_weights
        from vlnkit.comparison.resampling import episode_keys

        system, records = batch
        table, size = frequencies[system]
        scores = score_batch([r["tokens"] for r in records], [r["ref_tokens"] for r in records], table, size)
        paths = [r["path_id"] for r in records]
        weights = path_weights(paths, self.replicates, self.seed) if self.replicates else None
        sums = {"point": corpus_sums(scores)}
        if self._meteor is not None:
            stats = self._meteor.statistics(
                [" ".join(r["tokens"]) for r in records], [[" ".join(x) for x in r["ref_tokens"]] for r in records]
            )
            scores["meteor"] = np.array(self._meteor.evaluate(stats))
            sums["point"]["meteor_stats"] = stats.T @ np.ones((len(records), 1))
        if self._spice is not None:
            scores["spice"] = _spice_scores(self._spice, records)
            sums["point"]["spice"] = scores["spice"] @ np.ones((len(records), 1))
        if weights is not None:
            sums["replicates"] = corpus_sums(scores, weights)
            if self._meteor is not None:
                sums["replicates"]["meteor_stats"] = stats.T @ weights
            if self._spice is not None:  # a resampled mean, as ROUGE-L's
                sums["replicates"]["spice"] = scores["spice"] @ weights
        digest = int(np.sum(episode_keys(paths).astype(np.uint64), dtype=np.uint64))
        yield beam.pvalue.TaggedOutput("sums", (system, (sums, digest)))
        if self.followed:
            yield beam.pvalue.TaggedOutput("scored", _scored_table(system, records, scores))
        for i, r in enumerate(records):
            row = {k: r[k] for k in ("system", "instr_id", "path_id", "scan")}
            row.update(instruction=r["text"], tokens=r["tokens"], references=len(r["references"]))
            row.update({k: v[i].item() for k, v in scores.items()})
            row.setdefault("meteor", None)
            row.setdefault("spice", None)
            if r.get("human_scores"):
                yield beam.pvalue.TaggedOutput("outcomes", {**row, "human_scores": r["human_scores"]})
            yield row


def _scored_table(system: str, records: list[dict], scores: dict[str, np.ndarray]):
    """A batch's instructions as one Arrow table: ids, path, every metric and BLEU's statistics (columns
    from the batch's arrays, not rows)."""
    import pyarrow as pa

    n = len(records)
    columns = {
        "system": pa.array([system] * n, pa.string()),
        "instr_id": pa.array([r["instr_id"] for r in records], pa.string()),
        "path_id": pa.array([r["path_id"] for r in records], pa.string()),
    }
    columns.update({k: pa.array(np.asarray(v, np.float64)) for k, v in scores.items()})
    return pa.table(columns)


def _spice_scores(spice, records) -> np.ndarray:
    """Per-item SPICE F of a batch in one jar call, the items in instr_id order as pycocoevalcap's wrapper
    sorts its ids (positions as the jar's image ids, so repeated ids cannot merge)."""
    order = sorted(range(len(records)), key=lambda i: records[i]["instr_id"])
    _, f = spice.score(
        [" ".join(records[i]["tokens"]) for i in order],
        [[" ".join(x) for x in records[i]["ref_tokens"]] for i in order],
    )
    out = np.empty(len(records))
    out[order] = f
    return out


class _SumCombine(beam.CombineFn):
    """Per system: the batches' corpus sums (point and replicates) and the path-set digest, added."""

    def create_accumulator(self):
        return None

    def add_input(self, acc, value):
        return value if acc is None else self.merge_accumulators([acc, value])

    def merge_accumulators(self, accs):
        accs = [a for a in accs if a is not None]
        if not accs:
            return None
        sums, digest = accs[0]
        out = {part: {k: v.copy() for k, v in cols.items()} for part, cols in sums.items()}
        for s, d in accs[1:]:
            for part, cols in s.items():
                for k, v in cols.items():
                    out[part][k] += v
            digest = (digest + d) % (1 << 64)
        return out, digest

    def extract_output(self, acc):
        return acc


@dataclass
class ScoreSystems(beam.PTransform):
    """Checked records -> per-instruction rows, rows with human outcomes, and each system's corpus sums."""

    replicates: int
    seed: int
    meteor: bool = False
    spice: bool = False
    followed: bool = False
    batch_size: int = 512

    def expand(self, records):
        batches = (
            records
            | "BySystem" >> beam.Map(lambda r: (r["system"], r))
            | "Batch" >> beam.GroupIntoBatches(self.batch_size)
            | "Tokenize" >> beam.Map(_tokenized)
        )
        frequencies = batches | "DocumentFrequencies" >> beam.CombinePerKey(_DfCombine())
        scored = batches | "Score" >> beam.ParDo(
            _ScoreBatch(self.replicates, self.seed, self.meteor, self.spice, self.followed),
            beam.pvalue.AsDict(frequencies),
        ).with_outputs("sums", "outcomes", "scored", main="rows")
        sums = scored["sums"] | "CorpusSums" >> beam.CombinePerKey(_SumCombine())
        return {"rows": scored["rows"], "outcomes": scored["outcomes"], "sums": sums, "scored": scored["scored"]}


class _ReadEpisodes(beam.DoFn):
    """(system or None, file) -> the file's episode rows as Arrow tables; a file that is not episode rows
    is one dead letter naming it."""

    def __init__(self, metrics: tuple[str, ...]):
        self.metrics = metrics

    def process(self, element):
        from vlnkit.captioning.outcomes import OutcomeFileError, episode_batches

        system, path = element
        try:
            yield from episode_batches(path, system, self.metrics)
        except OutcomeFileError as error:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(OUTCOMES, path, "<file>", str(error)))


OUTCOMES = "outcomes"  # the dead-letter stage of --outcomes: files and rows that joined nothing


def _join(_, scored, episodes, metrics, files):
    """The join of every scored instruction with the episode rows (one step: both sides are small by
    nature: one row per followed instruction); yields {"rows", "metrics", "counts"} and the dead letters."""
    import pyarrow as pa

    from vlnkit.captioning.outcomes import join_outcomes, system_means

    rows = sum(t.num_rows for t in episodes)
    counts = {"files": files, "metrics": list(metrics), "episode_rows": rows, "joined": 0}
    if scored and episodes:
        joined, lost = join_outcomes(pa.concat_tables(scored), pa.concat_tables(episodes))
        counts["joined"] = joined.num_rows
        for u in lost:
            counts[u.kind] = counts.get(u.kind, 0) + 1
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(OUTCOMES, u.source, u.record, u.reason))
        yield {"rows": joined.to_pylist(), "metrics": list(metrics), "counts": counts, "means": system_means(joined)}
        return
    yield {"rows": [], "metrics": list(metrics), "counts": counts, "means": {}}


@dataclass
class JoinOutcomes(beam.PTransform):
    """--outcomes: the score job's episode files -> one {"rows", "metrics", "counts"} (the scored
    instructions joined to their episode outcomes) and dead letters for every row that joined nothing."""

    files: list  # [(system or None, path)]
    metrics: tuple

    def expand(self, scored):
        pipeline = scored.pipeline
        read = (
            pipeline
            | "OutcomeFiles" >> beam.Create(self.files)
            | "ReadEpisodes" >> beam.ParDo(_ReadEpisodes(tuple(self.metrics))).with_outputs(DEAD_LETTER, main="tables")
        )
        joined = (
            pipeline
            | "OneJoin" >> beam.Create([None])
            | "Join"
            >> beam.ParDo(
                _join,
                beam.pvalue.AsList(scored),
                beam.pvalue.AsList(read["tables"]),
                tuple(self.metrics),
                len(self.files),
            ).with_outputs(DEAD_LETTER, main="joined")
        )
        return {"joined": joined["joined"], DEAD_LETTER: [read[DEAD_LETTER], joined[DEAD_LETTER]]}
