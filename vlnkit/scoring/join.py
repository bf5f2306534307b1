"""Joining one bucket's reference paths and predictions into scoreable pairs: every rule of the match, once.

`join_bucket(pieces, agents, dataset_files, vocab, graphs)` takes a bucket's pieces (`ReferenceBatch` and
`PredictionBatch`, in any order) and returns a `BucketJoin`: the reference paths kept, their episodes,
and per agent the matched (prediction row, episode) pairs with both paths as node indices of their scan,
plus every dead letter and every episode left without a usable prediction. Numpy throughout: sorting and
searching replace per-episode dicts.

The rules, checked in this order for each episode id, with the one wording of each dead letter:

0. dataset records sharing a path_id (an RxR guide line: its instruction_id): the first (file rank, then
   record index) is kept, the others are "dedupe" dead letters naming the one kept;
1. no reference episode for a prediction: "match", unknown instr_id (`vlnkit.scoring.reading.unknown_id`), or,
   when a dataset record with its key was refused at reading (`RefusedReferences`), that record's
   (`refused_record`); an RxR instruction_id ("26") matches only an RxR guide line, "<path_id>_<k>" only an
   R2R record;
2. no prediction for an episode: the episode is without a usable prediction, and missing unless the agent
   gave one that was refused at reading (`RefusedPredictions`: a prediction was given);
3. several predictions for an episode: the first (file rank, then record index) is kept, the others are
   "match" dead letters naming the one kept;
4. the scan's graph does not load ("graph"); the reference path leaves the graph ("reference"); a
   viewpoint of the trajectory is not in the scan ("viewpoint"); the trajectory starts elsewhere than the
   reference ("start"). Such an episode has no usable prediction.

    >>> from vlnkit.datasets.columns import Paths, PredictionBatch, ReferenceBatch, Vocabulary
    >>> from vlnkit.navigation.graph import GraphStore, NavGraph
    >>> line = NavGraph("s", ("a", "b", "c"), np.arange(9.0).reshape(3, 3), np.array([[0, 1], [1, 2]]))
    >>> graphs, vocab = GraphStore("", {"s": line}), Vocabulary(["s"], [["a", "b", "c"]])
    >>> refs = ReferenceBatch(np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([7]), np.array(["s"]),
    ...                       np.array([2]), Paths.from_lists([["a", "b", "c"]], vocab))
    >>> preds = PredictionBatch("a", np.zeros(2, np.int64), np.arange(2), np.array([7, 8]), np.array([1, 0]),
    ...                         Paths.from_lists([["a", "b"], ["a"]], vocab))
    >>> join = join_bucket([refs, preds], {"a": ["p.json"]}, ["d.json"], vocab, graphs)
    >>> join.episode_ids(join.agents["a"].episodes).to_pylist(), [d.reason for d in join.agents["a"].dead]
    (['7_1'], ["unknown instr_id '8_0': not in the dataset"])
    >>> join.episode_ids(join.agents["a"].missing).to_pylist()
    ['7_0']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from vlnkit.compiled import njit
from vlnkit.datasets.columns import (
    Paths,
    PredictionBatch,
    ReferenceBatch,
    RefusedPredictions,
    RefusedReferences,
    Vocabulary,
    take_extras,
)
from vlnkit.datasets.first_wins import first_of_each
from vlnkit.datasets.prediction_batches import BARE_K
from vlnkit.io.dead_letters import RecordError
from vlnkit.navigation.graph import GraphError
from vlnkit.scoring.reading import MATCH, unknown_id


def instr_ids(path_id: np.ndarray, k: np.ndarray, middle: np.ndarray | None = None) -> pa.Array:
    """ "<path_id>_<k>" strings as an Arrow array, written by one compiled pass; "<path_id>" alone where k is -1
    (an RxR instruction_id, see `vlnkit.datasets.columns.ReferenceBatch`); "<path_id>_<middle>_<k>" with
    `middle` (REVERIE's objId).

    >>> instr_ids(np.array([4, 26, -3, -9223372036854775808]), np.array([1, -1, 0, 12])).to_pylist()
    ['4_1', '26', '-3_0', '-9223372036854775808_12']
    >>> instr_ids(np.array([1357]), np.array([2]), np.array([66])).to_pylist()
    ['1357_66_2']
    """
    path_id = np.ascontiguousarray(path_id, np.int64)
    k = np.ascontiguousarray(k, np.int64)
    three = middle is not None
    middle = np.ascontiguousarray(middle if three else np.zeros(0), np.int64)
    offsets = np.zeros(len(path_id) + 1, np.int32)
    data = np.empty((62 if three else 41) * len(path_id), np.uint8)  # 20-character integers and "_"
    used = _format_ids(path_id, k, BARE_K, middle, three, offsets, data)
    return pa.StringArray.from_buffers(len(path_id), pa.py_buffer(offsets), pa.py_buffer(data[:used]))


@njit(cache=True, inline="always")
def _write_int(value, data, at):
    """The decimal text of an int64 at data[at:], as `str(int)` writes it; returns the position after it."""
    if value < 0:
        data[at] = 45
        at += 1
        magnitude = np.uint64(-(value + 1)) + np.uint64(1)  # -2**63 too
    else:
        magnitude = np.uint64(value)
    digits = 1
    scale = np.uint64(1)
    while magnitude // scale >= np.uint64(10):
        scale *= np.uint64(10)
        digits += 1
    for _ in range(digits):
        data[at] = 48 + np.uint8(magnitude // scale)
        magnitude %= scale
        scale //= np.uint64(10)
        at += 1
    return at


@njit(cache=True, nogil=True)
def _format_ids(path_id, k, bare, middle, three, offsets, data):
    at = 0
    for i in range(len(path_id)):
        at = _write_int(path_id[i], data, at)
        if three:
            data[at] = 95
            at = _write_int(middle[i], data, at + 1)
        if k[i] != bare:
            data[at] = 95
            at = _write_int(k[i], data, at + 1)
        offsets[i + 1] = at
    return at


@njit(cache=True, nogil=True)
def _local_nodes(offsets, values, scan_ids, vocab_local, vocab_scan, local, odd):
    """Global viewpoint numbers -> node indices of each row's scan; odd[row] where a number is -1 (an id the
    vocabulary could not number) or belongs to another scan: those rows are looked up by string."""
    for r in range(len(offsets) - 1):
        for i in range(offsets[r], offsets[r + 1]):
            v = values[i]
            if v < 0 or vocab_scan[v] != scan_ids[r]:
                odd[r] = True
                local[i] = 0
            else:
                local[i] = vocab_local[v]


def to_scan_nodes(
    paths: Paths, scan_ids: np.ndarray, scans: np.ndarray, vocab: Vocabulary, graphs
) -> tuple[Paths, dict]:
    """Paths of global viewpoint numbers -> (the same paths as node indices of each row's scan, {row: first
    viewpoint not in its scan}), in one gather; rows holding an id the vocabulary could not number, or a
    number of another scan, are looked up by string in the scan's graph (`NavGraph.index`), as the graph
    itself would. A row in the second result keeps whatever its values were.

    `scan_ids` are vocabulary scan numbers per row (-1: not in the vocabulary), `scans` the names.
    """
    local = np.empty(len(paths.values), np.int64)
    odd = np.zeros(len(paths), np.bool_)
    _local_nodes(paths.offsets, paths.values, np.asarray(scan_ids, np.int64), vocab.local, vocab.scan_of, local, odd)
    check = set(np.flatnonzero(odd).tolist()) | set(paths.strings)
    bad = {}
    for r in sorted(check):
        vps = paths.viewpoints(r, vocab)
        index = graphs.get(str(scans[r])).index
        found = [index.get(v) for v in vps]
        if None in found:
            bad[r] = vps[found.index(None)]
        else:
            local[paths.offsets[r] : paths.offsets[r + 1]] = found
    return Paths(paths.offsets, local), bad


@dataclass
class AgentMatch:
    """One agent's result in a bucket: the scored pairs and everything that was not scored."""

    pred_rows: np.ndarray  # rows of the agent's PredictionBatch, one per scored pair
    episodes: np.ndarray  # the pairs' episode numbers (see BucketJoin)
    queries: Paths  # the pairs' trajectories as node indices of their scan
    missing: np.ndarray  # episodes with no prediction at all
    unusable: np.ndarray  # episodes with no scored prediction (missing ones included)
    dead: list[RecordError] = field(default_factory=list)
    extras: dict = field(default_factory=dict)  # the prediction batch's extra columns, one entry per pair
    rank: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # file rank of each pair's prediction
    index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # its record index in that file
    sources: list[str] = field(default_factory=list)  # the agent's files, by rank


