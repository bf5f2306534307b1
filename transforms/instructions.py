"""Thin PTransforms of the score_instructions job over `vlnkit.captioning`."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import apache_beam as beam
import numpy as np

from transforms.deadletter import DEAD_LETTER, dead_letter
from vlnkit.io import fileio

HUMAN = "human"
STAGE = "score_instructions"
FILE, BATCH = "file", "batch"  # what _ReadBatches is given: a system's file, or a batch made upstream


def _checked(r: dict, table: dict | None) -> tuple[dict | None, str | None]:
    """A record with its references, or None and why it cannot be scored (nothing dropped)."""
    if not isinstance(r["text"], str):
        return None, f"instruction is not a string ({type(r['text']).__name__})"
    if not r["text"].strip():
        return None, "instruction is empty"
    refs = r["references"]
    if table is not None:
        refs = table.get(r["path_id"])
        if refs is None:
            return None, f"path_id {r['path_id']} names no path of --references"
    if not refs or not all(isinstance(x, str) for x in refs):
        return None, f"no references for path {r['path_id']}"
    return {**r, "references": list(refs)}, None


class _ReadBatches(beam.DoFn):
    """(FILE, (system, file)) -> its checked instructions as (system, [records]) batches of at most `batch_size`
    (a multi-system file's systems apart); a record that cannot be scored, or a file in no known layout, is a
    dead letter when `dead_letters` (the scoring pass), and is left out silently by the frequency pass,
    which reads the same files again rather than keep every batch until the frequencies are known.
    (BATCH, (system, [records])) is a batch made upstream (the human row's), passed on as it is: files and
    such batches enter one step together, so no runner-executed Flatten has to hold every batch.)"""

    def __init__(self, table: dict | None, batch_size: int, dead_letters: bool, reserved: str | None = None):
        super().__init__()
        self.table = table
        self.batch_size = batch_size
        self.dead_letters = dead_letters
        self.reserved = reserved  # the human row's system name, when there is one: no file's system may take it

    def process(self, element):
        from vlnkit.captioning.layouts import LayoutError, parse

        kind, value = element
        if kind == BATCH:  # the human row's batches, made upstream, pass through
            yield value
            return
        system, path = value
        try:
            text = fileio.read_bytes(path).decode("utf-8")
        except Exception as exc:  # any filesystem, decompression or decoding error: the file is the dead letter
            if self.dead_letters:
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read file ({exc})"))
            return
        try:
            records = parse(text, system, path)
        except LayoutError as error:
            if self.dead_letters:
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(STAGE, path, "<file>", str(error)))
            return
        del text
        pending: dict[str, list] = {}
        for g in records:
            r = {
                "system": g.system,
                "instr_id": g.instr_id,
                "path_id": g.path_id,
                "scan": g.scan,
                "text": g.text,
                "references": list(g.references) if g.references is not None else None,
                "human_scores": g.extra.get("human_scores"),
                "source": path,
            }
            ok, reason = _checked(r, self.table)
            if ok is not None and r["system"] == self.reserved:  # its frequencies would merge with the human row's
                ok, reason = None, f"system {r['system']!r} is the name of the --human_baseline row: rename the system"
            if ok is None:
                if self.dead_letters:
                    yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(STAGE, path, r["instr_id"], reason))
                continue
            batch = pending.setdefault(ok["system"], [])
            batch.append(ok)
            if len(batch) >= self.batch_size:
                yield ok["system"], pending.pop(ok["system"])
        yield from pending.items()


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


def _path_record(batch):
    """(path_id, the fields a human row needs) of each record of a batch."""
    _, records = batch
    for r in records:
        yield r["path_id"], {k: r[k] for k in ("path_id", "scan", "references", "source")}


@dataclass
class ReadChecked(beam.PTransform):
    """Systems' files -> checked (system, [records]) batches, the files read twice: "records" for scoring
    (the files' batches and the human row's, with the dead letters), "frequency_records" (the files') and
    "human" (the human row's batches, --human_baseline) for CIDEr-D's document frequencies. Reading twice
    keeps every runner from holding a whole set's batches while its frequencies are summed (an in-process
    runner holds a PCollection in memory when a later step reads it after a side input, or a Flatten
    gathers it)."""

    systems: dict
    references: dict | None
    human_baseline: bool
    batch_size: int = 2048

    def expand(self, pipeline):
        pairs = [(FILE, (system, f)) for system, files in self.systems.items() for f in files]
        reserved = HUMAN if self.human_baseline else None
        again = (
            pipeline
            | "SystemFilesAgain" >> beam.Create(pairs)
            | "ReadForFrequencies" >> beam.ParDo(_ReadBatches(self.references, self.batch_size, False, reserved))
        )
        dead = []
        units = pipeline | "SystemFiles" >> beam.Create(pairs)
        human = pipeline | "NoHuman" >> beam.Create([])
        if self.human_baseline:
            rows = (
                again
                | "ByPath" >> beam.FlatMap(_path_record)
                | "OnePerPath" >> beam.combiners.Sample.FixedSizePerKey(1)
                | "LeaveOneOut" >> beam.FlatMapTuple(_human_rows).with_outputs(DEAD_LETTER, main="rows")
            )
            dead.append(rows[DEAD_LETTER])
            human = (
                rows["rows"]
                | "HumanBatches" >> beam.BatchElements(self.batch_size, self.batch_size)
                | "HumanSystem" >> beam.Map(lambda rs: (HUMAN, rs))
            )
            # small elements flattened (file names, and batches whose number grows with the paths only)
            units = (units, human | "AsUnits" >> beam.Map(lambda b: (BATCH, b))) | "WithHuman" >> beam.Flatten()
        read = units | "Read" >> beam.ParDo(
            _ReadBatches(self.references, self.batch_size, True, reserved)
        ).with_outputs(DEAD_LETTER, main="records")
        dead.insert(0, read[DEAD_LETTER])
        return {"records": read["records"], "frequency_records": again, "human": human, DEAD_LETTER: dead}


@functools.lru_cache(maxsize=1 << 16)
def _reference_tokens(text: str) -> tuple[str, ...]:
    """A reference's tokens, cached per process: a path's references come with each of its instructions
    (every system's, every sample's), and tokenizing is the slowest step per string."""
    from vlnkit.captioning.ptb import tokenize

    return tuple(tokenize(text))


def _tokenized(batch):
    from vlnkit.captioning.ptb import tokenize

    system, records = batch
    return system, [
        {**r, "tokens": tokenize(r["text"]), "ref_tokens": [_reference_tokens(x) for x in r["references"]]}
        for r in records
    ]


def _batch_frequencies(batch):
    """(system, [records]) -> (system, (its references' n-gram frequency table, items))."""
    from vlnkit.captioning.batches import batch_document_frequencies

    system, records = batch
    return system, (
        batch_document_frequencies([[_reference_tokens(x) for x in r["references"]] for r in records]),
        len(records),
    )


class _DfCombine(beam.CombineFn):
    """A system's CIDEr-D document frequencies and size, added up from its batches' Arrow tables: the
    accumulator is bounded by the system's distinct n-grams (pending tables are summed by Arrow's group-by
    once they hold more rows than `pending_rows` plus the last sum), not by its items."""

    pending_rows = 1 << 20

    def create_accumulator(self):
        return [], 0, 0  # tables, their rows since the last sum, items

    def _add(self, tables, rows, n, more, more_rows, more_n):
        from vlnkit.captioning.batches import merge_frequencies

        tables, rows = tables + more, rows + more_rows
        if len(tables) > 1 and rows > self.pending_rows + tables[0].num_rows:
            tables = [merge_frequencies(tables)]
            rows = 0
        return tables, rows, n + more_n

    def add_input(self, acc, value):
        table, n = value
        return self._add(*acc, [table], table.num_rows, n)

    def merge_accumulators(self, accs):
        out = self.create_accumulator()
        for acc in accs:
            out = self._add(*out, *acc)
        return out

    def extract_output(self, acc):
        from vlnkit.captioning.batches import merge_frequencies

        return merge_frequencies(acc[0]), acc[2]


@dataclass
class _ScoreBatch(beam.DoFn):
    replicates: int
    seed: int
    meteor: bool = False
    spice: bool = False
    followed: bool = False  # --outcomes: each batch's ids and metrics as one Arrow table ("scored"), for the join
    spice_cache: str | None = None  # --spice_cache: a local folder whose slots keep SPICE's parses across runs

    def setup(self):
        from vlnkit.captioning.meteor import Meteor
        from vlnkit.captioning.spice import Spice

        self._meteor = Meteor.shared() if self.meteor else None  # the worker's one JVM, kept after teardown
        # one parse cache per worker (its own slot of --spice_cache, else a fresh folder); one JVM call per batch
        self._spice = None
        if self.spice:
            self._spice = Spice.in_slot(self.spice_cache) if self.spice_cache else Spice()
        self._lookups: dict[str, tuple] = {}  # system -> (its frequency table, that table as a dict)

    def _lookup(self, system: str, table) -> dict[str, int]:
        """The system's frequency table as a dict, built once per worker (the side input is the same
        object for every batch)."""
        from vlnkit.captioning.batches import frequency_lookup

        held = self._lookups.get(system)
        if held is None or held[0] is not table:
            held = self._lookups[system] = (table, frequency_lookup(table))
        return held[1]

    def teardown(self):
        if getattr(self, "_spice", None) is not None:
            self._spice.close()

    def process(self, batch, frequencies):
        from vlnkit.captioning.batches import corpus_sums, score_batch
        from vlnkit.captioning.intervals import path_weights
        from vlnkit.comparison.resampling import episode_keys

        system, records = _tokenized(batch)
        table, size = frequencies[system]
        scores = score_batch(
            [r["tokens"] for r in records], [r["ref_tokens"] for r in records], self._lookup(system, table), size
        )
        paths = [r["path_id"] for r in records]
        weights = path_weights(paths, self.replicates, self.seed) if self.replicates else None
        sums = {"point": corpus_sums(scores)}
        stats = None  # METEOR's per-item statistics (the agreement table's system level sums them)
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
            yield beam.pvalue.TaggedOutput("scored", _scored_table(system, records, scores, stats))
        columns = {k: v.tolist() for k, v in scores.items()}
        rows = []
        for i, r in enumerate(records):
            row = {k: r[k] for k in ("system", "instr_id", "path_id", "scan")}
            row.update(instruction=r["text"], tokens=r["tokens"], references=len(r["references"]))
            row.update({k: v[i] for k, v in columns.items()})
            row.setdefault("meteor", None)
            row.setdefault("spice", None)
            if r.get("human_scores"):
                extra = {} if stats is None else {"meteor_stats": stats[i].tolist()}
                yield beam.pvalue.TaggedOutput("outcomes", {**row, **extra, "human_scores": r["human_scores"]})
            rows.append(row)
        yield rows


def _scored_table(system: str, records: list[dict], scores: dict[str, np.ndarray], meteor_stats=None):
    """A batch's instructions as one Arrow table: ids, path, every metric and BLEU's statistics (columns
    from the batch's arrays, not rows), and METEOR's per-item statistics (a list column) when computed."""
    import pyarrow as pa

    n = len(records)
    columns = {
        "system": pa.array([system] * n, pa.string()),
        "instr_id": pa.array([r["instr_id"] for r in records], pa.string()),
        "path_id": pa.array([r["path_id"] for r in records], pa.string()),
    }
    columns.update({k: pa.array(np.asarray(v, np.float64)) for k, v in scores.items()})
    if meteor_stats is not None:
        flat = pa.array(np.ascontiguousarray(meteor_stats, np.float64).ravel())
        columns["meteor_stats"] = pa.FixedSizeListArray.from_arrays(flat, meteor_stats.shape[1])
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
    """`ReadChecked`'s batches -> per-instruction rows (in lists of a batch), rows with human outcomes, each
    system's corpus sums, and (`followed`) each batch's scores as an Arrow table.

    Two passes, nothing of a whole set in one place: each system's document frequencies are summed in Beam
    from its batches' Arrow tables (a combiner; the result is bounded by the set's distinct n-grams), then
    every batch is scored with them as a side input, and its corpus sums are combined per system."""

    replicates: int
    seed: int
    meteor: bool = False
    spice: bool = False
    followed: bool = False
    spice_cache: str | None = None

    def expand(self, read):
        # each system's frequencies combined before anything is flattened: a Flatten that the runner executes
        # (the in-process one does) holds its inputs whole, and these are only one table per system
        of_files = (
            read["frequency_records"]
            | "BatchFrequencies" >> beam.Map(_batch_frequencies)
            | "DocumentFrequencies" >> beam.CombinePerKey(_DfCombine())
        )
        of_human = (
            read["human"]
            | "HumanBatchFrequencies" >> beam.Map(_batch_frequencies)
            | "HumanDocumentFrequencies" >> beam.CombinePerKey(_DfCombine())
        )
        frequencies = (of_files, of_human) | "Frequencies" >> beam.Flatten()
        scored = read["records"] | "Score" >> beam.ParDo(
            _ScoreBatch(self.replicates, self.seed, self.meteor, self.spice, self.followed, self.spice_cache),
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
