"""Reading the score job's inputs as bucketed columnar batches: one step for prediction and dataset files.

`ReadScoringInputs(agents, dataset_files, connectivity_dir, buckets)`: PBegin -> {"batches": (bucket,
PredictionBatch | ReferenceBatch), "dead_letter": dicts, "totals": per-agent counter dicts}. Each file is
read by `vlnkit.scoring.reading` (the rules live there); with `range_bytes`, a plain JSON Lines file is
first planned as byte ranges that the workers read in parallel. Both kinds go through one read step so
that the join's shuffle takes them straight from it (a Flatten of two read steps cost a copy of every
batch on the portable runners).

`ReferenceBatchesFromRecords(connectivity_dir, buckets)`: record dicts (another step's output, e.g.
`JoinR4R`) -> the same (bucket, ReferenceBatch) pieces, so scoring can follow a join with no file between.
"""

from __future__ import annotations

import threading
import typing
from dataclasses import dataclass, field

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.coders import BulkCoder  # noqa: F401 -- registers the coder of the declared batches
from transforms.deadletter import DEAD_LETTER
from transforms.graphs import worker_graph_store
from transforms.worker_cache import per_worker
from vlnkit.datasets.buckets import split_by_bucket
from vlnkit.datasets.columns import CompactBatch, RefusedPredictions, RefusedReferences, Vocabulary
from vlnkit.datasets.formats import R2R, RXR_GUIDE_FORMAT, items_format
from vlnkit.datasets.json_chunks import RANGE_BYTES, plan_line_ranges
from vlnkit.datasets.reference_batches import reference_batch
from vlnkit.datasets.trajectories import is_parquet
from vlnkit.evaluation.score_summary import agent_key
from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError
from vlnkit.scoring.reading import dataset_ranks, in_buckets, read_predictions, read_references
from vlnkit.scoring.task import R2R_TASK, Task, TaskOptions

TOTALS = "totals"
FILE_DEAD_LETTERS = "file_dead_letters"  # per agent: dead letters of a whole file, which name no record
RECORDS_SOURCE = "<records>"
BUCKETED = typing.Tuple[int, CompactBatch]  # noqa: UP006 -- what a reader gives: (bucket, batch)
COMPRESSED = (".gz", ".bz2")  # read whole: a compressed stream cannot seek to a byte range


def worker_vocabulary(connectivity_dir: str) -> Vocabulary:
    """One viewpoint vocabulary per connectivity folder per worker process."""
    return per_worker("vocabulary", connectivity_dir, lambda: Vocabulary.load(connectivity_dir))


def worker_context(task: Task, options: TaskOptions, connectivity_dir: str):
    """A task's per-worker data (`Task.context`: REVERIE's object visibility), once per worker."""
    vocab, graphs = worker_vocabulary(connectivity_dir), worker_graph_store(connectivity_dir)
    key = (task.name, options, connectivity_dir)
    return per_worker("task_context", key, lambda: task.context(options, vocab, graphs))


def load_context_in_background(task: Task, options: TaskOptions, connectivity_dir: str) -> None:
    """Start loading a task's per-worker data on a thread while this worker reads its files: the score
    step's `worker_context` then finds it loaded (or waits for it). A failure is left for that call to raise."""
    if task.load is None:
        return

    def load():
        try:
            worker_context(task, options, connectivity_dir)
        except Exception:  # noqa: BLE001 -- the score step loads it again and raises it there
            pass

    threading.Thread(target=load, name="vlnkit-task-context", daemon=True).start()


class _PlanRanges(beam.DoFn):
    """(kind, agent, rank, path, None) -> the same with each planned byte range of a plain JSON Lines file
    (`plan_line_ranges`); any other file (Parquet, compressed, a JSON list) stays one piece."""

    def __init__(self, range_bytes: int):
        super().__init__()
        self.range_bytes = range_bytes
        self.ranges = Metrics.counter("read", "file_ranges")

    def process(self, element):
        path = element[3]
        plan = None
        if not is_parquet(path) and not path.endswith(COMPRESSED):
            try:
                with fileio.open_read(path) as f:
                    plan = plan_line_ranges(f, self.range_bytes)
            except OSError:  # read whole: the reader reports it, as for any unreadable file
                pass
        self.ranges.inc(len(plan or [None]))
        for line_range in plan or [None]:
            yield (*element[:4], line_range)