@dataclass
class BucketJoin:
    """A joined bucket. Episodes are numbered 0.. in reference order (each reference row holds
    `instructions` episodes); `episode_ref[e]` is the reference row of episode e, `episode_k[e]` its k."""

    references: ReferenceBatch  # unique path_ids, sorted
    reference_nodes: Paths  # the reference paths as node indices (rows of `references`; empty if unusable)
    usable_references: np.ndarray  # bool per reference row: its scan loads and its path is in the scan
    episode_ref: np.ndarray
    episode_k: np.ndarray
    agents: dict[str, AgentMatch]
    dead: list[RecordError]  # dataset duplicates
    scan_names: np.ndarray  # the references' distinct scans, sorted
    scan_code: np.ndarray  # per reference row, the index of its scan in `scan_names`
    format_ids: object = None  # (keys, k) -> instr_id strings (`instr_ids`, or a task's own)

    def episode_ids(self, episodes: np.ndarray) -> pa.Array:
        keys, k = self.references.path_id[self.episode_ref[episodes]], self.episode_k[episodes]
        return (self.format_ids or instr_ids)(keys, k)


def _instr_id(batch: PredictionBatch, row: int, format_ids=instr_ids) -> str:
    """One prediction's instr_id, for a dead letter (never made for the pairs that are scored)."""
    return format_ids(batch.path_id[row : row + 1], batch.k[row : row + 1])[0].as_py()


