"""Scoring agents on probe episodes: probability mass on the correct actions, shift against the
control, and confidence intervals by a seeded hierarchical bootstrap over scans and trajectories.

Episodes of one scan, and of one source trajectory, are not independent (same house, same path),
so the bootstrap resamples scans with replacement, then the source trajectories of each drawn scan
with replacement, and takes all episodes of the drawn trajectories.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator

import numpy as np

from vlnkit.datasets.r2r import RecordError, labelled_json_items
from vlnkit.hashing import stable_rng

N_BOOT = 1000
LEVEL = 0.95
# Probabilities summing to 1 within this tolerance are used as given; others are renormalized (and counted).
SUM_TOLERANCE = 1e-3


class ScoreError(ValueError):
    """An agent output cannot be scored against its episode (the message says why)."""


class ProbeFileError(ValueError):
    """A `--probes` input is not a probe-episode Parquet file from build_probes (the message names flag, file, reason)."""


# Columns the scorer reads from a probe file, with the Arrow types build_probes writes (`PROBE_EPISODES`).
PROBE_COLUMNS = ("episode_id", "pair_id", "variant", "skill", "scan", "path_id", "candidates", "correct")


def validate_probe_file(path: str, flag: str = "--probes") -> None:
    """Raise ProbeFileError unless `path` is a readable Parquet file with the probe columns the scorer needs.

    Called from the job's input checks, so a corrupt file, a file of another kind (a `score` output,
    a `build_r4r` table, JSON renamed .parquet) or one from an incompatible build stops the job with
    one line instead of a worker traceback. Only the footer is read, never the rows.

        validate_probe_file("output/probes/probes-00000-of-00001.parquet")   # fine: returns None
        validate_probe_file("scores.parquet")
        # ProbeFileError: --probes scores.parquet: not a probe-episode file from build_probes:
        #   missing column(s) 'candidates', 'correct', ... (it has 'instr_id', 'scan', 'pl', ...)
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vlnkit.io import fileio
    from vlnkit.probes.schemas import PROBE_EPISODES

    where = f"{flag} {path}"
    try:
        with fileio.open_read(path) as f:
            schema = pq.ParquetFile(f).schema_arrow
    except Exception as exc:  # OSError, ArrowInvalid ("not a Parquet file"), a filesystem's own errors
        raise ProbeFileError(f"{where}: cannot read it as Parquet ({type(exc).__name__}: {exc})") from None
    missing = [c for c in PROBE_COLUMNS if c not in schema.names]
    if missing:
        has = ", ".join(repr(n) for n in schema.names[:8]) + (", ..." if len(schema.names) > 8 else "")
        raise ProbeFileError(
            f"{where}: not a probe-episode file from build_probes: missing column(s) "
            f"{', '.join(repr(c) for c in missing)} (it has {has or 'no columns'})"
        )
    for name in PROBE_COLUMNS:
        want, got = PROBE_EPISODES.field(name).type, schema.field(name).type
        same = got == want or (pa.types.is_large_string(got) and pa.types.is_string(want))
        if not same and pa.types.is_list(want) and (pa.types.is_list(got) or pa.types.is_large_list(got)):
            same = pa.types.is_string(got.value_type) or pa.types.is_large_string(got.value_type)
        if not same and pa.types.is_integer(want):
            same = pa.types.is_integer(got)
        if not same:
            raise ProbeFileError(
                f"{where}: column {name!r} has type {got}, expected {want} (as build_probes writes it)"
            )


def _kind(x) -> str:
    """A short description of a bad value for an error message (a 400-digit integer is cut, not printed)."""
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) > 10**20:
        return f"an integer of {len(str(abs(x)))} digits"
    return f"{x!r:.40}" if isinstance(x, (str, int, float, bool)) or x is None else type(x).__name__


