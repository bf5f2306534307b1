"""A VLN task, declared once: everything the score job needs to know about it, in one `Task`.

Tasks on the R2R graphs (R2R, R4R, RxR, REVERIE, CVDN) share the graph, the join, the path metrics, the
intervals and the reports, and differ in what success is (R2R: the stop within d_th of the goal; REVERIE:
the target object visible from the stop; CVDN: within 3 m of the chosen target path's goal), in what else
they report (REVERIE's object grounding, CVDN's goal progress) and in the settings a user chooses. So a
task is one module that declares one `Task`:

- `formats`: the dataset formats it scores (told from a file's first record, `vlnkit.datasets.formats`), or
  `detect(first record)`: a task whose files hold records of another's format (read as those) claims them,
  or `layouts`: the continuous (VLN-CE) layouts of its files (`vlnkit.continuous.documents`, as the job's
  input checks sniff them): such a task is scored from 3-D positions by the job's continuous wiring, not on
  the graphs, and its rule fields go unused (`vlnkit.scoring.vlnce`);
  `options`: its flags (`add_flags(parser)`) and how the parsed flags become its typed options
  (`options_of(args, dataset_files)`, a frozen dataclass deriving from `TaskOptions`; ValueError, one
  line, for a flag that does not apply), which also say what its reader needs (`TaskOptions.reading`) and
  which files are inputs of the run (`TaskOptions.inputs`);
- `decide(pairs, context) -> Decision`: what its rule decides of a bucket's pairs (every agent at once):
  success and oracle success (0/1 per pair; None: the distance rule), refused pairs with their reasons
  (a dead letter each), per-agent counts and the columns it fills itself. The core then scores every
  pair with the compiled path metrics (the given success gates SPL, SED and SDTW) and, where a column
  needs those scores (REVERIE's SPL by its evaluator's shortest length), calls `finish(pairs, context,
  decision, scores) -> columns`;
- `load(options, vocab, graphs)`: what the rule needs beyond the pairs (REVERIE: object visibility; CVDN:
  its worker's vocabulary and graphs), loaded once per worker;
- `schema`, `metrics`: the versioned Parquet rows and which of their columns are metrics (means, null
  counts, intervals, paired comparisons and breakdowns cover exactly those); `counters` the per-agent
  counts its rule adds to the summary; `own_metrics` how each metric it adds beside the shared ones is
  shown (`vlnkit.evaluation.leaderboard.OwnMetric`: its label, its unit, whether the leaderboard shows it);
- `describe(options)`: what the summary says of the task (`summary["task"]`: its name, the success line
  of the leaderboard, the title of the console table, its own metrics' labels and units), so that no module
  outside the task's compares its name or keeps a table of its metrics; `license` the license note of its dataset files, (dataset, note), which the summary's `task` block
  carries to the published version's dataset card (`vlnkit.io.dataset_card.task_licenses`).

`vlnkit.scoring.registry.TASKS` lists them; the score job picks one from its dataset's format
(docs/design.md, "Tasks", has the steps to add one).

    >>> R2R_TASK.metrics[:4], R2R_TASK.id_parts, R2R_TASK.describe(TaskOptions())
    (('pl', 'ne', 'one', 'sr'), 2, None)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from vlnkit.datasets.columns import Paths
from vlnkit.evaluation.common import METRICS
from vlnkit.evaluation.leaderboard import OWN, OwnMetric
from vlnkit.evaluation.schemas import EPISODE_SCORES
from vlnkit.evaluation.scoring_config import ScoringConfig


@dataclass(frozen=True)
class TaskOptions:
    """A task's own settings from the command line (none for R2R's); a task with settings declares a frozen
    dataclass deriving from this one. They are recorded in the summary's `options` (`to_dict`)."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def reading(self) -> dict:
        """Keyword arguments of the dataset reader (`vlnkit.scoring.reading.read_references`)."""
        return {}

    def inputs(self) -> dict[str, str]:
        """{flag: a file or glob} the options name that decide the run's results: inputs of the run,
        checksummed."""
        return {}


@dataclass
class RulePairs:
    """The scored pairs of one bucket (every agent), in pair order, as a rule sees them.

    `agent` (index into `agents`), `episode`, `ref_rows` (rows of the bucket's ReferenceBatch), `slot` (the
    pair's scan in `scans`, a `vlnkit.scoring.scans.ScanTables`), `reference_nodes` and `queries` (`Paths`
    of node indices of the scan; the queries as given, before repeats are collapsed), `ref_extra` /
    `pred_extra` (the readers' extra columns, one entry per pair).
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

    def __len__(self) -> int:
        return len(self.episode)

    def last_nodes(self) -> np.ndarray:
        """Each query's last node (where the agent stopped)."""
        return self.queries.values[self.queries.offsets[1:] - 1]

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Graph distances d(a[i], b[i]) in each pair's scan, in one gather."""
        sizes = self.scans.sizes[self.slot]
        return self.scans.distances[self.scans.starts[self.slot] + np.asarray(a) * sizes + np.asarray(b)]

    def vocabulary_bases(self, vocab) -> np.ndarray:
        """Per pair, the global viewpoint number (`vlnkit.datasets.columns.Vocabulary`) of its scan's node 0
        (node i is that plus i), or -1 for a scan the vocabulary does not hold."""
        return self.scans.vocabulary_bases(vocab)[self.slot]