def _dedupe_references(
    refs: ReferenceBatch, dataset_files: list[str], format_ids=instr_ids
) -> tuple[ReferenceBatch, list[RecordError]]:
    order, first, kept = first_of_each(refs.path_id, refs.rank, refs.index)
    dead = []
    for pos in np.flatnonzero(~first).tolist():
        dup, keep = int(order[pos]), int(kept[pos])
        what = "instruction_id" if refs.first_k[dup] == BARE_K else "path_id"
        key = repr(int(refs.path_id[dup]))
        if format_ids is not instr_ids:  # a task's own key (REVERIE: "<path_id>_<objId>")
            what, key = "record", repr(format_ids(refs.path_id[dup : dup + 1], np.array([BARE_K]))[0].as_py())
        dead.append(
            RecordError(
                dataset_files[int(refs.rank[dup])],
                f"#{int(refs.index[dup])}",
                f"duplicate {what} {key} (kept {dataset_files[int(refs.rank[keep])]} #{int(refs.index[keep])})",
                "dedupe",
            )
        )
    return refs.take(order[first]), dead


def refused_record(source: str, index: int, instr_id: str, where: str) -> RecordError:
    """The dead letter of a prediction whose dataset record was refused when it was read (the one wording)."""
    why = f"instr_id {instr_id!r} has no episode: its dataset record was refused ({where}; see that dead letter)"
    return RecordError(source, f"#{index} (instr_id={instr_id})", why, MATCH)


def _episodes_of(path_id: np.ndarray, k: np.ndarray, refs: ReferenceBatch, ep_start: np.ndarray) -> np.ndarray:
    """The episodes that (path_id, k) keys name, for the keys the references hold."""
    pos = np.minimum(np.searchsorted(refs.path_id, path_id), max(len(refs) - 1, 0))
    if not len(refs):
        return np.zeros(0, np.int64)
    found = (refs.path_id[pos] == path_id) & (k >= refs.first_k[pos]) & (k < refs.first_k[pos] + refs.instructions[pos])
    return ep_start[pos[found]] + k[found] - refs.first_k[pos[found]]


