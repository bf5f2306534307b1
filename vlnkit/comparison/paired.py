"""Paired comparisons of two agents: mean difference, its interval, a p-value, Holm's correction, ties.

Every agent's episode e gets the same bootstrap weights (`poisson_weights` depends on the episode key
only), so on the episodes two agents share, replicate b's difference of means is a difference of
two weighted means under one resampling: the comparison is paired, and the agent-to-agent variation
that both share (an easy scan, a short path) cancels out.

The p-value is the two-sided bootstrap p-value of the centred difference (Efron and Tibshirani 1993,
section 16.4; the test behind Koehn's 2004 paired bootstrap for MT): with d the observed difference
and d_b the replicate differences, d_b - d estimates the sampling distribution of the difference
under the null hypothesis of no difference, and

    p = (1 + #{b : |d_b - d| >= |d|}) / (1 + B)

(the +1s count the observed sample as one of the resamples, so p is never 0, and an identical
agent gets p = 1). Why this and not paired approximate randomization (sacrebleu's other test): it
uses the very replicates of the interval, so it costs no second pass and merges across workers the
same way, and its decisions agree with the interval (p < alpha about when the interval leaves out
0). Its limits: the smallest p is 1/(1+B), so with Holm over m comparisons B must exceed about
m/alpha for anything to be significant; and on small subsets (tens of episodes) the bootstrap is
known to be somewhat liberal, so treat a borderline p there with suspicion.

>>> holm([0.01, 0.04, 0.03])
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.comparison.replicates import DEFAULT_CONFIDENCE, ReplicateSums, percentile_interval

HEADLINE = ("sr", "spl", "ndtw", "sdtw", "ne")  # the leaderboard's headline metrics, SR first
RANK_BY = ("spl", "sr")  # the score job's leaderboard order; ties are judged on the first
LOWER_IS_BETTER = frozenset({"ne", "one", "dtw", "ad", "md"})  # distances to the goal or reference


@dataclass
class PairedSums:
    """Replicate sums of agents `a` and `b` on their common episodes: columns `a:<metric>`, `b:<metric>`.

    For each metric only the episodes where both agents have a finite value are kept, so the two
    columns of a metric always cover the same episodes with the same weights.
    """

    a: str
    b: str
    sums: ReplicateSums

    @classmethod
    def of(cls, a: str, b: str, a_scores: dict, b_scores: dict, weights: np.ndarray) -> PairedSums:
        """Sums of one batch of aligned episodes: row i of `a_scores`, `b_scores` and `weights` is one episode."""
        columns = {}
        for metric in a_scores:
            x, y = np.asarray(a_scores[metric], dtype=np.float64), np.asarray(b_scores[metric], dtype=np.float64)
            both = np.isfinite(x) & np.isfinite(y)
            columns[f"a:{metric}"] = np.where(both, x, np.nan)
            columns[f"b:{metric}"] = np.where(both, y, np.nan)
        return cls(a, b, ReplicateSums.of(columns, weights))

    def __add__(self, other: PairedSums) -> PairedSums:
        if (self.a, self.b) != (other.a, other.b):
            raise ValueError(f"cannot merge the pair {(self.a, self.b)} with {(other.a, other.b)}")
        return PairedSums(self.a, self.b, self.sums + other.sums)

    @property
    def metrics(self) -> list[str]:
        return [name[2:] for name in self.sums.totals if name.startswith("a:")]

    def row(self, metric: str, confidence: float = DEFAULT_CONFIDENCE) -> dict:
        """{"a", "b", "metric", "episodes", "difference", "interval", "p_value"} (a - b; no Holm yet)."""
        a, b = f"a:{metric}", f"b:{metric}"
        episodes = self.sums.counts.get(a, 0)
        difference = self.sums.difference(a, b)
        interval = p_value = None
        if self.sums.replicates and episodes:
            replicates = self.sums.replicate_differences(a, b)
            interval = percentile_interval(replicates, confidence)
            replicates = replicates[~np.isnan(replicates)]
            extreme = int((np.abs(replicates - difference) >= abs(difference)).sum())
            p_value = (1 + extreme) / (1 + len(replicates))
        return {
            "a": self.a,
            "b": self.b,
            "metric": metric,
            "episodes": episodes,
            "difference": difference,
            "interval": interval,
            "p_value": p_value,
        }


def holm(p_values) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the input order; each at most 1.

    The smallest p is multiplied by m, the next by m - 1, ..., and each adjusted value is raised to
    the largest one before it, so the family-wise error rate stays at most alpha for any dependence.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if not len(p):
        return []
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, p[order] * (len(p) - np.arange(len(p))))
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return [float(x) for x in adjusted]


def comparison_rows(pairs: list[PairedSums], metrics=None, confidence: float = DEFAULT_CONFIDENCE) -> list[dict]:
    """The summary's comparison rows: {"a", "b", "metric", "episodes", "difference", "interval",
    "p_value", "p_holm", "significant"}, Holm-corrected over all pairs of each metric (one family per
    metric: each metric answers its own question); significant means p_holm < 1 - confidence."""
    rows = []
    for pair in pairs:
        rows += [pair.row(m, confidence) for m in (metrics or pair.metrics)]
    for metric in dict.fromkeys(r["metric"] for r in rows):
        family = [r for r in rows if r["metric"] == metric and r["p_value"] is not None]
        for r, adjusted in zip(family, holm([r["p_value"] for r in family])):
            r["p_holm"] = adjusted
    alpha = 1.0 - confidence
    for r in rows:
        r.setdefault("p_holm", None)
        r["significant"] = r["p_holm"] is not None and r["p_holm"] < alpha
    return rows


def rank(means: dict[str, dict[str, float | None]], by=RANK_BY) -> list[str]:
    """Agents best first by the means of `by` in order (the score job's leaderboard: SPL, then SR; distances
    ascending), agents without a first-metric mean last, then by name.

    >>> rank({"x": {"spl": 0.5, "sr": 0.6}, "y": {"spl": 0.5, "sr": 0.7}, "z": {"spl": None, "sr": None}})
    ['y', 'x', 'z']
    >>> rank({"x": {"ne": 2.0}, "y": {"ne": 1.0}}, by=("ne",))
    ['y', 'x']
    """

    def key(agent):
        values = means[agent]
        signed = [(1.0 if m in LOWER_IS_BETTER else -1.0) * (values.get(m) or 0.0) for m in by]
        return (values.get(by[0]) is None, *signed, agent)

    return sorted(means, key=key)


def ties(ranking: list[str], rows: list[dict], metric: str) -> dict[str, bool | None]:
    """Per agent: True if its `metric` does not differ significantly from the agent ranked just above.

    Uses the `significant` flag of the comparison row of the two agents (either orientation), so the
    Holm family is whichever the rows were corrected over. The first agent is False; an agent with
    no comparison row against its predecessor is None (unknown, e.g. no common episodes).

    >>> rows = [{"a": "x", "b": "y", "metric": "sr", "significant": False}]
    >>> ties(["y", "x"], rows, "sr")
    {'y': False, 'x': True}
    """
    found = {frozenset((r["a"], r["b"])): r for r in rows if r["metric"] == metric}
    out: dict[str, bool | None] = {}
    for k, agent in enumerate(ranking):
        if k == 0:
            out[agent] = False
            continue
        row = found.get(frozenset((ranking[k - 1], agent)))
        out[agent] = None if row is None or row.get("p_holm", row.get("p_value", 0)) is None else not row["significant"]
    return out


def adjacent_ties(
    ranking: list[str], rows: list[dict], metric: str, confidence: float = DEFAULT_CONFIDENCE
) -> dict[str, bool | None]:
    """The leaderboard's tie marks: `ties` judged on the pairs adjacent in `ranking` only, with Holm's
    correction recomputed over that family (the k - 1 adjacent pairs of k agents) from each row's raw
    `p_value`, whatever family `rows` were corrected over (every pair, or each agent against a baseline).

    Why that family: a tie mark asks "is this step of the ranking real?" once per step, so correcting
    over every pair would make the marks depend on how many other agents were compared.

    >>> rows = [{"a": "x", "b": "y", "metric": "sr", "p_value": 0.02, "p_holm": 0.06, "significant": False},
    ...         {"a": "x", "b": "z", "metric": "sr", "p_value": 0.5, "p_holm": 0.5, "significant": False},
    ...         {"a": "y", "b": "z", "metric": "sr", "p_value": 0.01, "p_holm": 0.03, "significant": True}]
    >>> adjacent_ties(["x", "z", "y"], rows, "sr")
    {'x': False, 'z': True, 'y': False}
    """
    steps = {frozenset(pair) for pair in zip(ranking, ranking[1:])}
    family = [
        dict(r)
        for r in rows
        if r["metric"] == metric and frozenset((r["a"], r["b"])) in steps and r.get("p_value") is not None
    ]
    for r, adjusted in zip(family, holm([r["p_value"] for r in family])):
        r["p_holm"], r["significant"] = adjusted, adjusted < 1.0 - confidence
    return ties(ranking, family, metric)
