"""Crafty's Observer as a plain per-path loop: dicts of scores per object pair, one motion at a time.

An independent reading of appendix B.3 and the reference's `observe.py` / `hmm.py` (the way the reference
computes it: Python loops over each motion's source and goal objects, a log-probability matrix per motion,
a self-transition boost row by row, and a Viterbi loop over state pairs). It shares no code with
`vlnkit.crafty.observer` beyond the scan's arrays, so the vectorised Observer is tested against it and the
benchmark measures against it.
"""

from __future__ import annotations

import math
from collections import Counter


def _p(x: float, scale: float) -> float:
    return math.erfc(x / (scale * math.sqrt(2.0)))


def _heading(a, b) -> float:
    return (0.5 * math.pi - math.atan2(b[1] - a[1], b[0] - a[0])) % (2 * math.pi)


def _pitch(a, b) -> float:
    return math.atan2(b[2] - a[2], math.hypot(b[0] - a[0], b[1] - a[1]))


def _dist(a, b) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


def _logvec(scores: dict, outcomes: list, lam: float) -> list[float]:
    denom = sum(scores.values()) + lam * len(outcomes)
    return [math.log((scores.get(o, 0.0) + lam) / denom) for o in outcomes]


def decode_naive(scan, walk, appraiser, params) -> list[int] | None:
    """Object positions (into scan.objects) fixated per motion, or None when the path sees nothing."""
    objs, graph = scan.objects, scan.graph
    lam = params.smoothing
    centre = {k: tuple(objs.centres[k]) for k in range(len(objs.obj_ids))}
    pano_pos = [tuple(p) for p in walk.positions]
    seen = [[k for k in range(len(objs.obj_ids)) if objs.visible[node, k]] for node in walk.nodes]
    states = sorted({k for ks in seen for k in ks})
    if not states:
        return None
    counts = Counter(objs.categories[k] for k in states)
    avg = appraiser.average

    def interest(k, lookup_category):
        score = appraiser.scores.get(lookup_category, avg) / math.log2(1 + counts[objs.categories[k]])
        return 1 - _p(score, params.interest_dev)

    def prominence(i, heading):
        scores = {}
        for k in seen[i]:
            c = centre[k]
            scores[k] = (
                _p(abs(heading - _heading(pano_pos[i], c)), params.sweep_dev)
                * _p(_dist(pano_pos[i], c), params.distance_dev)
                * interest(k, objs.categories[k])
                * _p(abs(_pitch(pano_pos[i], c)), params.sweep_dev * 0.5)
            )
        total = sum(scores.values())
        return {k: (v / total if total else 1.0 / len(scores)) for k, v in scores.items()}

    initial = _logvec(prominence(0, float(walk.enter[0])), states, lam)
    transitions = []
    for m in range(walk.steps - 1):
        s, g, h = int(walk.source[m]), int(walk.goal[m]), float(walk.heading[m])
        prom = prominence(g, h)
        rows = []
        for o1 in states:
            row = {}
            if o1 in seen[s]:
                for o2 in seen[g]:
                    pscan = (1 + math.cos(_heading(centre[o1], centre[o2]) - h)) / 2
                    pdist = _p(_dist(centre[o1], pano_pos[g]) + _dist(centre[o2], pano_pos[g]), params.distance_dev * 2)
                    pview = _p(abs(h - _heading(pano_pos[s], centre[o2])), params.sweep_dev * 2)
                    row[o2] = pscan * pdist * pview * prom[o2]
            probs = [math.exp(x) for x in _logvec(row, states, lam)]
            probs[states.index(o1)] += params.fixation_boost
            total = sum(probs)
            rows.append([math.log(p / total) for p in probs])
        transitions.append(rows)
    emissions = []
    n_views = len(graph)
    for k in states:
        total = sum(_p(float(scan.distance[v, k]), params.distance_dev) for v in range(n_views) if objs.visible[v, k])
        row = []
        for m in range(walk.steps):
            node = int(walk.nodes[walk.source[m]])
            score = _p(float(scan.distance[node, k]), params.distance_dev) if objs.visible[node, k] else 0.0
            row.append(math.log((score + lam) / (total + lam * n_views)))
        emissions.append(row)
    last = len(walk.path) - 1
    end_scores = {
        k: _p(_dist(pano_pos[last], centre[k]), params.distance_dev) * interest(k, objs.mpcat40[k]) for k in seen[last]
    }
    final = _logvec(end_scores, states, lam)
    # Viterbi, state pair by state pair
    n = len(states)
    v = [initial[i] + emissions[i][0] for i in range(n)]
    back = []
    for t in range(1, walk.steps):
        nv, bp = [], []
        for j in range(n):
            cand = [v[i] + transitions[t - 1][i][j] for i in range(n)]
            best = max(cand)
            bp.append(cand.index(best))
            nv.append(best + emissions[j][t])
        v = nv
        back.append(bp)
    ends = [v[i] + final[i] for i in range(n)]
    cur = ends.index(max(ends))
    seq = [cur]
    for t in range(walk.steps - 1, 0, -1):
        cur = back[t - 1][cur]
        seq.append(cur)
    return [states[i] for i in reversed(seq)]
