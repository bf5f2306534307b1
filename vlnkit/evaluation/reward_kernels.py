"""Compiled (numba) kernels behind `vlnkit.evaluation.rewards`: reset and step B environments at once.

Kept apart from `kernels` (the metrics) so each module stays readable; the arithmetic is the same,
operation for operation, so a reward equals the metric recomputed from scratch bit for bit.
Cached on disk like the metric kernels (`cache=True`).
"""

from __future__ import annotations

import math

from vlnkit.compiled import njit

INF = math.inf

# B environments, each with its own distance matrix: scan matrices are ravelled into one flat array,
# env b reads d(u, v) = flat[off[b] + u * n[b] + v]. Per env the state is the last DTW column over
# its reference (rows[b, 0..|R|]), every reference node's distance to the path so far (cover[b]),
# PL of the path so far (pl_q[b]) and of the reference (pl_r[b]), the current node, and the current
# nDTW or CLS (value[b]), so that a step costs O(|R|).
GOAL, FIDELITY_NDTW, FIDELITY_CLS = 0, 1, 2
BAD_NODE, GOAL_UNREACHABLE, BAD_REFERENCE = 5, 6, 7  # status codes of the reward kernels


@njit(cache=True)
def _fidelity_value(kind, flat, o, nb, ref, lr, row, cover, pl_q, pl_r, th):
    """nDTW (from the DTW column) or CLS (from the coverage minima and path lengths) of the path so far."""
    if kind == FIDELITY_NDTW:
        return math.exp(-row[lr] / (lr * th))
    total = 0.0
    for i in range(lr):
        total += math.exp(cover[i] / -th)
    pc = total / lr
    epl = pc * pl_r if pc > 0 else 0.0
    denom = epl + abs(epl - pl_q)
    if denom == 0:
        return pc
    if math.isfinite(denom) and math.isfinite(epl):
        return pc * (epl / (denom if denom > 0 else 1.0))
    return 0.0


@njit(cache=True)
def _add_node(kind, flat, o, nb, ref, lr, node, row, cover):
    """Extend the path by `node`: update the DTW column or coverage minima."""
    if kind == FIDELITY_NDTW:
        diag = row[0]
        row[0] = INF
        left = INF
        for i in range(1, lr + 1):
            up = row[i]
            left = flat[o + ref[i - 1] * nb + node] + min(min(up, diag), left)
            diag = up
            row[i] = left
    elif kind == FIDELITY_CLS:
        for i in range(lr):
            cover[i] = min(cover[i], flat[o + ref[i] * nb + node])


@njit(cache=True)
def rewards_reset(flat, off, n, refs, ref_len, kind, th, rows, cover, pl_q, pl_r, pos, value, finished):
    """Start every environment at its reference's first node; returns (status, env) or (0, -1)."""
    B = refs.shape[0]
    for b in range(B):
        lr = ref_len[b]
        if lr < 1:
            return BAD_REFERENCE, b
        for i in range(lr):
            if refs[b, i] < 0 or refs[b, i] >= n[b]:
                return BAD_REFERENCE, b
        s, g, o, nb = refs[b, 0], refs[b, lr - 1], off[b], n[b]
        if kind == GOAL and not math.isfinite(flat[o + s * nb + g]):
            return GOAL_UNREACHABLE, b
    for b in range(B):
        lr, o, nb = ref_len[b], off[b], n[b]
        ref = refs[b]
        s = ref[0]
        row = rows[b]
        row[0] = 0.0
        for i in range(1, lr + 1):
            row[i] = INF
        for i in range(lr):
            cover[b, i] = INF
        total = 0.0
        for i in range(lr - 1):
            total += flat[o + ref[i] * nb + ref[i + 1]]
        pl_r[b] = total
        pl_q[b] = 0.0
        _add_node(kind, flat, o, nb, ref, lr, s, row, cover[b])
        pos[b] = s
        finished[b] = False
        value[b] = 0.0 if kind == GOAL else _fidelity_value(kind, flat, o, nb, ref, lr, row, cover[b], 0.0, total, th)
    return 0, -1


@njit(cache=True)
def rewards_step(
    flat, off, n, refs, ref_len, kind, th, strict, signed_end, shaping, keep_repeats,
    rows, cover, pl_q, pl_r, pos, value, finished, nodes, stop, out,
):  # fmt: skip
    """One step of every environment; rewards into out (B,). Returns (status, env) or (0, -1).

    Every input is checked before any state changes, so an error leaves all environments as they were.
    """
    B = refs.shape[0]
    for b in range(B):
        if finished[b] or stop[b]:
            continue
        node, nb = nodes[b], n[b]
        if node < 0 or node >= nb:
            return BAD_NODE, b
        if kind == GOAL and not math.isfinite(flat[off[b] + node * nb + refs[b, ref_len[b] - 1]]):
            return GOAL_UNREACHABLE, b
    for b in range(B):
        out[b] = 0.0
        if finished[b]:
            continue
        lr, o, nb = ref_len[b], off[b], n[b]
        ref = refs[b]
        g = ref[lr - 1]
        here = pos[b]
        if stop[b]:
            d = flat[o + here * nb + g]
            success = d < th if strict else d <= th
            if kind == GOAL:
                out[b] = 1.0 if success else (-1.0 if signed_end else 0.0)
            elif kind == FIDELITY_NDTW:
                out[b] = 1.0 - d / th if success else 0.0
            else:
                out[b] = (1.0 if success else 0.0) + value[b]
            finished[b] = True
            continue
        node = nodes[b]
        if node == here and not keep_repeats:
            continue  # turning in place: the path (and every reward's state) is unchanged
        if kind == GOAL:
            out[b] = flat[o + here * nb + g] - flat[o + node * nb + g]
        else:
            pl_q[b] += flat[o + here * nb + node]
            _add_node(kind, flat, o, nb, ref, lr, node, rows[b], cover[b])
            new = _fidelity_value(kind, flat, o, nb, ref, lr, rows[b], cover[b], pl_q[b], pl_r[b], th)
            if kind == FIDELITY_NDTW or shaping:
                out[b] = new - value[b]
            value[b] = new
        pos[b] = node
    return 0, -1
