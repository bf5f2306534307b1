"""The score_instructions job's summary: corpus scores with intervals, paired comparisons, the leaderboard
with tie marks, and Kendall's tau-b between metrics and human outcomes. Beam-free: a function of the
job's settings and of per-system sums that were added up on the workers (`batches.corpus_sums`).
"""

from __future__ import annotations

import hashlib

import numpy as np

from vlnkit.captioning.agreement import instance_tau, system_tau
from vlnkit.captioning.bleu import BleuStats, _bleu
from vlnkit.captioning.intervals import holm_by_metric, paired_row
from vlnkit.comparison.paired import adjacent_ties
from vlnkit.comparison.replicates import percentile_interval

BLEU = ("bleu_1", "bleu_2", "bleu_3", "bleu_4")
MEANS = ("rouge_l", "cider_d")
METRICS = (*BLEU, *MEANS)
JARS = ("meteor", "spice")  # computed only when asked for (--meteor, --spice), from the reference jars
OUTCOMES = ("score", "spl", "ndtw", "sdtw", "dist", "quality")  # zhao2023's human_scores


def corpus_from_sums(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Corpus scores from summed statistics (each (k,) for k point/replicate columns)."""
    correct = np.stack([s[f"correct_{k}"] for k in range(1, 5)], axis=-1)
    guess = np.stack([s[f"guess_{k}"] for k in range(1, 5)], axis=-1)
    bleu = _bleu(correct, guess, s["testlen"], s["reflen"])
    out = {name: bleu[..., k] for k, name in enumerate(BLEU)}
    with np.errstate(invalid="ignore", divide="ignore"):
        for m in MEANS:
            out[m] = s[m] / s["items"]
    if "meteor" in s:
        out["meteor"] = s["meteor"]
    if "spice" in s:  # a mean of per-item F, as pycocoevalcap's corpus SPICE
        with np.errstate(invalid="ignore", divide="ignore"):
            out["spice"] = s["spice"] / s["items"]
    return out


def with_meteor(point: dict[str, dict], replicates: dict[str, dict]) -> None:
    """Corpus METEOR (point and replicates) from the summed jar statistics, where the run computed them:
    the jar's EVAL of each summed row (the process's jar, `Meteor.shared()`, for every system)."""
    systems = [s for s in point if "meteor_stats" in point[s]]
    if not systems:
        return
    from vlnkit.captioning.meteor import Meteor

    jar = Meteor.shared()
    for s in systems:
        point[s]["meteor"] = np.array(jar.evaluate(point[s]["meteor_stats"].T))
        if s in replicates:
            replicates[s]["meteor"] = np.array(jar.evaluate(replicates[s]["meteor_stats"].T))


def system_rows(point: dict[str, dict], replicates: dict[str, dict], confidence: float) -> dict[str, dict]:
    """{system: {metric: {"score", "interval"}, "items"}}."""
    out = {}
    for system, sums in point.items():
        scores = corpus_from_sums(sums)
        reps = corpus_from_sums(replicates[system]) if system in replicates else None
        row = {"items": int(sums["items"][0])}
        for m in METRICS + tuple(m for m in JARS if m in scores):
            interval = percentile_interval(reps[m], confidence) if reps is not None else None
            row[m] = {"score": float(scores[m][0]), "interval": interval}
        out[system] = row
    return out


def comparisons(point: dict, replicates: dict, path_sets: dict[str, str], confidence: float) -> list[dict]:
    """Paired differences between systems scored on the same paths (same path-set digest): per metric,
    the difference of corpus scores, its interval, the bootstrap p-value and Holm over each metric."""
    names = sorted(s for s in point if s in replicates)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if path_sets.get(a) != path_sets.get(b):
                continue
            pa_, pb = corpus_from_sums(point[a]), corpus_from_sums(point[b])
            ra, rb = corpus_from_sums(replicates[a]), corpus_from_sums(replicates[b])
            for m in METRICS + tuple(m for m in JARS if m in pa_ and m in pb):
                d = float(pa_[m][0] - pb[m][0])
                rows.append(paired_row(a, b, m, int(point[a]["items"][0]), d, ra[m] - rb[m], confidence))
    return holm_by_metric(rows, confidence)


def leaderboard(systems: dict[str, dict], rows: list[dict], rank_by: str, confidence: float) -> list[dict]:
    """Systems best first by `rank_by`, each with its score, interval and tie mark (not significantly
    different from the one above: Holm over the adjacent pairs, as the score job's)."""
    order = sorted(systems, key=lambda s: (-systems[s][rank_by]["score"], s))
    tied = adjacent_ties(order, rows, rank_by, confidence)
    return [
        {
            "rank": k + 1,
            "system": s,
            "score": systems[s][rank_by]["score"],
            "interval": systems[s][rank_by]["interval"],
            "tied_with_above": tied.get(s),
        }
        for k, s in enumerate(order)
    ]


def metric_agreement(
    outcome_rows: list[dict],
    replicates: int,
    seed: int,
    confidence: float,
    outcomes: tuple[str, ...] = OUTCOMES,
    carried: bool = True,
) -> dict:
    """Kendall's tau-b between each metric and each outcome, instance and system level (the study's
    Table 3), from per-instruction rows ({system, path_id, metrics..., stats...}) carrying the outcomes in
    `human_scores` (`carried`: the files' own, zhao2023's) or as columns of their own (the score job's
    episode rows joined to them: `vlnkit.captioning.outcomes`, `episode_sr`, ...)."""
    if not outcome_rows:
        return {}
    rows = sorted(outcome_rows, key=lambda r: (r["system"], r["path_id"]))
    systems = sorted({r["system"] for r in rows})
    paths = sorted({r["path_id"] for r in rows})
    # system level needs every system on every path, once (a system with two instructions on a path and
    # none on another has the right count, not the grid)
    cells = {(r["system"], r["path_id"]) for r in rows}
    full = len(cells) == len(rows) == len(systems) * len(paths)
    from_jars = [m for m in JARS if all(r.get(m) is not None for r in rows)]  # computed for every row
    if "meteor" in from_jars and not all(r.get("meteor_stats") is not None for r in rows):
        from_jars.remove("meteor")
    metrics = METRICS + tuple(from_jars)
    # each metric's corpus scores under path weights, made once for every outcome (the same weights)
    of_weights = {m: _system_metric(rows, m, systems, paths) for m in metrics} if full and len(systems) > 2 else {}
    out = {}
    for outcome in outcomes:
        values = ((r["human_scores"] or {}) if carried else r for r in rows)
        y = np.array([np.nan if (v := x.get(outcome)) is None else v for x in values], np.float64)
        if not np.isfinite(y).any():
            continue
        out[outcome] = {}
        for m in metrics:
            x = np.array([r[m] for r in rows], np.float64)
            entry = {"instance": instance_tau(x, y, replicates, seed, confidence)}
            if m in of_weights:
                grid = y.reshape(len(systems), len(paths))
                entry["system"] = system_tau(of_weights[m], grid, len(paths), replicates, seed, confidence)
            out[outcome][m] = entry
    return out


def _system_metric(rows, metric, systems, paths):
    """w (replicates, paths) -> (replicates, systems) corpus scores: BLEU pooled, the others weighted means."""
    n_s, n_p = len(systems), len(paths)
    if metric in MEANS or metric == "spice":
        values = np.array([r[metric] for r in rows], np.float64).reshape(n_s, n_p)
        return lambda w: (w @ values.T) / w.sum(axis=1, keepdims=True)
    if metric == "meteor":
        return _meteor_of_weights(np.array([r["meteor_stats"] for r in rows], np.float64).reshape(n_s, n_p, -1))
    k = BLEU.index(metric)

    def column(name):
        return np.array([r[name] for r in rows], np.float64).reshape(n_s, n_p)

    stats = BleuStats(
        column("testlen"),
        column("reflen"),
        np.stack([column(f"guess_{j}") for j in range(1, 5)], axis=-1),
        np.stack([column(f"correct_{j}") for j in range(1, 5)], axis=-1),
    )

    def of(w):
        correct = np.einsum("rp,spk->rsk", w, stats.correct)
        guess = np.einsum("rp,spk->rsk", w, stats.guess)
        return _bleu(correct, guess, w @ stats.testlen.T, w @ stats.reflen.T)[..., k]

    return of


def _meteor_of_weights(stats: np.ndarray):
    """w (replicates, paths) -> (replicates, systems) METEOR from per-item statistics (systems, paths, k):
    the jar's aggregate of each system's statistics summed under the weights, as the job's corpus METEOR
    (they add), all rows in one EVAL call. Each result is kept for the next outcome, which draws the
    same weights."""
    from vlnkit.captioning.meteor import Meteor

    done: dict[bytes, np.ndarray] = {}

    def of(w: np.ndarray) -> np.ndarray:
        key = hashlib.sha256(np.ascontiguousarray(w, np.float64).tobytes()).digest()
        if key not in done:
            summed = np.einsum("rp,spk->rsk", w, stats)
            scores = Meteor.shared().evaluate(summed.reshape(-1, stats.shape[-1]))
            done[key] = np.array(scores, np.float64).reshape(summed.shape[:2])
        return done[key]

    return of


def instructions_summary(
    static: dict, totals: dict, sums: dict, outcomes: list[dict], followed: dict | None = None
) -> dict:
    """The score_instructions job's `summary.json` from its settings, tallies, per-system sums, the rows
    with human outcomes, and `followed`: the score job's episode rows joined to the instructions
    ({"rows": joined rows, "metrics": episode metrics, "counts": the join's counts, "means": each system's
    mean outcomes}), when --outcomes."""
    confidence = static.get("confidence", 0.95)
    point = {s: v[0]["point"] for s, v in sums.items()}
    reps = {s: v[0]["replicates"] for s, v in sums.items() if "replicates" in v[0]}
    with_meteor(point, reps)
    path_sets = {s: f"{int(v[0]['point']['items'][0])}:{v[1]}" for s, v in sums.items()}
    systems = system_rows(point, reps, confidence)
    rows = comparisons(point, reps, path_sets, confidence)
    board = leaderboard(systems, rows, static["rank_by"], confidence) if systems else []
    replicates = max(static.get("bootstrap", 0), 1) if static.get("bootstrap") else 200
    agreement = metric_agreement(outcomes, replicates, static.get("seed", 0), 0.9)
    extra = {}
    if followed is not None:
        from vlnkit.captioning.outcomes import outcome_name

        names = tuple(outcome_name(m) for m in followed["metrics"])
        agreement.update(metric_agreement(followed["rows"], replicates, static.get("seed", 0), 0.9, names, False))
        extra["episode_outcomes"] = {**followed["counts"], "means": followed["means"]}
    return {
        **static,
        **extra,
        "systems": sorted(systems),
        "instructions": int(totals.get("instructions", 0)),
        "dead_letters": int(totals.get("dead_letters", 0)),
        "by_system": systems,
        "leaderboard": board,
        "comparisons": rows,
        "agreement": agreement,
    }
