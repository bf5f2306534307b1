"""Joined paths (R4R, R6R, R8R) built a scan at a time as Arrow columns (docs/design.md, "R4R", "Longer joins").

Why a module of its own: a scan's joined paths are many (R4R train: 26k from 4.7k R2R paths; a chain
of K paths has N^K instructions), and building them one dict at a time cost ~60 us each in Python. Here
every joined path of a scan is built at once: gaps, distances and path ids in numpy over the (m, K)
chain array, each distinct connector (shortest path between two viewpoints) reconstructed once for all
chains by walking the predecessor matrix column-wise, the paths and the K-way instruction products
assembled as ragged gathers into one Arrow `list<string>` column each. Dicts are made only where an
output needs them (`JoinedBatch.records`), and BabyWalk's `_landmark` layout only when asked.

The record of a chain is the R4R generator's (`tests/oracles/r4r_chain_builder.py`, a builder of one
chain at a time, is the tests' oracle for it): each next source S is appended as
`path[:-1] + C + S.path[1:]`, C the shortest path from the path so far's end to S's start; distances
add up left to right (d_1 + g_1 + d_2 + g_2 + ...), so K = 2 gives R4R's record bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vlnkit.datasets.schemas import R4R_PATHS
from vlnkit.hashing import stable_hash_array
from vlnkit.navigation.graph import NavGraph

# path_id of a joined pair = first_path_id * PAIR_ID_BASE + second_path_id: stable on any runner,
# and both source ids can be read back from it.
PAIR_ID_BASE = 1_000_000
# Columns whose strings repeat (viewpoint ids, the scan): decoded once per distinct value.
REPEATED = frozenset({"scan", "path", "shortest_path"})


def pair_id_problem(pid: int) -> str:
    return f"path_id {pid} is outside [0, {PAIR_ID_BASE}); cannot form a stable joined path_id"


def chain_path_ids(pids: np.ndarray) -> np.ndarray:
    """The path_id of each chain of source path ids ((m, K), in order): stable on any runner and bundle order.

    Two sources: `first * PAIR_ID_BASE + second` (R4R's numbering, both ids readable from it; the ids
    must be in [0, PAIR_ID_BASE)). Three or more: a decimal composite would overflow int64 at four, so
    it is the 63-bit `stable_hash` of the ids (the ids themselves are kept in the record's `path_ids`).

        >>> chain_path_ids(np.array([[12, 34]])).tolist()
        [12000034]
    """
    if pids.shape[1] == 2:
        return pids[:, 0] * PAIR_ID_BASE + pids[:, 1]
    return (stable_hash_array(*pids.T) >> np.uint64(1)).astype(np.int64)


def ragged_take(pool: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """pool[starts[0] : starts[0] + lengths[0]] ++ pool[starts[1] : ...] ++ ..., with no loop.

    >>> ragged_take(np.arange(10, 20), np.array([0, 5, 9]), np.array([2, 0, 1])).tolist()
    [10, 11, 19]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    out_starts = np.cumsum(lengths) - lengths
    shift = np.repeat(np.asarray(starts, dtype=np.int64) - out_starts, lengths)
    return pool[shift + np.arange(int(lengths.sum()), dtype=np.int64)]


def _offsets(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))


def _list_array(offsets: np.ndarray, values: pa.Array) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values)