def probability_values(probs: dict) -> np.ndarray:
    """The probabilities of `probs` as finite floats >= 0, in key order; ScoreError naming the first bad one.

    JSON allows what a probability must not be: `true` (a bool is an int in Python), `"0.5"`,
    `NaN` / `Infinity`, and integers too large for a float (json reads `1` followed by 400 zeros
    exactly). Each of these would either crash the job or score silently wrong, so each is refused
    here, and a sum that overflows to infinity is refused too (it would score every action as 0).

        >>> probability_values({"a": 0.25, "STOP": 3})
        array([0.25, 3.  ])
    """
    if not isinstance(probs, dict) or not probs:
        raise ScoreError("'probs' must be a non-empty object of {action: probability}")
    values = np.empty(len(probs), dtype=np.float64)
    for k, (action, p) in enumerate(probs.items()):  # a handful of actions per output
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise ScoreError(f"probability of {action!r} must be a number, got {_kind(p)}")
        try:
            x = float(p)
        except OverflowError:
            raise ScoreError(f"probability of {action!r} overflows a float ({_kind(p)})") from None
        if not math.isfinite(x):
            raise ScoreError(f"probability of {action!r} must be finite, got {x!r}")
        if x < 0:
            raise ScoreError(f"probability of {action!r} must be >= 0, got {x!r}")
        values[k] = x
    try:
        total = math.fsum(values)
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise ScoreError("probs sum overflows a float (probabilities too large to normalize)")
    return values


def parse_agent_outputs(data: bytes | str, source: str) -> Iterator[tuple[str, dict] | RecordError]:
    """JSON Lines of {"episode_id": str, "probs": {action: p}} (a JSON list, a BOM, indentation are fine).

    An output whose probabilities are unusable (see `probability_values`) is a RecordError here,
    with its line and episode id, before it reaches scoring.
    """
    for item in labelled_json_items(data, source, "agent outputs"):
        if isinstance(item, RecordError):
            yield RecordError(item.source, item.record, item.reason, stage="agent_output")
            continue
        _, where, obj = item
        if not isinstance(obj, dict) or not isinstance(obj.get("episode_id"), str):
            yield RecordError(source, where, "expected an object with a string 'episode_id'", stage="agent_output")
            continue
        where = f"{where} ({obj['episode_id']})"
        if not isinstance(obj.get("probs"), dict) or not obj["probs"]:
            yield RecordError(source, where, "'probs' must be a non-empty object", stage="agent_output")
            continue
        try:
            probability_values(obj["probs"])
        except ScoreError as exc:
            yield RecordError(source, where, str(exc), stage="agent_output")
            continue
        yield obj["episode_id"], obj["probs"]


def correct_mass(probs: dict, candidates: list[str], correct: list[str]) -> tuple[float, bool]:
    """(probability mass on `correct`, whether `probs` had to be renormalized to sum to 1).

    Actions the agent leaves out have probability 0; an action that is not a candidate, a
    probability that is not a finite number >= 0 (see `probability_values`), or an all-zero
    distribution is a ScoreError.

        >>> correct_mass({"a": 0.5, "b": 0.25, "STOP": 0.25}, ["a", "b", "STOP"], ["a", "STOP"])
        (0.75, False)
    """
    allowed = set(candidates)
    unknown = [a for a in probs if a not in allowed] if isinstance(probs, dict) else []
    if unknown:
        raise ScoreError(f"probs name action(s) {sorted(unknown)[:3]} that are not candidates of the episode")
    values = probability_values(probs)
    total = math.fsum(values)
    if total <= 0:
        raise ScoreError("probs sum to 0")
    wanted = set(correct)
    mass = math.fsum(v for a, v in zip(probs, values) if a in wanted)
    return mass / total, abs(total - 1.0) > SUM_TOLERANCE


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
                vals,
                [r["scan"] for r in inter],
                [r["trajectory"] for r in inter],
                n_boot,
                stable_rng(skill, "score", seed=seed),
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
                stable_rng(skill, "shift", seed=seed),
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
