"""The score job's steps for a continuous (VLN-CE) dataset, thin over `vlnkit.continuous`.

`ReadContinuousInputs(agents, dataset_files, buckets, options)`: PBegin -> {"pieces": (bucket, Piece),
"dead_letter": dicts, "totals": per-agent counter dicts, "file_totals": (agent, report) of each result file
that carries its own totals}. Each file (an episode file with its ground
truth, an agent's positions or simulator results) is read whole by `vlnkit.continuous.pieces` and its
rows split by bucket of episode_id.

`ScoreContinuousBuckets(agents, dataset_files, config, options, bootstrap, pairs)`: (bucket, Piece) ->
{"tables": Arrow tables in the CONTINUOUS_EPISODE_SCORES schema, "totals", "dead_letter", "lines" (the
two episode lists), "bootstrap" (bucket sums, with a `BootstrapConfig`), "differences" (results against
positions, per agent)}: each group is joined and scored by `vlnkit.continuous.buckets.score_bucket`
and its bootstrap sums made by `vlnkit.scoring.bootstrap.bucket_sums`, as the graph job's buckets are.
The outputs have the graph job's shapes, so the same writers, merges and summary steps follow.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import apache_beam as beam

from transforms.deadletter import DEAD_LETTER
from transforms.progress import Progress
from transforms.score.read import TOTALS, CountedRead
from transforms.score.score import ScoreStep, dead_and_lines
from transforms.worker_cache import per_worker
from vlnkit.comparison.config import BootstrapConfig
from vlnkit.comparison.paired import HEADLINE
from vlnkit.continuous.buckets import ContinuousOptions, score_bucket
from vlnkit.continuous.pieces import (
    EPISODES,
    POSITIONS,
    RESULTS,
    FileTotals,
    agent_pieces,
    dataset_pieces,
    instruction_map,
)
from vlnkit.continuous.schemas import CE_METRICS
from vlnkit.evaluation.leaderboard import EUCLIDEAN_METRICS
from vlnkit.evaluation.scoring_config import ScoringConfig

DIFFERENCES = "differences"
FILE_TOTALS = "file_totals"  # (agent, `results.totals_check` report) per result file with its own totals


class _ReadContinuousFile(CountedRead):
    """(kind, agent, rank, path, layout) -> (bucket, Piece); dead letters; per-agent totals."""

    def __init__(self, dataset_files: list[str], buckets: int, options: ContinuousOptions):
        super().__init__()
        self.dataset_files = dataset_files
        self.buckets = buckets
        self.options = options

    def _instructions(self):
        key = "\x1f".join(self.dataset_files)
        return per_worker("ce_instructions", key, lambda: instruction_map(self.dataset_files))

    def process(self, element):
        kind, agent, rank, path, layout = element
        o = self.options
        if kind == "r":
            pieces = dataset_pieces(path, rank, gt=o.gt, reference=o.reference, buckets=self.buckets)
        else:
            pieces = agent_pieces(path, agent, rank, layout, self.buckets, self._instructions)
        reports = []
        yield from self.counted(_without_reports(pieces, reports), kind == "p", agent, _rows_read)
        for found in reports:
            yield beam.pvalue.TaggedOutput(FILE_TOTALS, (found.agent, found.report))


def _rows_read(piece) -> int:
    """The records a piece holds (its REFUSED and UNREADABLE tables hold none: their dead letters count them)."""
    return len(piece[1]) if piece[1].kind in (EPISODES, POSITIONS, RESULTS) else 0


def _without_reports(pieces, reports: list):
    """`pieces` without the `FileTotals` among them, which go into `reports`."""
    for piece in pieces:
        if isinstance(piece, FileTotals):
            reports.append(piece)
        else:
            yield piece


@dataclass
class ReadContinuousInputs(beam.PTransform):
    """Agents' files and episode files -> {"pieces", "dead_letter", "totals"} (see the module docstring).

    `agents` is [(agent name, [(file, layout), ...])], a file's rank being its place among its agent's
    files; `layout` is the file's `vlnkit.continuous.documents.sniff_kind`."""

    agents: list[tuple[str, list[tuple[str, str | None]]]]
    dataset_files: list[str]
    buckets: int
    options: ContinuousOptions

    def expand(self, pbegin):
        files = [
            ("p", agent, rank, path, layout)
            for agent, paths in self.agents
            for rank, (path, layout) in enumerate(paths)
        ]
        files += [("r", "", rank, path, None) for rank, path in enumerate(self.dataset_files)]
        out = (
            pbegin
            | "Files" >> beam.Create(files)
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadFiles"
            >> beam.ParDo(_ReadContinuousFile(self.dataset_files, self.buckets, self.options)).with_outputs(
                DEAD_LETTER, TOTALS, FILE_TOTALS, main="pieces"
            )
        )
        return {"pieces": out.pieces, DEAD_LETTER: out[DEAD_LETTER], TOTALS: out[TOTALS], FILE_TOTALS: out[FILE_TOTALS]}


@dataclass(frozen=True)
class _Settings:
    agents: dict[str, list[str]]
    dataset_files: list[str]
    config: ScoringConfig
    options: ContinuousOptions
    bootstrap: BootstrapConfig
    pairs: list[tuple[str, str]]


class _ScoreContinuousBucket(ScoreStep):
    def setup(self):
        super().setup()
        self.progress = Progress("score: episodes scored")

    def process(self, element):
        step = self.step
        scores = score_bucket(
            list(element[1]), step.agents, step.dataset_files, step.config, step.options, len(step.agents) > 1
        )
        yield from dead_and_lines(scores)
        self.bad.inc(len(scores.dead))
        if scores.table is not None:
            self.scored.inc(scores.table.num_rows)
            self.progress.tick(scores.table.num_rows)
            if step.bootstrap.enabled:
                group = HEADLINE + (EUCLIDEAN_METRICS if step.options.goal_distance else ())
                yield from self.sums_of(
                    scores.table, scores.reference_length, step.bootstrap, step.pairs, CE_METRICS, group
                )
            if scores.differences:
                yield beam.pvalue.TaggedOutput(DIFFERENCES, scores.differences)
            yield scores.table
        yield beam.pvalue.TaggedOutput(TOTALS, scores.totals)


@dataclass
class ScoreContinuousBuckets(beam.PTransform):
    """(bucket, Piece) -> scored tables and the rest (see the module docstring)."""

    agents: dict[str, list[str]]
    dataset_files: list[str]
    config: ScoringConfig
    options: ContinuousOptions
    bootstrap: BootstrapConfig = field(default_factory=lambda: BootstrapConfig(replicates=0))
    pairs: list[tuple[str, str]] = field(default_factory=list)

    def expand(self, pieces):
        step = _Settings(self.agents, self.dataset_files, self.config, self.options, self.bootstrap, self.pairs)
        return (
            pieces
            | "GroupByBucket" >> beam.GroupByKey()
            | "JoinAndScore" >> _ScoreContinuousBucket(step).applied(DIFFERENCES)
        )
