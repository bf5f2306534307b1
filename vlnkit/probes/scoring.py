"""Scoring agents on probe episodes: probability mass on the correct actions, shift against the
control, and confidence intervals by a seeded hierarchical bootstrap over scans and trajectories.

Episodes of one scan, and of one source trajectory, are not independent (same house, same path),
so the bootstrap resamples scans with replacement, then the source trajectories of each drawn scan
with replacement, and takes all episodes of the drawn trajectories.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Iterator

import numpy as np

from vlnkit.datasets.r2r import RecordError

N_BOOT = 1000
LEVEL = 0.95
# Probabilities summing to 1 within this tolerance are used as given; others are renormalized (and counted).
SUM_TOLERANCE = 1e-3


class ScoreError(ValueError):
    """An agent output cannot be scored against its episode (the message says why)."""


def parse_agent_outputs(data: bytes | str, source: str) -> Iterator[tuple[str, dict] | RecordError]:
    """JSON Lines of {"episode_id": str, "probs": {action: p}} (a JSON list is accepted too)."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        yield RecordError(source, "", f"not UTF-8 text ({exc})", stage="agent_output")
        return
    if text.lstrip().startswith("["):
        try:
            items = list(enumerate(json.loads(text), start=1))
        except ValueError as exc:
            yield RecordError(source, "", f"invalid JSON ({exc})", stage="agent_output")
            return
        label = "#{}"
    else:
        items, label = [], "line {}"
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                items.append((n, json.loads(line)))
            except ValueError as exc:
                items.append((n, RecordError(source, label.format(n), f"invalid JSON ({exc})", stage="agent_output")))
    for n, obj in items:
        where = label.format(n)
        if isinstance(obj, RecordError):
            yield obj
        elif not isinstance(obj, dict) or not isinstance(obj.get("episode_id"), str):
            yield RecordError(source, where, "expected an object with a string 'episode_id'", stage="agent_output")
        elif not isinstance(obj.get("probs"), dict) or not obj["probs"]:
            yield RecordError(
                source, f"{where} ({obj['episode_id']})", "'probs' must be a non-empty object", stage="agent_output"
            )
        else:
            yield obj["episode_id"], obj["probs"]


def correct_mass(probs: dict, candidates: list[str], correct: list[str]) -> tuple[float, bool]:
    """(probability mass on `correct`, whether `probs` had to be renormalized to sum to 1).

    Actions the agent leaves out have probability 0; an action that is not a candidate, or a
    negative / non-finite probability, or an all-zero distribution is a ScoreError.
    """
    allowed = set(candidates)
    unknown = [a for a in probs if a not in allowed]
    if unknown:
        raise ScoreError(f"probs name action(s) {sorted(unknown)[:3]} that are not candidates of the episode")
    values = np.array([probs[a] if isinstance(probs[a], (int, float)) else np.nan for a in probs], dtype=np.float64)
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ScoreError("probs must be finite numbers >= 0")
    total = float(values.sum())
    if total <= 0:
        raise ScoreError("probs sum to 0")
    mass = sum(float(probs.get(a, 0.0)) for a in set(correct))
    return mass / total, abs(total - 1.0) > SUM_TOLERANCE


def _rng(seed: int, key: str) -> np.random.Generator:
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, int.from_bytes(digest, "big")])


def hierarchical_bootstrap(
    values, scans, trajectories, n_boot: int = N_BOOT, rng: np.random.Generator | None = None
) -> np.ndarray:
    """`n_boot` replicate means of `values`, resampling scans, then trajectories within each drawn scan.

    Vectorized: drawing scan s m times and resampling its n_s trajectories each time is the same as
    one multinomial draw of m * n_s trajectories, so each replicate is a weight per trajectory.
    """
    rng = rng or np.random.default_rng(0)
    values = np.asarray(values, dtype=np.float64)
    scans = np.asarray(scans)
    trajectories = np.asarray(trajectories)
    if len(values) == 0:
        return np.full(n_boot, np.nan)
    scan_ids, scan_of = np.unique(scans, return_inverse=True)
    keys = np.array([f"{s}\x00{t}" for s, t in zip(scans, trajectories)])
    traj_ids, traj_of = np.unique(keys, return_inverse=True)
    sums = np.bincount(traj_of, weights=values, minlength=len(traj_ids))
    counts = np.bincount(traj_of, minlength=len(traj_ids)).astype(np.float64)
    scan_of_traj = np.zeros(len(traj_ids), dtype=np.int64)
    scan_of_traj[traj_of] = scan_of
    n_scans = len(scan_ids)
    draws = rng.multinomial(n_scans, np.full(n_scans, 1.0 / n_scans), size=n_boot)  # (B, S)
    weights = np.zeros((n_boot, len(traj_ids)))
    for s in range(n_scans):  # one vectorized draw per scan, never per episode
        members = np.flatnonzero(scan_of_traj == s)
        n_s = len(members)
        weights[:, members] = rng.multinomial(draws[:, s] * n_s, np.full(n_s, 1.0 / n_s))
    return (weights @ sums) / (weights @ counts)


def _interval(replicates: np.ndarray, level: float) -> list[float]:
    lo, hi = np.quantile(replicates, [(1 - level) / 2, 1 - (1 - level) / 2])
    return [float(lo), float(hi)]


def summarize_skills(rows: list[dict], seed: int = 0, n_boot: int = N_BOOT, level: float = LEVEL) -> dict:
    """Per skill: score (mean intervention mass), control score, shift (mean paired difference), CIs.

    `rows`: {skill, variant, pair_id, scan, trajectory, mass} per scored episode. The shift uses only
    pairs with both episodes scored. Results do not depend on row order.
    """
    by_skill: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_skill[r["skill"]].append(r)
    out = {}
    for skill in sorted(by_skill):
        items = sorted(by_skill[skill], key=lambda r: (r["pair_id"], r["variant"]))
        inter = [r for r in items if r["variant"] == "intervention"]
        ctrl = {r["pair_id"]: r for r in items if r["variant"] == "control"}
        pairs = [(r, ctrl[r["pair_id"]]) for r in inter if r["pair_id"] in ctrl]
        entry = {
            "score": None,
            "ci": None,
            "shift": None,
            "shift_ci": None,
            "control_score": float(np.mean([r["mass"] for r in ctrl.values()])) if ctrl else None,
            "episodes": len(inter),
            "control_episodes": len(ctrl),
            "pairs": len(pairs),
            "scans": len({r["scan"] for r in inter}),
        }
        if inter:
            vals = [r["mass"] for r in inter]
            entry["score"] = float(np.mean(vals))
            reps = hierarchical_bootstrap(
                vals, [r["scan"] for r in inter], [r["trajectory"] for r in inter], n_boot, _rng(seed, f"{skill}:score")
            )
            entry["ci"] = _interval(reps, level)
        if pairs:
            diffs = [a["mass"] - b["mass"] for a, b in pairs]
            entry["shift"] = float(np.mean(diffs))
            reps = hierarchical_bootstrap(
                diffs,
                [a["scan"] for a, _ in pairs],
                [a["trajectory"] for a, _ in pairs],
                n_boot,
                _rng(seed, f"{skill}:shift"),
            )
            entry["shift_ci"] = _interval(reps, level)
        out[skill] = entry
    return out


def skill_sort_key(skill: str) -> tuple:
    from vlnkit.probes.episodes import REGIONS

    order = ["stop"] + [f"direction:{r}" for r in REGIONS] + ["room", "object"]
    return (order.index(skill) if skill in order else len(order), skill)


def format_float(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"
