"""Crafty's Observer: which object a guide looks at during each motion, by Viterbi over a path's own HMM.

Appendix B.3, with the reference's details (google-research/crafty `observe.py`, `PathSpecificObserver`
and `Observer.get_prominence` / `get_transitions_for_motion`; `hmm.py`, `BaseHMM`):

- states: every object seen from some viewpoint of the path; observations: the source viewpoint of
  each of the walk's 2n - 1 motions;
- emission P(viewpoint | object) ~ p_dist(distance), over every viewpoint of the scan that sees the object;
- start ~ the prominence of the first viewpoint's objects at the initial heading;
- transition for a motion from o1 (seen at its source) to o2 (seen at its goal) ~
  p_scan * p_dist(|o1 - goal| + |o2 - goal|, scale x2) * p_view(|heading - heading(source -> o2)|, x2)
  * prominence(o2), with p_scan = (1 + cos(heading(o1 -> o2) - heading)) / 2;
- prominence of an object at a viewpoint and heading ~ p_view(|heading - heading to it|) *
  p_view(|pitch|, x0.5) * p_dist(distance) * p_interest(idf / log2(1 + objects of its category on the path));
- end ~ p_dist(distance) * p_interest at the last viewpoint;
- every distribution is smoothed by adding 1e-10 to each score, and each transition row gets the
  fixation boost (+0.1 to the self-transition probability, renormalised), so a landmark is held.

p_x(m) = 2 (1 - Phi(m / scale)) (the reference's default `magnitude_normalization='normal'`), and
p_interest = 1 - p(idf) at scale 10. Scales from `create_instructions.py` (`RunCrafty.setup`):
distance 3, sweep 1.5, interest 10, fixation boost 0.1. Two quirks of the reference are kept on purpose
and listed in docs/jobs/build_crafty.md: heading differences are not wrapped (|h1 - h2| up to 2 pi), and
the end score looks up the object's mpcat40 class in the Appraiser (usually the table's average).

Everything per path is one array expression over (motion, state, state); `decode_naive` is the same
model as a plain loop per motion and object pair, the reference's way, kept as the benchmark's baseline
and a test oracle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import erf, erfc

from vlnkit.crafty.appraiser import Appraiser
from vlnkit.crafty.hmm import viterbi
from vlnkit.crafty.objects import ScanObjects
from vlnkit.crafty.walker import Walk
from vlnkit.crafty.wheel import heading_to, pitch_to
from vlnkit.navigation.graph import NavGraph

SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True)
class ObserverParams:
    distance_dev: float = 3.0
    sweep_dev: float = 1.5
    interest_dev: float = 10.0
    fixation_boost: float = 0.1
    smoothing: float = 1e-10


def p_mag(x, scale: float) -> np.ndarray:
    """2 (1 - Phi(x / scale)) for x >= 0: the reference's Gaussian magnitude normaliser."""
    return erfc(np.asarray(x, dtype=np.float64) / (scale * SQRT2))


def log_normalise(scores: np.ndarray, smoothing: float) -> np.ndarray:
    """log((s + lambda) / (sum(s) + lambda * n)) along the last axis (`scores_to_logprob_vec`)."""
    n = scores.shape[-1]
    return np.log((scores + smoothing) / (scores.sum(axis=-1, keepdims=True) + smoothing * n))


@dataclass(frozen=True, eq=False)
class ScanModel:
    """One scan's objects against its graph, computed once per worker and reused by every path."""

    graph: NavGraph
    objects: ScanObjects
    distance: np.ndarray = field(repr=False)  # (V, K) viewpoint -> object centre
    emission_total: np.ndarray = field(repr=False)  # (K,) sum of p_dist over the viewpoints seeing each object

    @classmethod
    def build(cls, graph: NavGraph, objects: ScanObjects, params: ObserverParams) -> ScanModel:
        if objects.viewpoints != graph.viewpoints:
            objects = ScanObjects(
                objects.scan,
                graph.viewpoints,
                objects.obj_ids,
                objects.centres,
                objects.categories,
                objects.mpcat40,
                objects.visible_for(graph.viewpoints),
            )
        d = np.linalg.norm(graph.positions[:, None, :] - objects.centres[None, :, :], axis=-1)
        total = np.where(objects.visible, p_mag(d, params.distance_dev), 0.0).sum(axis=0)
        return cls(graph, objects, d, total)


