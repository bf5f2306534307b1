"""Joining and scoring the score job's buckets: a GroupByKey by bucket, then the core's two functions.

`ScoreBuckets(connectivity_dir, agents, dataset_files, config)`: (bucket, PredictionBatch |
ReferenceBatch) -> {"tables": Arrow tables in the EPISODE_SCORES schema, "totals": summable counter
dicts, "dead_letter": dicts, "lines": (list name, a bucket's lines) of the episode lists, "bootstrap": bootstrap sums
per bucket (with a `BootstrapConfig`), "followers": comparisons with RxR follower metrics (for the agents
in `followers`)}. Each group is joined by `vlnkit.scoring.join.join_bucket` and scored by
`vlnkit.scoring.score.score_bucket`; graphs, the vocabulary and the flat scan tables are loaded once per
worker. A bucket holds every reference path whose path_id hashes to it and every prediction for those
paths, so memory per bucket is bounded by the bucket count (chosen from the input size).
"""

from __future__ import annotations

import collections
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from transforms.coders import declared_outputs
from transforms.deadletter import DEAD_LETTER
from transforms.graphs import worker_graph_store
from transforms.progress import Progress
from transforms.score.read import TOTALS, worker_context, worker_vocabulary
from transforms.worker_cache import per_worker
from vlnkit.comparison.config import BootstrapConfig
from vlnkit.comparison.paired import HEADLINE
from vlnkit.comparison.replicates import ReplicateSums
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.scoring.bootstrap import bucket_sums
from vlnkit.scoring.followers import differences, load_follower_metrics
from vlnkit.scoring.join import instr_ids, join_bucket
from vlnkit.scoring.reading import dataset_ranks
from vlnkit.scoring.scans import ScanTables
from vlnkit.scoring.score import score_bucket
from vlnkit.scoring.task import R2R_TASK, Task, TaskOptions

LINES, BOOTSTRAP, FOLLOWERS = "lines", "bootstrap", "followers"
MISSING, UNUSABLE = "missing_predictions", "without_usable_prediction"  # the two episode lists


@dataclass(frozen=True)
class _Settings:
    """What every worker needs to join and score a bucket (picklable, without the pipeline)."""

    connectivity_dir: str
    agents: dict[str, list[str]]
    ranked_files: list[str]
    config: ScoringConfig
    bootstrap: BootstrapConfig
    pairs: list[tuple[str, str]]
    followers: dict[str, list[str]]


def dead_and_lines(scores):
    """A scored bucket's dead letters, and its lines of the two episode lists (a bucket's lines travel as
    one list per list name): the outputs every score step has, whatever its dataset."""
    for d in scores.dead:
        yield beam.pvalue.TaggedOutput(DEAD_LETTER, d.to_dict())
    for name, lines in ((MISSING, scores.missing), (UNUSABLE, scores.unusable)):
        if lines:
            yield beam.pvalue.TaggedOutput(LINES, (name, lines))


class ScoreStep(beam.DoFn):
    """A score step's settings and counters (episodes scored, dead letters), for the graph and the
    continuous score steps alike, and its bootstrap sums made beside the scoring.

    A bucket's bootstrap sums (`bucket_sums`) run on a worker thread while the next bucket is joined
    and scored: the sums' compiled passes release the GIL, and the join and scoring are mostly one
    thread, so on two cores the two overlap. At most `PENDING` buckets wait; an error in the sums is
    raised by the step, and every bundle ends with its sums emitted.
    """

    PENDING = 2

    def __init__(self, step):
        super().__init__()
        self.step = step
        self.scored = Metrics.counter("score", "episodes_scored")
        self.bad = Metrics.counter("score", "dead_letter")

    def setup(self):
        self.sums_pool = ThreadPoolExecutor(1, thread_name_prefix="vlnkit-bootstrap")

    def start_bundle(self):
        self.pending = collections.deque()

    def sums_of(self, *args):
        """Start a bucket's `bucket_sums(*args)`; yields the sums of earlier buckets that are done."""
        self.pending.append(self.sums_pool.submit(bucket_sums, *args))
        while self.pending and (self.pending[0].done() or len(self.pending) > self.PENDING):
            yield beam.pvalue.TaggedOutput(BOOTSTRAP, self.pending.popleft().result())

    def finish_bundle(self):
        while self.pending:
            sums = self.pending.popleft().result()
            yield beam.pvalue.TaggedOutput(BOOTSTRAP, WindowedValue(sums, MIN_TIMESTAMP, [GlobalWindow()]))

    def teardown(self):
        self.sums_pool.shutdown(wait=True)

    def applied(self, *tags: str):
        """This step as a ParDo: its main output the scored tables, then totals, dead letters, lines, bootstrap
        sums and `tags`. The tables and sums are declared as such, so they travel with `BulkCoder`."""
        tags = (TOTALS, DEAD_LETTER, LINES, BOOTSTRAP, *tags)
        return declared_outputs(beam.ParDo(self), "tables", *tags, tables=pa.Table, **{BOOTSTRAP: ReplicateSums})


