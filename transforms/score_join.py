"""Joining predictions to reference episodes inside one bucket, with numpy instead of per-episode dicts.

`join_bucket(pieces, ...)` takes a bucket's pieces, [("r", ReferenceBatch) | ("p", PredictionBatch)],
and returns a `BucketJoin`: the reference paths kept (first of each path_id), the episodes, per agent
the matched (prediction row, episode) pairs with both paths as node indices of their scan, and
every dead letter and missing episode. The rules, and the wording of every dead letter, are those of
the per-episode matcher this replaces, checked in this order for each instr_id:

1. no reference episode: every prediction of it is dead ("match", unknown instr_id); an RxR
   instruction_id ("26") matches only an RxR guide line, "<path_id>_<k>" only an R2R record;
2. no prediction: the episode is missing;
3. several predictions: the first (file rank, then record index) is kept, the others are dead;
4. the scan's graph does not load ("graph"); the reference path leaves the graph ("reference");
   a viewpoint of the trajectory is not in the scan ("viewpoint"); the trajectory starts
   elsewhere than the reference ("start"). Such an episode has no usable prediction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from transforms.deadletter import dead_letter
from vlnkit.datasets.columns import Paths, PredictionBatch, ReferenceBatch, Vocabulary
from vlnkit.datasets.prediction_batches import BARE_K
from vlnkit.navigation.graph import GraphError


def instr_ids(path_id: np.ndarray, k: np.ndarray) -> pa.Array:
    """ "<path_id>_<k>" strings, built by Arrow in one call; "<path_id>" alone where k is -1 (an RxR
    instruction_id, see `vlnkit.datasets.columns.ReferenceBatch`).

    >>> instr_ids(np.array([4, 26]), np.array([1, -1])).to_pylist()
    ['4_1', '26']
    """
    import pyarrow.compute as pc  # here, not at the top: the job's own process never calls this (0.2 s)

    k = np.asarray(k, np.int64)
    ids = pa.array(np.asarray(path_id, np.int64)).cast(pa.string())
    joined = pc.binary_join_element_wise(ids, pa.array(k).cast(pa.string()), "_")
    bare = k == BARE_K
    return pc.if_else(pa.array(bare), ids, joined) if bare.any() else joined


def padded(offsets: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat paths -> (padded (B, L) int64 array, lengths), like `vlnkit.evaluation.common.pack`."""
    lengths = np.diff(offsets)
    out = np.zeros((len(lengths), max(int(lengths.max(initial=1)), 1)), dtype=np.int64)
    out[np.arange(out.shape[1]) < lengths[:, None]] = values
    return out, lengths


@dataclass
class Resolved:
    """Paths of some rows as node indices of each row's scan; `bad[row]` = first viewpoint not in it."""

    offsets: np.ndarray
    local: np.ndarray
    bad: dict[int, str]


def resolve(paths: Paths, scan_ids: np.ndarray, scans: np.ndarray, vocab: Vocabulary, graphs) -> Resolved:
    """Global viewpoint numbers -> node indices of each row's scan (one gather), by string where needed.

    `scan_ids` are vocabulary scan numbers per row (-1: not in the vocabulary), `scans` the names.
    Rows whose numbers do not all belong to their scan (or hold ids the vocabulary could not
    number) are resolved through the scan's `NavGraph.index`, exactly as the graph itself does.
    """
    values = paths.values
    safe = np.clip(values, 0, None)
    row_of = paths.row_of_value()
    local = vocab.local[safe].astype(np.int64) if len(vocab.local) else np.zeros(len(values), np.int64)
    owner = vocab.scan_of[safe] if len(vocab.scan_of) else np.full(len(values), -1)
    ok = (values >= 0) & (owner == scan_ids[row_of])
    check = set(np.unique(row_of[~ok]).tolist()) | set(paths.strings)
    bad = {}
    for r in sorted(check):
        vps = paths.viewpoints(r, vocab)
        index = graphs.get(str(scans[r])).index
        found = [index.get(v) for v in vps]
        if None in found:
            bad[r] = vps[found.index(None)]
        else:
            local[paths.offsets[r] : paths.offsets[r + 1]] = found
    return Resolved(paths.offsets, local, bad)


@dataclass
class AgentMatch:
    """One agent's result in a bucket: the scored pairs and everything that was not scored."""

    pred_rows: np.ndarray  # rows of the agent's PredictionBatch
    episodes: np.ndarray  # episode numbers (see BucketJoin)
    missing: np.ndarray  # episodes with no prediction at all
    unusable: np.ndarray  # episodes with no scored prediction (missing ones included)
    dead: list[dict] = field(default_factory=list)