class CountedRead(beam.DoFn):
    """A read step's counting, shared by the graph and the continuous readers: each piece passes on, each
    RecordError becomes a dead letter; a prediction file's rows read and refused are counted per agent
    (TOTALS, and Beam counters), a dataset file's in Beam counters only.

    A record is read whether or not it can be used: a RecordError naming a record (a line, an index, an
    id) counts one record read and one dead letter; one naming no record (a whole file that cannot be
    read or parsed) counts a dead letter and a `file_dead_letters`, and no record. So, per agent, the
    summary keeps predictions_read = scored rows + rows_from_both (continuous) + dead_letters -
    file_dead_letters (docs/jobs/score.md, "What the counts add up to")."""

    def __init__(self):
        super().__init__()
        self.predictions_read = Metrics.counter("score", "predictions_read")
        self.predictions_bad = Metrics.counter("score", "dead_letter")
        self.records_read = Metrics.counter("read", "records")
        self.records_bad = Metrics.counter("read", "dead_letter")

    def counted(self, pieces, predictions: bool, agent: str, rows=lambda piece: len(piece[1])):
        """Yield `pieces` ((bucket, piece) or RecordError) as outputs, counting; `rows(piece)`: rows read."""
        read = dead = files = 0
        for piece in pieces:
            if isinstance(piece, RecordError):
                dead += 1
                files += piece.record == ""
                read += piece.record != ""  # a record that was read, but cannot be used
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, piece.to_dict())
            else:
                read += rows(piece)
                yield piece
        if predictions:
            self.predictions_read.inc(read)
            self.predictions_bad.inc(dead)
            yield beam.pvalue.TaggedOutput(
                TOTALS,
                {
                    agent_key(agent, "predictions_read"): read,
                    agent_key(agent, "dead_letters"): dead,
                    agent_key(agent, FILE_DEAD_LETTERS): files,
                },
            )
        else:
            self.records_read.inc(read)
            self.records_bad.inc(dead)


def _rows_read(piece) -> int:
    """The records a piece holds (refused keys hold none: their dead letters count them)."""
    return 0 if isinstance(piece[1], (RefusedReferences, RefusedPredictions)) else len(piece[1])


class _ReadFile(CountedRead):
    """(kind, agent, rank, path, LineRange or None) -> (bucket, batch); dead letters; per-agent totals."""

    def __init__(self, connectivity_dir: str, buckets: int, task: Task, options: TaskOptions):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.buckets = buckets
        self.task = task
        self.options = options
        self.id_parts = task.id_parts
        self.reading = options.reading()  # what the task's options tell the dataset reader

    def setup(self):
        self.vocab = worker_vocabulary(self.connectivity_dir)
        load_context_in_background(self.task, self.options, self.connectivity_dir)

    def process(self, element):
        kind, agent, rank, path, line_range = element
        predictions = kind == "p"
        if predictions:
            pieces = read_predictions(path, agent, rank, self.vocab, line_range, self.id_parts)
        else:
            pieces = read_references(path, rank, self.vocab, line_range, **self.reading)
        yield from self.counted(in_buckets(pieces, self.buckets), predictions, agent, _rows_read)