def _match(
    preds: PredictionBatch, refs: ReferenceBatch, ep_start: np.ndarray, sources: list[str], refused: dict, format_ids
):
    """Rules 1 and 3: (kept prediction rows, their episodes, dead letters). `refused` maps (path_id, is an
    RxR instruction_id) to where a refused dataset record with that key was."""
    pos = np.searchsorted(refs.path_id, preds.path_id)
    pos_c = np.minimum(pos, max(len(refs) - 1, 0))
    found = (pos < len(refs)) & (len(refs) > 0)
    if len(refs):
        # An R2R row holds k = 0 .. instructions - 1; an RxR row (first_k -1) one bare instruction_id.
        found &= refs.path_id[pos_c] == preds.path_id
        found &= (preds.k >= refs.first_k[pos_c]) & (preds.k < refs.first_k[pos_c] + refs.instructions[pos_c])
    dead = []
    unknown = np.flatnonzero(~found)
    if len(unknown):
        ids = format_ids(preds.path_id[unknown], preds.k[unknown]).to_pylist()
        for row, iid in zip(unknown.tolist(), ids):
            source, index = sources[int(preds.rank[row])], int(preds.index[row])
            where = refused.get((int(preds.path_id[row]), bool(preds.k[row] == BARE_K)))
            dead.append(unknown_id(source, index, iid) if where is None else refused_record(source, index, iid, where))
    rows = np.flatnonzero(found)
    ep = ep_start[pos_c[rows]] + preds.k[rows] - refs.first_k[pos_c[rows]] if len(rows) else np.zeros(0, np.int64)
    order, first, kept = first_of_each(ep, preds.rank[rows], preds.index[rows])
    if not first.all():
        dups = np.flatnonzero(~first)
        ids = format_ids(preds.path_id[rows[order[dups]]], preds.k[rows[order[dups]]]).to_pylist()
        for d, iid in zip(dups.tolist(), ids):
            row, keep = int(rows[order[d]]), int(rows[kept[d]])
            where = f"{sources[int(preds.rank[keep])]} #{int(preds.index[keep])}"
            label = f"#{int(preds.index[row])} (instr_id={iid})"
            dead.append(
                RecordError(
                    sources[int(preds.rank[row])],
                    label,
                    f"duplicate prediction for instr_id {iid!r} (kept {where})",
                    MATCH,
                )
            )
    keep = order[first]
    return rows[keep], ep[keep], dead