@dataclass
class BucketJoin:
    references: ReferenceBatch  # unique path_ids, sorted
    ref_local: Resolved | None  # reference paths as node indices (rows of `references`)
    episode_ref: np.ndarray  # episode -> reference row
    episode_k: np.ndarray
    predictions: dict[str, PredictionBatch]
    pred_local: dict[str, Resolved]  # per agent, rows aligned with AgentMatch.pred_rows
    agents: dict[str, AgentMatch]
    dead: list[dict]  # dataset duplicates

    def episode_ids(self, episodes: np.ndarray) -> pa.Array:
        return instr_ids(self.references.path_id[self.episode_ref[episodes]], self.episode_k[episodes])


def _dedupe_references(refs: ReferenceBatch, dataset_files: list[str]) -> tuple[ReferenceBatch, list[dict]]:
    order = np.lexsort((refs.index, refs.rank, refs.path_id))
    pid = refs.path_id[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = pid[1:] != pid[:-1]
    dead = []
    if not first.all():
        group_first = order[np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))]
        for pos in np.flatnonzero(~first).tolist():
            dup, keep = int(order[pos]), int(group_first[pos])
            dead.append(
                dead_letter(
                    "dedupe",
                    dataset_files[int(refs.rank[dup])],
                    f"#{int(refs.index[dup])}",
                    f"duplicate {'instruction_id' if refs.first_k[dup] == BARE_K else 'path_id'} "
                    f"{int(refs.path_id[dup])!r} "
                    f"(kept {dataset_files[int(refs.rank[keep])]} #{int(refs.index[keep])})",
                )
            )
    return refs.take(order[first]), dead


def _match_agent(
    preds: PredictionBatch,
    refs: ReferenceBatch,
    ep_start: np.ndarray,
    n_episodes: int,
    sources: list[str],
) -> tuple[np.ndarray, np.ndarray, AgentMatch]:
    """Steps 1-3: (kept prediction rows, their episodes, the AgentMatch so far)."""
    pos = np.searchsorted(refs.path_id, preds.path_id)
    pos_c = np.minimum(pos, max(len(refs) - 1, 0))
    found = (pos < len(refs)) & (len(refs) > 0)
    if len(refs):
        # An R2R row holds k = 0 .. instructions - 1; an RxR row (first_k -1) one bare instruction_id.
        found &= refs.path_id[pos_c] == preds.path_id
        found &= (preds.k >= refs.first_k[pos_c]) & (preds.k < refs.first_k[pos_c] + refs.instructions[pos_c])
    dead = []

    def label(row: int, iid: str) -> tuple[str, str]:
        return sources[int(preds.rank[row])], f"#{int(preds.index[row])} (instr_id={iid})"

    unknown = np.flatnonzero(~found)
    if len(unknown):
        ids = instr_ids(preds.path_id[unknown], preds.k[unknown]).to_pylist()
        for row, iid in zip(unknown.tolist(), ids):
            dead.append(dead_letter("match", *label(row, iid), f"unknown instr_id {iid!r}: not in the dataset"))
    rows = np.flatnonzero(found)
    ep = ep_start[pos_c[rows]] + preds.k[rows] - refs.first_k[pos_c[rows]] if len(rows) else np.zeros(0, np.int64)
    order = np.lexsort((preds.index[rows], preds.rank[rows], ep))
    rows, ep = rows[order], ep[order]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = ep[1:] != ep[:-1]
    if not first.all():
        keep_of = rows[np.maximum.accumulate(np.where(first, np.arange(len(rows)), 0))]
        dups = np.flatnonzero(~first)
        ids = instr_ids(preds.path_id[rows[dups]], preds.k[rows[dups]]).to_pylist()
        for d, iid in zip(dups.tolist(), ids):
            row, keep = int(rows[d]), int(keep_of[d])
            kept = f"{sources[int(preds.rank[keep])]} #{int(preds.index[keep])}"
            dead.append(
                dead_letter("match", *label(row, iid), f"duplicate prediction for instr_id {iid!r} (kept {kept})")
            )
    rows, ep = rows[first], ep[first]
    has = np.zeros(n_episodes, dtype=bool)
    has[ep] = True
    missing = np.flatnonzero(~has)
    return rows, ep, AgentMatch(rows, ep, missing, missing, dead)