@dataclass(frozen=True)
class Observer:
    appraiser: Appraiser
    params: ObserverParams = ObserverParams()

    def path_states(self, scan: ScanModel, walk: Walk) -> tuple[np.ndarray, np.ndarray]:
        """(object positions of the path's states (S,), (n, S) which path viewpoint sees which state)."""
        seen = scan.objects.visible[walk.nodes]  # (n, K)
        states = np.flatnonzero(seen.any(axis=0))
        return states, seen[:, states]

    def interest(self, scan: ScanModel, states: np.ndarray, categories=None) -> np.ndarray:
        """p_interest per state: the Appraiser's score divided by log2(1 + the category's count on the path)."""
        cats = scan.objects.categories[states]
        _, inverse, counts = np.unique(cats.astype(str), return_inverse=True, return_counts=True)
        per_state = counts[inverse]
        looked_up = self.appraiser.lookup(list(cats if categories is None else categories))
        score = looked_up / np.log2(1.0 + per_state)
        return erf(score / (self.params.interest_dev * SQRT2))  # 1 - p_mag(score, interest_dev)

    def decode(self, scan: ScanModel, walk: Walk) -> np.ndarray | None:
        """The object (position in `scan.objects`) fixated at each motion, or None if the path sees none."""
        states, seen = self.path_states(scan, walk)
        if len(states) == 0:
            return None
        p = self.params
        lam = p.smoothing
        centres = scan.objects.centres[states]  # (S, 3)
        pos = walk.positions
        pinterest = self.interest(scan, states)
        dist_path = scan.distance[walk.nodes][:, states]  # (n, S)
        head_path = heading_to(pos[:, None, :], centres[None, :, :])  # (n, S)
        pitch_path = pitch_to(pos[:, None, :], centres[None, :, :])

        def prominence(view: np.ndarray, heading: np.ndarray) -> np.ndarray:
            # view: path positions (k,), heading: (k,) -> (k, S) distributions over the states seen there
            s = (
                p_mag(np.abs(heading[:, None] - head_path[view]), p.sweep_dev)
                * p_mag(dist_path[view], p.distance_dev)
                * pinterest[None, :]
                * p_mag(np.abs(pitch_path[view]), p.sweep_dev * 0.5)
            )
            s = np.where(seen[view], s, 0.0)
            tot = s.sum(axis=1, keepdims=True)
            uniform = seen[view] / np.maximum(seen[view].sum(axis=1, keepdims=True), 1)
            return np.where(tot > 0, s / np.where(tot > 0, tot, 1.0), uniform)

        # start
        initial = log_normalise(prominence(np.array([0]), walk.enter[:1])[0], lam)
        # transitions of motions 0 .. M-2
        m = walk.steps - 1
        src, dst, h = walk.source[:m], walk.goal[:m], walk.heading[:m]
        prom = prominence(dst, h)  # (m, S)
        o1o2 = heading_to(centres[:, None, :], centres[None, :, :])  # (S, S)
        pscan = (1.0 + np.cos(o1o2[None, :, :] - h[:, None, None])) / 2.0
        d_goal = dist_path[dst]  # (m, S): |o - goal centre|
        pdist = p_mag(d_goal[:, :, None] + d_goal[:, None, :], p.distance_dev * 2.0)
        pview = p_mag(np.abs(h[:, None] - head_path[src]), p.sweep_dev * 2.0)  # (m, S) over o2
        score = pscan * pdist * pview[:, None, :] * prom[:, None, :]
        score = np.where(seen[src][:, :, None] & seen[dst][:, None, :], score, 0.0)
        trans = np.exp(log_normalise(score, lam))
        if p.fixation_boost > 0:
            idx = np.arange(len(states))
            trans[:, idx, idx] += p.fixation_boost
            trans /= trans.sum(axis=2, keepdims=True)
        log_trans = np.log(trans)
        # emissions over the scan's viewpoints; each step observes its motion's source viewpoint
        obs_nodes = walk.nodes[walk.source]
        vis = scan.objects.visible[obs_nodes][:, states]  # (M, S)
        raw = np.where(vis, p_mag(scan.distance[obs_nodes][:, states], p.distance_dev), 0.0)
        denom = scan.emission_total[states] + lam * len(scan.graph)
        emissions = np.log((raw + lam) / denom[None, :]).T  # (S, M)
        # end
        last = len(walk.path) - 1
        end_interest = self.interest(scan, states, categories=scan.objects.mpcat40[states])
        end = np.where(seen[last], p_mag(dist_path[last], p.distance_dev) * end_interest, 0.0)
        final = log_normalise(end, lam)
        seq, _ = viterbi(initial, log_trans, emissions, final)
        return states[seq]