def shortest_paths(graph: NavGraph, sources: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The shortest paths sources[q] -> targets[q] (reachable pairs only) as (flat viewpoint indices, lengths).

    All pairs walk the predecessor matrix back from the target together, one step per iteration.

        >>> g = NavGraph("s", ("a", "b", "c"), np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]]), np.array([[0, 1], [1, 2]]))
        >>> flat, lengths = shortest_paths(g, np.array([0, 2, 1]), np.array([2, 0, 1]))
        >>> flat.tolist(), lengths.tolist()
        ([0, 1, 2, 2, 1, 0, 1], [3, 3, 1])
    """
    pred = graph.predecessors
    steps = [targets]
    current = targets
    while True:
        moving = current != sources
        if not moving.any():
            break
        current = np.where(moving, pred[sources, current], current)
        steps.append(current)
    walk = np.stack(steps, axis=1)  # row q: target, its predecessor, ..., source, source, ...
    lengths = (walk != sources[:, None]).sum(axis=1) + 1
    # Reversed: row q's path is walk[q, lengths[q] - 1], ..., walk[q, 0].
    row_starts = np.arange(len(sources), dtype=np.int64) * walk.shape[1] + lengths - 1
    within = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return walk.ravel()[np.repeat(row_starts, lengths) - within], lengths


def python_list(column: pa.ChunkedArray, repeated: bool = False) -> list:
    """`column.to_pylist()` for the column types of joined paths, faster: numbers through numpy, lists
    as slices of one flat list, and with `repeated` strings decoded once per distinct value (a scan's
    paths repeat a few hundred viewpoint ids).

        >>> python_list(pa.chunked_array([pa.array([["a", "b"], [], ["b"]])]), repeated=True)
        [['a', 'b'], [], ['b']]
    """
    array = column.combine_chunks()
    if pa.types.is_list(array.type):
        values = array.flatten()
        lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
        if len(lengths) and lengths[0] > 0 and (lengths == lengths[0]).all() and not pa.types.is_string(values.type):
            return values.to_numpy(zero_copy_only=False).reshape(len(lengths), -1).tolist()  # path_ids, join_distances
        flat = python_list(pa.chunked_array([values], values.type), repeated)
        ends = np.cumsum(lengths).tolist()
        return [flat[a:b] for a, b in zip([0, *ends[:-1]], ends)]
    if repeated and pa.types.is_string(array.type):
        encoded = array.dictionary_encode()
        values = np.array(encoded.dictionary.to_pylist(), dtype=object)
        return values[encoded.indices.to_numpy(zero_copy_only=False)].tolist()
    return array.to_numpy(zero_copy_only=False).tolist()


@dataclass
class JoinedBatch:
    """One scan's joined paths: an Arrow table (R4R_PATHS columns), the chains it holds, the failed ones.

    `chains`: (m, K) indices into the records of the built rows, in table order; `ends`: (m, K) the
    position in each joined path of each source's last viewpoint (sub-path i ends there, sub-path
    i + 1 starts there: BabyWalk's layout); `errors`: (row of the input chain array, reason).
    """

    table: pa.Table
    chains: np.ndarray
    ends: np.ndarray
    errors: list[tuple[int, str]]

    def records(self, records: list[dict], landmark: bool = False, ordered: bool = False) -> list[dict]:
        """The joined paths as dicts (R4R_PATHS keys), for writers that take dicts; `records` are the
        sources `chains` index. With `landmark`, each has `_landmark` (sub-paths, their sources' start
        headings and instructions); with `ordered`, `_order` (the tuple of its sources' `_order`)."""
        names = list(self.table.column_names)
        columns = [python_list(self.table[name], name in REPEATED) for name in names]
        if ordered:  # the tuple of the sources' `_order`, a column like the others
            orders = [r["_order"] for r in records]
            names.append("_order")
            columns.append(list(zip(*([orders[i] for i in c] for c in self.chains.T.tolist()))))
        out = [dict(zip(names, row)) for row in zip(*columns)]
        if landmark:  # BabyWalk's layout, only when asked: sub-path i + 1 starts where sub-path i ends
            for row, joined, ends in zip(self.chains.tolist(), out, self.ends.tolist()):
                sources = [records[i] for i in row]
                path = joined["path"]
                joined["_landmark"] = {
                    "path": [path[a : b + 1] for a, b in zip([0, *ends[:-1]], ends)],
                    "headings": [s["heading"] for s in sources],
                    "instructions": [list(s["instructions"]) for s in sources],
                }
        return out


def build_chains(graph: NavGraph, records: list[dict], chains: np.ndarray) -> JoinedBatch:
    """The joined records of `chains` ((m, K) indices into `records`, K >= 2, each row a chain in order).

    A chain that cannot be built (a junction or its goal unreachable, a pair id out of range) is left
    out and reported in `errors` with the reason the per-chain builder gave.

        >>> g = NavGraph("s", ("a", "b", "c"), np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]]), np.array([[0, 1], [1, 2]]))
        >>> r = lambda pid, path: {"path_id": pid, "path": path, "distance": 1.0, "heading": 0.0, "instructions": [f"{pid}."]}
        >>> recs = [r(1, ["a", "b"]), r(2, ["c", "b"]), r(3, ["b", "c"])]
        >>> j = build_chains(g, recs, np.array([[0, 1, 2]])).records(recs, landmark=True)[0]
        >>> j["path"], j["instructions"], j["join_distances"], j["_landmark"]["path"]
        (['a', 'b', 'c', 'b', 'c'], ['1.2.3.'], [1.0, 0.0], [['a', 'b'], ['b', 'c', 'b'], ['b', 'c']])
    """
    chains = np.asarray(chains, dtype=np.int64)
    if chains.ndim != 2 or chains.shape[1] < 2:
        raise ValueError(f"chains must be an (m, K) index array with K >= 2, got shape {chains.shape}")
    m, k = chains.shape
    # Per record: its path as indices into a flat pool, distance, heading, path id, instructions.
    rec_paths = [graph.indices(r["path"]) for r in records]
    rec_len = np.array([len(p) for p in rec_paths], dtype=np.int64)
    rec_off = _offsets(rec_len)[:-1]
    rec_flat = np.concatenate(rec_paths) if rec_paths else np.zeros(0, np.int64)
    rec_start = rec_flat[rec_off] if len(rec_flat) else np.zeros(0, np.int64)
    rec_end = rec_flat[rec_off + rec_len - 1] if len(rec_flat) else np.zeros(0, np.int64)
    rec_distance = np.array([r["distance"] for r in records], dtype=np.float64)
    rec_heading = np.array([r["heading"] for r in records], dtype=np.float64)
    rec_pid = np.array([r["path_id"] for r in records], dtype=np.int64)
    n_instr = np.array([len(r["instructions"]) for r in records], dtype=np.int64)
    instr_off = _offsets(n_instr)[:-1]
    instr_pool = pa.array([s for r in records for s in r["instructions"]], pa.string())

    # Junction j joins source j's end to source j + 1's start; the goal is d(first start, last end).
    dist = graph.distances
    ends, starts = rec_end[chains[:, :-1]], rec_start[chains[:, 1:]]
    gaps = dist[ends, starts]
    sp_from, sp_to = rec_start[chains[:, 0]], rec_end[chains[:, -1]]
    sp_distance = dist[sp_from, sp_to]
    pids = rec_pid[chains]
    bad_gap = ~np.isfinite(gaps).all(axis=1)
    bad_goal = ~np.isfinite(sp_distance)
    bad_pid = ((pids < 0) | (pids >= PAIR_ID_BASE)).any(axis=1) if k == 2 else np.zeros(m, bool)
    bad = bad_gap | bad_goal | bad_pid
    errors = [(int(q), _reason(graph, ends[q], starts[q], sp_from[q], sp_to[q], pids[q])) for q in np.flatnonzero(bad)]
    if bad.any():
        good = ~bad
        chains, ends, starts, gaps = chains[good], ends[good], starts[good], gaps[good]
        sp_from, sp_to, sp_distance, pids = sp_from[good], sp_to[good], sp_distance[good], pids[good]
        m = len(chains)

    distance = rec_distance[chains[:, 0]]
    for j in range(k - 1):  # left to right, as the generator adds: ((d_1 + g_1) + d_2) + g_2 ...
        distance = distance + gaps[:, j]
        distance = distance + rec_distance[chains[:, j + 1]]

    # Every distinct connector and the goal's shortest path, reconstructed once for all chains.
    pair_keys = np.concatenate([ends.ravel(), sp_from]) * len(graph) + np.concatenate([starts.ravel(), sp_to])
    unique_keys, which = np.unique(pair_keys, return_inverse=True)
    conn_flat, conn_len = shortest_paths(graph, unique_keys // len(graph), unique_keys % len(graph))
    conn_off = _offsets(conn_len)[:-1] + len(rec_flat)
    pool = np.concatenate([rec_flat, conn_flat])
    junction, goal = which[: m * (k - 1)].reshape(m, k - 1), which[m * (k - 1) :]

    # Path: source 1, then per junction the connector and the next source, each without its first viewpoint.
    seg_start = np.empty((m, 2 * k - 1), dtype=np.int64)
    seg_len = np.empty((m, 2 * k - 1), dtype=np.int64)
    seg_start[:, 0], seg_len[:, 0] = rec_off[chains[:, 0]], rec_len[chains[:, 0]]
    seg_start[:, 1::2], seg_len[:, 1::2] = conn_off[junction] + 1, conn_len[junction] - 1
    seg_start[:, 2::2], seg_len[:, 2::2] = rec_off[chains[:, 1:]] + 1, rec_len[chains[:, 1:]] - 1
    path_flat = ragged_take(pool, seg_start.ravel(), seg_len.ravel())
    path_ends = np.cumsum(seg_len, axis=1)[:, 0::2] - 1
    viewpoints = pa.array(graph.viewpoints, pa.string())
    path = _list_array(_offsets(seg_len.sum(axis=1)), viewpoints.take(path_flat))
    sp_flat = ragged_take(pool, conn_off[goal], conn_len[goal])
    shortest = _list_array(_offsets(conn_len[goal]), viewpoints.take(sp_flat))

    # Instructions: every K-way product, the first source's instruction varying slowest.
    counts = n_instr[chains]
    strides = np.cumprod(counts[:, ::-1], axis=1)[:, ::-1]  # strides[:, 0]: the product's size
    total = strides[:, 0]
    owner = np.repeat(np.arange(m), total)
    t = np.arange(int(total.sum()), dtype=np.int64) - np.repeat(np.cumsum(total) - total, total)
    parts = []
    for j in range(k):
        stride = strides[owner, j + 1] if j + 1 < k else np.ones(len(owner), np.int64)
        parts.append(instr_pool.take(instr_off[chains[owner, j]] + (t // stride) % counts[owner, j]))
    joined_instr = pc.binary_join_element_wise(*parts, "") if len(owner) else pa.array([], pa.string())
    instructions = _list_array(_offsets(total), joined_instr)

    columns = {
        "path_id": pa.array(chain_path_ids(pids), pa.int64()),
        "scan": pa.array(np.full(m, graph.scan, dtype=object), pa.string()),
        "path": path,
        "distance": pa.array(distance, pa.float64()),
        "heading": pa.array(rec_heading[chains[:, 0]], pa.float64()),
        "instructions": instructions,
        "first_path_id": pa.array(pids[:, 0], pa.int64()),
        "second_path_id": pa.array(pids[:, 1], pa.int64()),
        "shortest_path": shortest,
        "shortest_path_distance": pa.array(sp_distance, pa.float64()),
        "join_distance": pa.array(gaps.max(axis=1), pa.float64()),
        "path_ids": _list_array(np.arange(m + 1) * k, pa.array(pids.ravel(), pa.int64())),
        "join_distances": _list_array(np.arange(m + 1) * (k - 1), pa.array(gaps.ravel(), pa.float64())),
    }
    table = pa.Table.from_arrays([columns[f.name] for f in R4R_PATHS], schema=R4R_PATHS)
    return JoinedBatch(table, chains, path_ends, errors)


def _reason(graph: NavGraph, ends, starts, sp_from, sp_to, pids) -> str:
    """Why one chain cannot be built, worded and ordered as the per-chain builder checks it."""
    vp = graph.viewpoints
    for end, start in zip(ends.tolist(), starts.tolist()):
        if not np.isfinite(graph.distances[end, start]):
            return f"scan {graph.scan!r}: {vp[start]!r} is unreachable from {vp[end]!r}"
    if not np.isfinite(graph.distances[sp_from, sp_to]):
        return f"scan {graph.scan!r}: goal {vp[sp_to]!r} is unreachable from start {vp[sp_from]!r}"
    for pid in pids.tolist():
        if not 0 <= pid < PAIR_ID_BASE:
            return pair_id_problem(pid)
    return "cannot be built"  # not reached: only chains that failed a check come here


__all__ = [
    "JoinedBatch",
    "PAIR_ID_BASE",
    "build_chains",
    "chain_path_ids",
    "pair_id_problem",
    "python_list",
    "ragged_take",
    "shortest_paths",
]