def join_bucket(
    pieces: list,
    agents: dict[str, list[str]],
    dataset_files: list[str],
    vocab: Vocabulary,
    graphs,
) -> BucketJoin:
    """A bucket's pieces -> BucketJoin (see the module docstring for the rules).

    `agents` maps each agent to its prediction files (rank -> source path, for dead letters);
    `dataset_files` maps reference ranks to paths. `graphs` is a `GraphStore`.
    """
    refs = ReferenceBatch.concat([b for tag, b in pieces if tag == "r"])
    refs, dataset_dead = _dedupe_references(refs, dataset_files)
    n = refs.instructions
    ep_start = np.zeros(len(refs) + 1, dtype=np.int64)
    np.cumsum(n, out=ep_start[1:])
    n_episodes = int(ep_start[-1])
    episode_ref = np.repeat(np.arange(len(refs), dtype=np.int64), n)
    episode_k = np.arange(n_episodes, dtype=np.int64) - ep_start[:-1][episode_ref] + refs.first_k[episode_ref]
    preds = {a: PredictionBatch.concat(a, [b for tag, b in pieces if tag == "p" and b.agent == a]) for a in agents}

    scan_ok: dict[str, GraphError | None] = {}
    for scan in np.unique(refs.scan).tolist():  # a few scans per bucket
        try:
            graphs.get(scan)
            scan_ok[scan] = None
        except GraphError as exc:
            scan_ok[scan] = exc
    names, which = np.unique(refs.scan, return_inverse=True)
    ref_scan_ids = np.asarray([vocab.scan_ids.get(s, -1) for s in names.tolist()], dtype=np.int64)[which]
    loadable = np.asarray([scan_ok[s] is None for s in names.tolist()], dtype=bool)[which]
    usable_refs = np.flatnonzero(loadable)
    ref_local = None
    if len(usable_refs):
        sub = refs.paths.take(usable_refs)
        res = resolve(sub, ref_scan_ids[usable_refs], refs.scan[usable_refs], vocab, graphs)
        # Back to rows of `refs` (unloadable scans get empty paths; never used).
        lengths = np.zeros(len(refs), np.int64)
        lengths[usable_refs] = np.diff(res.offsets)
        offsets = np.zeros(len(refs) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        ref_local = Resolved(offsets, res.local, {int(usable_refs[r]): v for r, v in res.bad.items()})

    matches, pred_local = {}, {}
    for agent, files in agents.items():
        p = preds[agent]
        rows, ep, match = _match_agent(p, refs, ep_start, n_episodes, files)
        ref_rows = episode_ref[ep]
        ok = np.ones(len(rows), dtype=bool)
        reasons: list[tuple[int, str, str]] = []  # (position, stage, reason)
        ids = instr_ids(p.path_id[rows], p.k[rows]).to_pylist() if len(rows) else []
        graph_bad = ~loadable[ref_rows]
        for i in np.flatnonzero(graph_bad).tolist():
            reasons.append((i, "graph", str(scan_ok[str(refs.scan[ref_rows[i]])])))
        ok &= ~graph_bad
        if ref_local is not None and ref_local.bad:
            ref_bad = np.isin(ref_rows, np.fromiter(ref_local.bad, np.int64)) & ok
            for i in np.flatnonzero(ref_bad).tolist():
                r = int(ref_rows[i])
                exc = f"viewpoint {ref_local.bad[r]!r} is not an included viewpoint of scan {str(refs.scan[r])!r}"
                reasons.append((i, "reference", f"reference path of {ids[i]!r} is unusable: {exc}"))
            ok &= ~ref_bad
        cand = np.flatnonzero(ok)
        sub = p.paths.take(rows[cand])
        res = resolve(sub, ref_scan_ids[ref_rows[cand]], refs.scan[ref_rows[cand]], vocab, graphs)
        vp_bad = np.zeros(len(cand), dtype=bool)
        for r, v in res.bad.items():
            vp_bad[r] = True
            i = int(cand[r])
            scan = str(refs.scan[ref_rows[i]])
            reasons.append((i, "viewpoint", f"viewpoint {v!r} is not an included viewpoint of scan {scan!r}"))
        # Starts: the first node of each trajectory against the first of its reference.
        q_first = res.local[res.offsets[:-1]] if len(cand) else np.zeros(0, np.int64)
        r_first = ref_local.local[ref_local.offsets[ref_rows[cand]]] if len(cand) else np.zeros(0, np.int64)
        start_bad = (q_first != r_first) & ~vp_bad
        for r in np.flatnonzero(start_bad).tolist():
            i = int(cand[r])
            ref_vps = refs.paths.viewpoints(int(ref_rows[i]), vocab)
            q_vps = sub.viewpoints(r, vocab)
            reasons.append(
                (
                    i,
                    "start",
                    f"trajectory starts at {q_vps[0]!r} but the reference path starts at {ref_vps[0]!r} "
                    "(predictions made on another revision of the dataset?)",
                )
            )
        good = ~(vp_bad | start_bad)
        for i, stage, reason in sorted(reasons):
            row = int(rows[i])
            match.dead.append(
                dead_letter(stage, files[int(p.rank[row])], f"#{int(p.index[row])} (instr_id={ids[i]})", reason)
            )
        keep = cand[good]
        pred_local[agent] = Resolved(*_take_resolved(res, np.flatnonzero(good)))
        scored = np.zeros(n_episodes, dtype=bool)
        scored[ep[keep]] = True
        matches[agent] = AgentMatch(rows[keep], ep[keep], match.missing, np.flatnonzero(~scored), match.dead)
    return BucketJoin(refs, ref_local, episode_ref, episode_k, preds, pred_local, matches, dataset_dead)


def _take_resolved(res: Resolved, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    paths = Paths(res.offsets, res.local).take(rows)
    return paths.offsets, paths.values, {}
