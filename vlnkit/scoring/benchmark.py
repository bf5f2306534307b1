"""A benchmark, declared once: what its episode rows hold and the rule that scores its pairs.

VLN benchmarks on the R2R graphs share the graph, the join and the path metrics, and differ in what
success is (R2R: the stop within d_th of the goal; REVERIE: the target object visible from the stop;
CVDN: within d_th of the chosen target path's goal) and in what else they report (REVERIE's object
grounding). So a benchmark is a reader (its records and predictions as `ReferenceBatch` /
`PredictionBatch` rows, with its own columns in `extras`) and one `Benchmark` declaration:

- `rule(pairs, context, config) -> RuleOutput`: the columns of a bucket's scored pairs (every agent at
  once). It runs the compiled path metrics with `pairs.score(success=..., oracle=...)`: a rule that
  decides success itself passes it (0/1 per pair) and the kernel gates SPL, SED and SDTW with it; a rule
  that does not passes nothing (the distance rule). It may refuse pairs (a dead letter each, with its
  reason: CVDN's steps that are not edges).
- `load(options, vocab)`: what the rule needs beyond the pairs (REVERIE: object visibility), loaded once
  per worker (the score job starts it while the worker reads its files); graphs reach the rule through
  `pairs.scans.graphs`.
- `schema`, `metrics`: the versioned Parquet rows and which of their columns are metrics (means, null
  counts, intervals, paired comparisons and breakdowns cover exactly those).

`vlnkit.scoring.benchmarks.BENCHMARKS` lists them; the score job picks one from its dataset's format.

    >>> R2R_BENCHMARK.metrics[:4], R2R_BENCHMARK.id_parts
    (('pl', 'ne', 'one', 'sr'), 2)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from vlnkit.datasets.columns import Paths
from vlnkit.evaluation.common import METRICS
from vlnkit.evaluation.schemas import EPISODE_SCORES
from vlnkit.evaluation.scoring_config import ScoringConfig


@dataclass(frozen=True)
class BenchmarkOptions:
    """A benchmark's own settings from the command line (recorded in the summary's `options`).

    `visibility`: REVERIE's object-visibility source (the release's BBox folder or DUET's BBoxes.json);
    `evaluator`: whose conventions ("official" or "duet" for REVERIE); `instruction_set`: REVERIE's
    `instructions` or `instructions_l`; `extra`: settings of a benchmark declared later (CVDN's target path).
    """

    visibility: str | None = None
    evaluator: str = "official"
    instruction_set: str = "instructions"
    extra: tuple[tuple[str, object], ...] = ()

    def get(self, name: str, default=None):
        return dict(self.extra).get(name, default)

    def to_dict(self) -> dict:
        return {
            "visibility": self.visibility,
            "evaluator": self.evaluator,
            "instruction_set": self.instruction_set,
            **dict(self.extra),
        }


@dataclass
class RulePairs:
    """The scored pairs of one bucket (every agent), in pair order, as a rule sees them.

    `agent` (index into `agents`), `episode`, `ref_rows` (rows of `references`, the bucket's ReferenceBatch),
    `slot` (the pair's scan in `scans`, a `vlnkit.scoring.scans.ScanTables`), `reference_nodes` and
    `queries` (`Paths` of node indices of the scan; the queries as given, before repeats are collapsed),
    `ref_extra` / `pred_extra` (the readers' extra columns, one entry per pair).
    """

    agents: list[str]
    agent: np.ndarray
    episode: np.ndarray
    ref_rows: np.ndarray
    slot: np.ndarray
    reference_nodes: Paths
    queries: Paths
    ref_extra: dict
    pred_extra: dict
    scans: object
    config: ScoringConfig
    scorer: Callable = None  # (success, oracle) -> PairScores: `vlnkit.scoring.score.score_pairs` on these pairs
    scored: object = None  # the `PairScores` of `score`, once it ran

    def __len__(self) -> int:
        return len(self.episode)

    def score(self, success: np.ndarray | None = None, oracle: np.ndarray | None = None):
        """Every path metric of every pair (`vlnkit.scoring.score.score_pairs`), with the rule's success and
        oracle success (0/1 per pair) in place of the distance rule where given; kept as `self.scored`."""
        self.scored = self.scorer(success, oracle)
        return self.scored

    def last_nodes(self) -> np.ndarray:
        """Each query's last node (where the agent stopped)."""
        return self.queries.values[self.queries.offsets[1:] - 1]

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Graph distances d(a[i], b[i]) in each pair's scan, in one gather."""
        sizes = self.scans.sizes[self.slot]
        return self.scans.distances[self.scans.starts[self.slot] + np.asarray(a) * sizes + np.asarray(b)]

    def global_nodes(self, nodes: np.ndarray, vocab, pair_of_node: np.ndarray | None = None) -> np.ndarray:
        """Node indices -> global viewpoint numbers of the vocabulary (`Vocabulary`), per pair's scan (or per
        `pair_of_node` when `nodes` are many per pair); -1 for a scan the vocabulary does not hold."""
        slot = self.slot if pair_of_node is None else self.slot[pair_of_node]
        base = self.scans.vocabulary_bases(vocab)[slot]
        return np.where(base >= 0, base + nodes, -1)


@dataclass
class RuleOutput:
    """What a rule gives for a bucket's pairs: `columns` (one array per pair for every metric of the benchmark
    and every other column of its schema that the score step does not fill itself), `counts` (per-agent
    counters: name -> array of the agent index of each counted pair), and the refused pairs (`refused`, a
    bool per pair, with `reasons` {pair: reason}; None when none is)."""

    columns: dict[str, np.ndarray]
    counts: dict[str, np.ndarray] = field(default_factory=dict)
    refused: np.ndarray | None = None
    reasons: dict[int, str] = field(default_factory=dict)


def path_rule(pairs: RulePairs, context, config: ScoringConfig) -> RuleOutput:
    """R2R's rule (R2R, R4R, RxR): the path metrics with success at d_th of the reference path's goal."""
    return RuleOutput(dict(pairs.score().scores))


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: see the module docstring. `formats` are the dataset formats it scores
    (`vlnkit.datasets.rxr.record_format`); `id_parts` how its instr_ids read (2: "<key>_<k>" or one
    integer; 3: REVERIE's "<path_id>_<objId>_<k>"); `counters` the per-agent counts its rule adds to the
    summary; `leaderboard_extra` the metrics the leaderboard shows beside the shared ones; `format_ids` writes its
    instr_ids from the join's keys."""

    name: str
    formats: tuple[str, ...]
    schema: pa.Schema
    metrics: tuple[str, ...]
    rule: Callable[[RulePairs, object, ScoringConfig], RuleOutput] = path_rule
    load: Callable | None = None
    id_parts: int = 2
    counters: tuple[str, ...] = ()
    leaderboard_extra: tuple[str, ...] = ()
    format_ids: Callable | None = None  # (keys, k) -> instr_ids as an Arrow array (None: "<key>_<k>")

    def context(self, options: BenchmarkOptions, vocab):
        """The rule's per-worker data (None when the rule needs none)."""
        return self.load(options, vocab) if self.load is not None else None


R2R_BENCHMARK = Benchmark("r2r", ("r2r", "rxr_guide"), EPISODE_SCORES, METRICS)