def join_bucket(
    pieces, agents: dict[str, list[str]], dataset_files: list[str], vocab: Vocabulary, graphs, format_ids=instr_ids
) -> BucketJoin:
    """A bucket's pieces -> BucketJoin (see the module docstring for the rules).

    `agents` maps each agent to its prediction files (rank -> source path, for dead letters);
    `dataset_files` maps reference ranks to paths (`vlnkit.scoring.reading.dataset_ranks`). `graphs` is
    a `GraphStore`. `format_ids(keys, k)` writes instr_ids (a task's own form: REVERIE's).
    """
    refs = ReferenceBatch.concat([b for b in pieces if isinstance(b, ReferenceBatch)])
    refs, dataset_dead = _dedupe_references(refs, dataset_files, format_ids)
    refused: dict[tuple[int, bool], str] = {}
    for part in (b for b in pieces if isinstance(b, RefusedReferences)):
        for pid, k, where in zip(part.path_id.tolist(), part.first_k.tolist(), part.where):
            refused.setdefault((pid, k == BARE_K), where)
    ep_start = np.zeros(len(refs) + 1, dtype=np.int64)
    np.cumsum(refs.instructions, out=ep_start[1:])
    n_episodes = int(ep_start[-1])
    episode_ref = np.repeat(np.arange(len(refs), dtype=np.int64), refs.instructions)
    episode_k = np.arange(n_episodes, dtype=np.int64) - ep_start[:-1][episode_ref] + refs.first_k[episode_ref]

    # Rule 4, reference side: which scans load, and which reference paths are in their scan.
    names, which = np.unique(refs.scan, return_inverse=True)
    errors: dict[str, GraphError | None] = {}
    for scan in names.tolist():  # a few scans per bucket
        try:
            graphs.get(scan)
            errors[scan] = None
        except GraphError as exc:
            errors[scan] = exc
    scan_ids = np.asarray([vocab.scan_ids.get(s, -1) for s in names.tolist()], dtype=np.int64)[which]
    loads = np.asarray([errors[s] is None for s in names.tolist()], dtype=bool)[which]
    reference_nodes = Paths(np.zeros(len(refs) + 1, np.int64), np.zeros(0, np.int64))
    ref_bad: dict[int, str] = {}
    if loads.any():
        rows = np.flatnonzero(loads)
        nodes, bad = to_scan_nodes(refs.paths.take(rows), scan_ids[rows], refs.scan[rows], vocab, graphs)
        lengths = np.zeros(len(refs), np.int64)
        lengths[rows] = nodes.lengths
        offsets = np.zeros(len(refs) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        reference_nodes = Paths(offsets, nodes.values)
        ref_bad = {int(rows[r]): v for r, v in bad.items()}
    usable = loads.copy()
    usable[list(ref_bad)] = False

    matches = {}
    for agent, files in agents.items():
        mine = [b for b in pieces if isinstance(b, PredictionBatch) and b.agent == agent]
        p = PredictionBatch.concat(agent, mine)
        rows, ep, dead = _match(p, refs, ep_start, files, refused, format_ids)
        has = np.zeros(n_episodes, dtype=bool)
        has[ep] = True
        given = RefusedPredictions.concat(
            agent, [b for b in pieces if isinstance(b, RefusedPredictions) and b.agent == agent]
        )
        tried = np.zeros(n_episodes, dtype=bool)  # given a prediction that was refused at reading: not missing
        tried[_episodes_of(given.path_id, given.k, refs, ep_start)] = True
        missing = np.flatnonzero(~has & ~tried)
        ref_rows = episode_ref[ep]
        reasons: list[tuple[int, str, str]] = []  # (pair, stage, reason)
        for i in np.flatnonzero(~loads[ref_rows]).tolist():
            reasons.append((i, "graph", str(errors[str(refs.scan[ref_rows[i]])])))
        for i in np.flatnonzero(loads[ref_rows] & ~usable[ref_rows]).tolist():
            r = int(ref_rows[i])
            why = f"viewpoint {ref_bad[r]!r} is not an included viewpoint of scan {str(refs.scan[r])!r}"
            iid = _instr_id(p, int(rows[i]), format_ids)
            reasons.append((i, "reference", f"reference path of {iid!r} is unusable: {why}"))
        cand = np.flatnonzero(usable[ref_rows])
        queries, q_bad = to_scan_nodes(
            p.paths.take(rows[cand]), scan_ids[ref_rows[cand]], refs.scan[ref_rows[cand]], vocab, graphs
        )
        vp_bad = np.zeros(len(cand), dtype=bool)
        for r, v in q_bad.items():
            vp_bad[r] = True
            scan = str(refs.scan[ref_rows[cand[r]]])
            reasons.append(
                (int(cand[r]), "viewpoint", f"viewpoint {v!r} is not an included viewpoint of scan {scan!r}")
            )
        # Starts: the first node of each trajectory against the first of its reference.
        q_first = queries.values[queries.offsets[:-1]] if len(cand) else np.zeros(0, np.int64)
        r_first = reference_nodes.values[reference_nodes.offsets[ref_rows[cand]]] if len(cand) else q_first
        start_bad = (q_first != r_first) & ~vp_bad
        for r in np.flatnonzero(start_bad).tolist():
            i = int(cand[r])
            ref_vps = refs.paths.viewpoints(int(ref_rows[i]), vocab)
            q_vps = p.paths.viewpoints(int(rows[i]), vocab)
            reasons.append(
                (
                    i,
                    "start",
                    f"trajectory starts at {q_vps[0]!r} but the reference path starts at {ref_vps[0]!r} "
                    "(predictions made on another revision of the dataset?)",
                )
            )
        for i, stage, reason in sorted(reasons):
            row = int(rows[i])
            dead.append(
                RecordError(
                    files[int(p.rank[row])],
                    f"#{int(p.index[row])} (instr_id={_instr_id(p, row, format_ids)})",
                    reason,
                    stage,
                )
            )
        good = ~(vp_bad | start_bad)
        keep = cand[good]
        scored = np.zeros(n_episodes, dtype=bool)
        scored[ep[keep]] = True
        kept = rows[keep]
        matches[agent] = AgentMatch(
            kept,
            ep[keep],
            queries.take(np.flatnonzero(good)),
            missing,
            np.flatnonzero(~scored),
            dead,
            take_extras(p.extras, kept),
            p.rank[kept],
            p.index[kept],
            list(files),
        )
    return BucketJoin(
        refs, reference_nodes, usable, episode_ref, episode_k, matches, dataset_dead, names, which, format_ids
    )