@dataclass
class Decision:
    """What a rule decides of a bucket's pairs: `success` and `oracle` (0/1 per pair, None: the distance
    rule), `refused` (a bool per pair, with `reasons` {pair: reason}; None when none is), `counts` (per-agent
    counters: name -> the agent index of each counted pair) and `columns` (one array per pair for each column
    of the task's schema that the rule fills itself)."""

    success: np.ndarray | None = None
    oracle: np.ndarray | None = None
    refused: np.ndarray | None = None
    reasons: dict[int, str] = field(default_factory=dict)
    counts: dict[str, np.ndarray] = field(default_factory=dict)
    columns: dict[str, np.ndarray] = field(default_factory=dict)


def distance_rule(pairs: RulePairs, context) -> Decision:
    """R2R's rule (R2R, R4R, RxR): the path metrics alone, success at d_th of the reference path's goal."""
    return Decision()


def no_options(args, dataset_files: list[str]) -> TaskOptions:
    return TaskOptions()


@dataclass(frozen=True)
class Task:
    """One task: see the module docstring. `id_parts` says how its instr_ids read (2: "<key>_<k>" or one
    integer; 3: REVERIE's "<path_id>_<objId>_<k>"); `format_ids` writes its instr_ids from the join's keys
    (None: "<key>_<k>"); `configure` adjusts the scoring settings to the task's own (CVDN: NE < 3 m)."""

    name: str
    formats: tuple[str, ...]
    schema: pa.Schema
    metrics: tuple[str, ...]
    decide: Callable[[RulePairs, object], Decision] = distance_rule
    finish: Callable[[RulePairs, object, Decision, object], dict] | None = None
    load: Callable | None = None
    id_parts: int = 2
    counters: tuple[str, ...] = ()
    own_metrics: tuple[OwnMetric, ...] = ()  # each metric it adds beside METRICS: its label and unit
    format_ids: Callable | None = None
    detect: Callable[[dict], bool] | None = None  # (a file's first record) -> whether it is this task's
    layouts: tuple[str, ...] = ()  # continuous layouts of its files: scored from positions, not on the graphs
    add_flags: Callable | None = None  # (parser) -> None: the task's own flags
    options_of: Callable[..., TaskOptions] = no_options  # (args, dataset files) -> its options
    configure: Callable[[ScoringConfig], ScoringConfig] | None = None
    success: Callable[[dict], str] | None = None  # (summary options) -> the leaderboard's success line
    title: Callable[[dict], str] | None = None  # (summary options) -> the console table's title
    license: tuple[str, str] | None = None  # (dataset, note): the license note of its dataset files

    def __post_init__(self):
        """Each metric it adds beside the shared ones is said how it is shown, and only those: a column
        without a unit would be shown in the wrong scale, silently."""
        added = [m for m in self.metrics if m not in METRICS]
        said = [o.metric for o in self.own_metrics]
        if said != added:
            raise ValueError(f"task {self.name!r}: own_metrics must say, in order, its metrics {added}, got {said}")

    @property
    def leaderboard_extra(self) -> tuple[str, ...]:
        """The metrics the leaderboard shows beside the shared ones (and the breakdowns cover)."""
        return tuple(o.metric for o in self.own_metrics if o.leaderboard)

    def context(self, options: TaskOptions, vocab, graphs):
        """The rule's per-worker data (None when the rule needs none)."""
        return self.load(options, vocab, graphs) if self.load is not None else None

    def summary_options(self, options: TaskOptions) -> dict:
        """What the summary's `options` record of the task: its name and its options (nothing for a task
        scored by the distance rule, whose summary the scoring options say all of)."""
        return {} if self.success is None else {"task": self.name, **options.to_dict()}

    def describe(self, options: TaskOptions, scoring: dict | None = None) -> dict | None:
        """The summary's `task` block: what the leaderboard and the console say of the task (None for a task
        scored by the distance rule, whose success line the scoring options give, and without metrics of its
        own)."""
        if self.success is None and not self.own_metrics:
            return None
        said = {**(scoring or {}), **self.summary_options(options)}
        return {
            "name": self.name,
            "metrics": list(self.metrics),
            "success": self.success(said) if self.success else None,
            "title": self.title(said) if self.title else None,
            **({OWN: [o.to_dict() for o in self.own_metrics]} if self.own_metrics else {}),
            **({"license": dict(zip(("dataset", "note"), self.license, strict=True))} if self.license else {}),
        }


R2R_TASK = Task("r2r", ("r2r", "rxr_guide"), EPISODE_SCORES, METRICS)
"""R2R, R4R (and build_r4r's paths) and RxR guide files: the distance rule (RxR: one episode per instruction,
its metrics per language too)."""