class _ScoreBucket(ScoreStep):
    def setup(self):
        super().setup()
        conn = self.step.connectivity_dir
        self.vocab = worker_vocabulary(conn)
        self.graphs = worker_graph_store(conn)
        self.scans = per_worker("scan_tables", conn, lambda: ScanTables(self.graphs))
        self.followers = {
            agent: per_worker("follower_metrics", "\x1f".join(files), lambda f=files: load_follower_metrics(f))
            for agent, files in self.step.followers.items()
        }
        self.progress = Progress("score: episodes scored")
        task, options = self.step.task, self.step.options
        self.context = worker_context(task, options, conn)

    def process(self, element):
        step = self.step
        task = step.task
        ids = task.format_ids or instr_ids
        join = join_bucket(list(element[1]), step.agents, step.ranked_files, self.vocab, self.graphs, ids)
        scores = score_bucket(join, self.scans, step.config, len(step.agents) > 1, task, self.context)
        yield from dead_and_lines(scores)
        self.bad.inc(len(scores.dead) - len(join.dead))
        if scores.table is not None:
            self.scored.inc(scores.table.num_rows)
            self.progress.tick(scores.table.num_rows)
            if step.bootstrap.enabled:
                yield from self.sums_of(
                    scores.table,
                    scores.reference_length,
                    step.bootstrap,
                    step.pairs,
                    task.metrics,
                    (*HEADLINE, *task.leaderboard_extra),  # the breakdowns' metrics
                )
            for agent, theirs in self.followers.items():
                mine = scores.table.filter(pc.equal(scores.table.column("agent"), agent))
                if mine.num_rows:
                    yield beam.pvalue.TaggedOutput(FOLLOWERS, {agent: differences(mine, theirs)})
            yield scores.table
        yield beam.pvalue.TaggedOutput(TOTALS, scores.totals)


@dataclass
class ScoreBuckets(beam.PTransform):
    """Bucketed reference and prediction pieces -> scored tables and the rest (see the module docstring).

    `agents` maps agent name -> its prediction files (in rank order); `dataset_files` are the dataset
    files as given to `ReadScoringInputs` (ranked the same way here); `pairs` are the agent pairs the
    bootstrap sums (`vlnkit.evaluation.score_summary.bootstrap_pairs`); `followers` maps the agents whose
    files are RxR follower files to those files.
    """

    connectivity_dir: str
    agents: dict[str, list[str]]
    dataset_files: list[str]
    config: ScoringConfig
    bootstrap: BootstrapConfig = field(default_factory=lambda: BootstrapConfig(replicates=0))
    pairs: list[tuple[str, str]] = field(default_factory=list)
    followers: dict[str, list[str]] = field(default_factory=dict)
    task: Task = R2R_TASK
    options: TaskOptions = field(default_factory=TaskOptions)

    @property
    def ranked_files(self) -> list[str]:
        return [p for _, p in dataset_ranks(self.dataset_files)]

    def expand(self, pieces):
        return pieces | "GroupByBucket" >> beam.GroupByKey() | "JoinAndScore" >> _ScoreBucket(self).applied(FOLLOWERS)