@dataclass
class ReadScoringInputs(beam.PTransform):
    """Prediction files of several agents and dataset files -> {"batches", "dead_letter", "totals"}.

    `agents` is [(agent name, [file, ...])]: a file's rank within its agent orders duplicates (the first
    file, then the first record, wins). Dataset files are R2R/R4R JSON or JSON Lines, RxR guide JSON
    Lines, or build_r4r Parquet. `range_bytes` (None: every file whole, as one worker process should)
    is the size of the byte ranges plain JSON Lines files are read in by several workers. `task` and
    its `options` (`vlnkit.scoring.task`) set how ids and records read (REVERIE's instr_ids have 3
    parts; CVDN's target path); a worker starts loading the task's per-worker data while it reads.
    """

    agents: list[tuple[str, list[str]]]
    dataset_files: list[str]
    connectivity_dir: str
    buckets: int
    range_bytes: int | None = RANGE_BYTES
    task: Task = R2R_TASK
    options: TaskOptions = field(default_factory=TaskOptions)

    def expand(self, pbegin):
        files = [("p", agent, rank, path, None) for agent, paths in self.agents for rank, path in enumerate(paths)]
        files += [("r", "", rank, path, None) for rank, path in dataset_ranks(self.dataset_files)]
        pieces = pbegin | "Files" >> beam.Create(files, reshuffle=False)  # spread below, when asked
        if self.range_bytes:  # spread the files, then their ranges, over the workers
            pieces = (
                pieces
                | "SpreadFiles" >> beam.Reshuffle()
                | "PlanRanges" >> beam.ParDo(_PlanRanges(self.range_bytes))
                | "SpreadRanges" >> beam.Reshuffle()
            )
        read = _ReadFile(self.connectivity_dir, self.buckets, self.task, self.options)
        typed = beam.ParDo(read).with_output_types(BUCKETED)
        out = pieces | "ReadChunks" >> typed.with_outputs(DEAD_LETTER, TOTALS, main="batches")
        return {"batches": out.batches, DEAD_LETTER: out[DEAD_LETTER], TOTALS: out[TOTALS]}


class _RecordsToBatches(beam.DoFn):
    """A list of record dicts -> (bucket, ReferenceBatch); dead letters for invalid records."""

    def __init__(self, connectivity_dir: str, buckets: int, source: str):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.buckets = buckets
        self.source = source
        self.read = Metrics.counter("read", "records")
        self.bad = Metrics.counter("read", "dead_letter")

    def setup(self):
        self.vocab = worker_vocabulary(self.connectivity_dir)

    def process(self, items):
        # rank 0: a PCollection is one source; strict: check the whole list against the record declaration first.
        items = list(items)
        fmt = RXR_GUIDE_FORMAT if items_format(items) == RXR_GUIDE_FORMAT else R2R
        batch, errors = reference_batch(items, 0, self.source, 0, self.vocab, parquet=False, strict=True, fmt=fmt)
        self.read.inc(len(batch))
        self.bad.inc(len(errors))
        for e in errors:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, e.to_dict())
        yield from split_by_bucket(RefusedReferences.of(errors), self.buckets)
        yield from split_by_bucket(batch, self.buckets)


@dataclass
class ReferenceBatchesFromRecords(beam.PTransform):
    """Reference record dicts (R2R/R4R, or RxR guide lines, told apart per batch by its first record) ->
    {"batches": (bucket, ReferenceBatch), "dead_letter": dicts}, as `ReadScoringInputs` reads them from files.

    Flatten "batches" with `ReadScoringInputs(...)["batches"]` built with the same `buckets` (and no
    dataset files), then apply `ScoreBuckets(connectivity_dir, agents, [source], config)`: `source` names
    these records in dead letters where a dataset file name would be. Extra keys (`_order`, `distance`, ...)
    are ignored; dead letters label a record "#<position in its batch> (path_id=...)". A PCollection has no
    order, so when two records share a path_id the one kept is not specified: give unique records, as
    `ReadUniqueR2R` and `JoinR4R` do.
    """

    connectivity_dir: str
    buckets: int
    source: str = RECORDS_SOURCE
    batch_size: int = 4096

    def __post_init__(self):
        if self.buckets < 1:
            raise ValueError(f"buckets must be >= 1, got {self.buckets}")

    def expand(self, records):
        out = (
            records
            | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=self.batch_size)
            | "ToBatches"
            >> beam.ParDo(_RecordsToBatches(self.connectivity_dir, self.buckets, self.source))
            .with_output_types(BUCKETED)
            .with_outputs(DEAD_LETTER, main="batches")
        )
        return {"batches": out.batches, DEAD_LETTER: out[DEAD_LETTER]}
