"""What the comparison page reads: the score job's episode Parquet files, and which of their rows it can use.

The page (`vlnkit.reports.comparison_page`) draws every episode on its scan's graph and measures its
reference path, so a row is usable only when its instr_id is in the dataset, its scan has a graph and
every viewpoint of its path and of its reference is a node of that graph. Rows that are not usable are
set aside as problems naming the file, the record and the reason (the report dead-letters them), never
dropped silently. Files are read in Arrow record batches, and the checks run per scan on whole columns.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from vlnkit.comparison.paired import HEADLINE
from vlnkit.evaluation.leaderboard import OwnMetric, on_leaderboard
from vlnkit.navigation.graph import GraphError

__all__ = [
    "PAGE_COLUMNS",
    "PAGE_METRICS",
    "page_metrics",
    "CONTINUOUS_COLUMNS",
    "is_continuous",
    "missing_columns",
    "read_episodes",
    "rename_agents",
    "usable_episodes",
    "usable_continuous",
]

PAGE_COLUMNS = ("agent", "instr_id", "scan", "path")  # what a file needs besides its metric columns
PAGE_METRICS = HEADLINE  # the metrics the page shows where a file has them, beside a task's own (`page_metrics`)
# What a continuous dataset's episodes file (`continuous_episode_scores`) needs: positions instead of a path.
CONTINUOUS_COLUMNS = ("agent", "instr_id", "scan", "positions")
SOURCE = "_source"  # the index of the file a row came from (for naming it in a problem)
BATCH_ROWS = 65536


def missing_columns(columns, required=PAGE_COLUMNS) -> list[str]:
    """The page's columns a Parquet schema lacks (an episodes file without them cannot feed the page).

    >>> missing_columns(["agent", "instr_id", "scan", "path", "sr"]), missing_columns(["instr_id", "sr"])
    ([], ['agent', 'scan', 'path'])
    """
    have = set(columns)
    return [c for c in required if c not in have]


def is_continuous(columns) -> bool:
    """Whether an episodes file's columns are a continuous dataset's (`continuous_episode_scores`).

    >>> is_continuous(["agent", "episode_id", "instr_id", "scan", "positions", "sr"]), is_continuous(PAGE_COLUMNS)
    (True, False)
    """
    return not missing_columns(columns, (*CONTINUOUS_COLUMNS, "episode_id"))


def page_metrics(own: dict[str, OwnMetric] | None = None) -> tuple[str, ...]:
    """The metrics the page shows where a file has them: the headline ones, then the task's own that its
    leaderboard shows, as the score summary declares them (`vlnkit.evaluation.leaderboard.own_metrics`).

    >>> page_metrics({"rgs": OwnMetric("rgs", "RGS", "%", leaderboard=True)})
    ('sr', 'spl', 'ndtw', 'sdtw', 'ne', 'rgs')
    """
    return (*PAGE_METRICS, *on_leaderboard(own))


def _open_local(path: str):
    return open(path, "rb")


def read_episodes(
    files, open_read=_open_local, metrics=PAGE_METRICS, batch_rows: int = BATCH_ROWS, required=PAGE_COLUMNS
) -> pa.Table:
    """The page's columns of every file as one Arrow table, read in record batches of `batch_rows`.

    Keeps `required` (`PAGE_COLUMNS`; a continuous dataset's `CONTINUOUS_COLUMNS`), `language` (when some row has one; missing languages become "unknown") and
    the `metrics` a file has, plus `_source`: the index in `files` of each row's file. `open_read(path)`
    opens a file for binary reading (`vlnkit.io.fileio.open_read` for gs://). A file without the page's
    columns is a ValueError naming it.

    >>> import io, pyarrow.parquet as pq
    >>> buf = io.BytesIO()
    >>> pq.write_table(pa.table({"agent": ["a"], "instr_id": ["1_0"], "scan": ["s"], "path": [["x"]], "sr": [1.0]}), buf)
    >>> t = read_episodes(["f.parquet"], lambda p: io.BytesIO(buf.getvalue()))
    >>> t.column_names, t["_source"].to_pylist()
    (['agent', 'instr_id', 'scan', 'path', 'sr', '_source'], [0])
    """
    tables = []
    for k, path in enumerate(files):
        with open_read(path) as f:
            parquet = pq.ParquetFile(f)
            names = parquet.schema_arrow.names
            missing = missing_columns(names, required)
            if missing:
                raise ValueError(f"{path}: not a score job's episodes file for the comparison page (no {missing})")
            wanted = [c for c in (*required, "language", *metrics) if c in names]
            before = len(tables)
            for batch in parquet.iter_batches(batch_size=batch_rows, columns=wanted):
                source = pa.array(np.full(batch.num_rows, k, dtype=np.int32))
                tables.append(pa.Table.from_batches([batch]).append_column(SOURCE, source))
            if len(tables) == before:  # a file without rows: its columns, so a caller needs no case of its own
                empty = parquet.schema_arrow.empty_table().select(wanted)
                tables.append(empty.append_column(SOURCE, pa.array([], pa.int32())))
    if not tables:
        return pa.table({c: pa.array([], pa.string()) for c in required})
    table = pa.concat_tables(tables, promote_options="default")  # files may differ in their metric columns
    if "language" in table.column_names:
        language = table["language"]
        if language.null_count == len(language):
            table = table.drop_columns(["language"])  # e.g. R2R: no language recorded, no language breakdown
        else:
            k = table.column_names.index("language")
            table = table.set_column(k, "language", pc.fill_null(language, "unknown"))
    return table


def rename_agents(table: pa.Table, names: dict[str, str]) -> pa.Table:
    """The table with each agent renamed by `names` (one vectorized lookup; agents not named keep theirs).

    The report names the agents of several score folders by folder, so two folders' "random" stay apart.

    >>> t = pa.table({"agent": ["a", "b", "a"]})
    >>> rename_agents(t, {"a": "run1/a"})["agent"].to_pylist()
    ['run1/a', 'b', 'run1/a']
    """
    if not names:
        return table
    agent = table["agent"]
    found = pc.index_in(agent, value_set=pa.array(list(names), pa.string()))
    renamed = pc.if_else(pc.is_null(found), agent, pa.array(list(names.values()), pa.string()).take(found))
    return table.set_column(table.column_names.index("agent"), "agent", renamed)


def _bad_rows(path_lists, nodes) -> np.ndarray:
    """Positions (in `path_lists`, a ListArray) of the paths holding a viewpoint outside `nodes`."""
    flat = pc.list_flatten(path_lists).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(path_lists).to_numpy()
    return np.unique(parents[~np.isin(flat, nodes)])


def usable_episodes(table: pa.Table, references: dict, graphs, files) -> tuple[pa.Table, list[dict]]:
    """(the rows the page can use, one problem per other row: {"source", "record", "reason"}).

    `references`: {instr_id: reference viewpoint ids}; `graphs.get(scan)` gives a NavGraph or raises
    GraphError (a `GraphStore`), or returns None; `files`: the file names `_source` indexes. The first
    row of an agent's instr_id is kept and any repeat of it set aside.

    >>> import numpy as np
    >>> from vlnkit.navigation.graph import NavGraph
    >>> g = NavGraph("s", ("a", "b"), np.zeros((2, 3)), np.array([[0, 1]]))
    >>> t = pa.table({"agent": ["x"] * 3, "instr_id": ["1_0", "2_0", "1_0"], "scan": ["s"] * 3,
    ...               "path": [["a", "b"], ["a"], ["a"]], "_source": [0, 0, 0]})
    >>> kept, problems = usable_episodes(t, {"1_0": ["a", "b"]}, {"s": g}, ["e.parquet"])
    >>> kept.num_rows, [(p["record"], p["reason"]) for p in problems]
    (1, [("agent='x' instr_id='2_0'", 'instr_id not in the dataset'), ("agent='x' instr_id='1_0'", 'repeats an earlier row of this agent and instr_id')])
    """
    reasons = np.full(table.num_rows, None, dtype=object)

    def set_aside(rows, reason: str) -> None:  # the first reason found for a row is the one reported
        rows = np.asarray(rows)
        rows = rows[reasons[rows] == None] if rows.dtype != bool else rows & (reasons == None)  # noqa: E711
        reasons[rows] = reason

    ids, agents = _known_and_first(table, references, set_aside)
    scans = table["scan"].to_numpy(zero_copy_only=False).astype(str)
    set_aside(pc.list_value_length(table["path"]).to_numpy(zero_copy_only=False) == 0, "empty path")
    for scan in np.unique(scans):
        rows = np.flatnonzero((scans == scan) & (reasons == None))  # noqa: E711
        if not len(rows):
            continue
        try:
            graph = graphs.get(scan)
            if graph is None:
                raise GraphError(f"no graph of scan {scan!r}")
        except GraphError as exc:
            set_aside(rows, f"scan {scan}: {exc}")
            continue
        nodes = np.array(list(graph.index), dtype=str)
        set_aside(
            rows[_bad_rows(table["path"].take(rows).combine_chunks(), nodes)],
            f"a viewpoint of the path is not in the graph of scan {scan}",
        )
        refs = [references[i] for i in ids[rows]]
        ref_flat = np.fromiter(chain.from_iterable(refs), dtype=object).astype(str)
        ref_parent = np.repeat(np.arange(len(rows)), [len(r) for r in refs])
        bad = np.unique(ref_parent[~np.isin(ref_flat, nodes)])
        set_aside(rows[bad], f"a viewpoint of the reference path is not in the graph of scan {scan}")
    return _kept_and_problems(table, reasons, agents, ids, files)


def _known_and_first(table: pa.Table, references, set_aside) -> tuple[np.ndarray, np.ndarray]:
    """The rules every page shares: a row's instr_id must be in the dataset, and an agent's first row of an
    instr_id is kept. Returns (instr_ids, agents) as numpy strings."""
    ids = table["instr_id"].to_numpy(zero_copy_only=False).astype(str)
    agents = table["agent"].to_numpy(zero_copy_only=False).astype(str)
    set_aside(~np.isin(ids, np.array(list(references), dtype=str)), "instr_id not in the dataset")
    _, first = np.unique(np.char.add(np.char.add(agents, "\t"), ids), return_index=True)
    repeat = np.ones(table.num_rows, dtype=bool)
    repeat[first] = False
    set_aside(repeat, "repeats an earlier row of this agent and instr_id")
    return ids, agents


def _kept_and_problems(table, reasons, agents, ids, files) -> tuple[pa.Table, list[dict]]:
    bad = np.flatnonzero(reasons != None)  # noqa: E711
    source = table[SOURCE].to_numpy(zero_copy_only=False)
    problems = [
        {
            "source": files[source[r]],
            "record": f"agent={str(agents[r])!r} instr_id={str(ids[r])!r}",
            "reason": str(reasons[r]),
        }
        for r in bad.tolist()
    ]
    return table.filter(pa.array(reasons == None)), problems  # noqa: E711


def usable_continuous(table: pa.Table, references: dict, files) -> tuple[pa.Table, list[dict]]:
    """`usable_episodes` for a continuous dataset's rows: its instr_id in the dataset (`references`), an
    agent's first row of it. A graph is not needed (it is drawn under the positions when the scan has
    one), and a row without positions is an agent given as simulator results: usable, with nothing to draw.

    >>> t = pa.table({"agent": ["x", "x"], "instr_id": ["1_0", "9_0"], "_source": [0, 0]})
    >>> kept, problems = usable_continuous(t, {"1_0": {}}, ["e.parquet"])
    >>> kept.num_rows, problems[0]["reason"]
    (1, 'instr_id not in the dataset')
    """
    reasons = np.full(table.num_rows, None, dtype=object)

    def set_aside(rows, reason: str) -> None:
        rows = np.asarray(rows, dtype=bool) & (reasons == None)  # noqa: E711
        reasons[rows] = reason

    ids, agents = _known_and_first(table, references, set_aside)
    return _kept_and_problems(table, reasons, agents, ids, files)
