"""Mergeable bootstrap replicate sums: exact per-replicate sums of w*x and w, and percentile intervals.

A replicate's mean of metric x is sum(w * x) / sum(w) over the episodes whose x is finite (the same
episodes `vlnkit.evaluation.means` averages). Both sums are kept exactly, like the job's plain sums
(`vlnkit.io.exactsum`): sum(w * x) as an integer count of 2**-SUM_SCALE, sum(w) as an integer. So
`ReplicateSums` of any slices of the data, added in any order, give the same bits, and so does every
interval computed from them.

How the exact weighted sums stay fast: every float is split into three signed 26-bit integer limbs at
fixed bit positions (a multiple of 26 bits in units of 2**-SUM_SCALE). A weight (< 32) times a limb
(<= 2**26), summed over a block of 8,192 episodes, stays below 2**44, so a float64 matrix product of
a block's (episodes x replicates) weights with its (episodes x limb positions) limbs is exact
whatever order BLAS adds in; blocks add up in int64, and only the few limb-position totals per
replicate become Python integers at the end.

>>> import numpy as np
>>> keys = episode_keys([f"{p}_0" for p in range(300)])
>>> w = poisson_weights(keys, replicates=200, seed=0)
>>> x = np.linspace(0.0, 1.0, 300)
>>> whole = ReplicateSums.of({"x": x}, w)
>>> parts = ReplicateSums.of({"x": x[100:]}, w[100:]) + ReplicateSums.of({"x": x[:100]}, w[:100])
>>> parts == whole, whole.mean("x")
(True, 0.5)
>>> low, high = whole.interval("x", confidence=0.95)
>>> bool(0.44 < low < 0.5 < high < 0.56)
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vlnkit.comparison.resampling import episode_keys, poisson_weights  # noqa: F401  (doctest names)
from vlnkit.io.exactsum import SUM_SCALE, exact_sum

__all__ = ["ReplicateSums", "percentile_interval", "DEFAULT_CONFIDENCE", "DEFAULT_REPLICATES"]

DEFAULT_CONFIDENCE = 0.95
DEFAULT_REPLICATES = 1000
LIMB_BITS = 26
_LIMB_MASK = (1 << LIMB_BITS) - 1
BLOCK_ROWS = 1 << 13  # episodes per matrix product: 31 (weight) * 2**26 (limb) * 2**13 < 2**44, and 64 MB of weights
MAX_WEIGHT = 31


def _limbs(values: np.ndarray) -> tuple[np.ndarray, int]:
    """(n, width) float64 limbs and the position of column 0: sum_c limbs[:, c] << 26 * (first + c) == x."""
    mantissa, exponent = np.frexp(values)
    ints = (mantissa * 2.0**53).astype(np.int64)  # exact: x = ints * 2**(exponent - 53)
    shifts = exponent.astype(np.int64) + (SUM_SCALE - 53)  # x = ints << shifts, in units of 2**-SUM_SCALE
    position, r = np.divmod(shifts, LIMB_BITS)
    if not len(values):
        return np.zeros((0, 3)), 0
    first = int(position.min())
    width = int(position.max()) - first + 3
    out = np.zeros((len(values), width))
    rows = np.arange(len(values))
    column = position - first
    out[rows, column] = (ints & ((np.int64(1) << (LIMB_BITS - r)) - 1)) << r  # bits 0..25 of ints << r
    out[rows, column + 1] = (ints >> (LIMB_BITS - r)) & _LIMB_MASK  # bits 26..51
    out[rows, column + 2] = ints >> (2 * LIMB_BITS - r)  # the rest, signed (arithmetic shift)
    return out, first


def _add(position: dict[int, np.ndarray], first: int, sums: np.ndarray) -> None:
    """Add a block's (limb columns, replicates) products to the per-position int64 totals."""
    sums = sums.astype(np.int64)
    for c in np.flatnonzero(sums.any(axis=1)).tolist():
        position[first + c] = position.get(first + c, 0) + sums[c]  # < 2**63 up to 2**19 blocks


def _to_ints(by_position: dict[int, np.ndarray], replicates: int) -> list[int]:
    """Per replicate, the exact integer sum over limb positions p of total[p] << 26 * p."""
    exact = np.zeros(replicates, dtype=object)
    for position, total in by_position.items():
        exact += total.astype(object) * (1 << (LIMB_BITS * position))
    return [int(e) for e in exact]


def percentile_interval(replicates: np.ndarray, confidence: float = DEFAULT_CONFIDENCE) -> list[float] | None:
    """The percentile bootstrap interval [q((1-c)/2), q((1+c)/2)] of replicate estimates (NaNs skipped).

    Quantiles use numpy's default (linear interpolation between order statistics), so the same
    replicates always give the same interval. None when there are no replicates.

    >>> percentile_interval(np.arange(101.0), confidence=0.5)
    [25.0, 75.0]
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    finite = np.asarray(replicates, dtype=np.float64)
    finite = finite[~np.isnan(finite)]
    if not len(finite):
        return None
    low, high = np.quantile(finite, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return [float(low), float(high)]


@dataclass
class ReplicateSums:
    """Per named column (a metric, or a metric of one side of a pair): exact plain and weighted sums.

    `totals[name]` / `counts[name]`: sum and number of finite values (the point estimate);
    `weighted_totals[name][b]` / `weighted_counts[name][b]`: sum of w*x and of w in replicate b.
    Non-finite values (NaN for nulls, +inf for unreachable distances) are left out, as in `means`.
    """

    replicates: int
    totals: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    weighted_totals: dict[str, list[int]] = field(default_factory=dict)
    weighted_counts: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, columns: dict[str, np.ndarray], weights: np.ndarray) -> ReplicateSums:
        """Sums of one batch: `columns` {name: (n,) float array}, `weights` (n, B) from `poisson_weights`."""
        weights = np.asarray(weights)
        if weights.ndim != 2:
            raise ValueError(f"weights must be an (episodes, replicates) array, got shape {weights.shape}")
        if int(weights.max(initial=0)) > MAX_WEIGHT:
            raise ValueError(f"bootstrap weights above {MAX_WEIGHT} are not supported (exact sums would overflow)")
        out = cls(weights.shape[1])
        values = {name: np.asarray(v, dtype=np.float64) for name, v in columns.items()}
        for name, v in values.items():
            if len(v) != len(weights):
                raise ValueError(f"column {name!r} has {len(v)} values for {len(weights)} weight rows")
        finite = {name: np.isfinite(v) for name, v in values.items()}
        by_position: dict[str, dict[int, np.ndarray]] = {name: {} for name in values}
        weight_sums = {name: np.zeros(out.replicates, dtype=np.int64) for name in values}
        for start in range(0, len(weights), BLOCK_ROWS):
            block = weights[start : start + BLOCK_ROWS].astype(np.float64)  # converted once, used by every column
            whole, whole_limbs = [], []  # columns finite on every row of the block: one matrix product for all
            for name, v in values.items():
                keep = finite[name][start : start + BLOCK_ROWS]
                limbs, first = _limbs(v[start : start + BLOCK_ROWS][keep])
                if keep.all():
                    whole.append((name, first, limbs.shape[1]))
                    whole_limbs.append(limbs)
                    continue
                w = block[keep]
                _add(by_position[name], first, (w.T @ limbs).T)
                weight_sums[name] += w.sum(axis=0).astype(np.int64)
            if whole:
                sums = (block.T @ np.hstack(whole_limbs)).T  # exact: every partial sum is an integer below 2**53
                all_weights = block.sum(axis=0).astype(np.int64)
                at = 0
                for name, first, width in whole:
                    _add(by_position[name], first, sums[at : at + width])
                    weight_sums[name] += all_weights
                    at += width
        for name, v in values.items():
            out.totals[name] = exact_sum(v[finite[name]])
            out.counts[name] = int(finite[name].sum())
            out.weighted_totals[name] = _to_ints(by_position[name], out.replicates)
            out.weighted_counts[name] = weight_sums[name].tolist()
        return out

    def __add__(self, other: ReplicateSums) -> ReplicateSums:
        if self.replicates != other.replicates:
            raise ValueError(f"cannot merge {self.replicates} replicates with {other.replicates}")
        out = ReplicateSums(self.replicates)
        for name in sorted(set(self.totals) | set(other.totals)):
            zero = [0] * self.replicates
            out.totals[name] = self.totals.get(name, 0) + other.totals.get(name, 0)
            out.counts[name] = self.counts.get(name, 0) + other.counts.get(name, 0)
            for mine, theirs, merged in (
                (self.weighted_totals, other.weighted_totals, out.weighted_totals),
                (self.weighted_counts, other.weighted_counts, out.weighted_counts),
            ):
                merged[name] = [a + b for a, b in zip(mine.get(name, zero), theirs.get(name, zero))]
        return out

    def __sub__(self, other: ReplicateSums) -> ReplicateSums:
        """The sums of the episodes in `self` but not in `other` (exact, when `other`'s episodes are a subset)."""
        if self.replicates != other.replicates:
            raise ValueError(f"cannot subtract {other.replicates} replicates from {self.replicates}")
        out = ReplicateSums(self.replicates)
        for name in self.totals:
            zero = [0] * self.replicates
            out.totals[name] = self.totals[name] - other.totals.get(name, 0)
            out.counts[name] = self.counts[name] - other.counts.get(name, 0)
            out.weighted_totals[name] = [
                a - b for a, b in zip(self.weighted_totals[name], other.weighted_totals.get(name, zero))
            ]
            out.weighted_counts[name] = [
                a - b for a, b in zip(self.weighted_counts[name], other.weighted_counts.get(name, zero))
            ]
        return out

    def renamed(self, names: dict[str, str]) -> ReplicateSums:
        """The columns in `names` under their new names (others left out)."""
        return ReplicateSums(
            self.replicates,
            {names[k]: v for k, v in self.totals.items() if k in names},
            {names[k]: v for k, v in self.counts.items() if k in names},
            {names[k]: v for k, v in self.weighted_totals.items() if k in names},
            {names[k]: v for k, v in self.weighted_counts.items() if k in names},
        )

    # ------------------------------------------------------------------ estimates
    def mean(self, name: str) -> float | None:
        """The plain mean of the column's finite values (correctly rounded; None when there are none)."""
        n = self.counts.get(name, 0)
        return self.totals[name] / (n << SUM_SCALE) if n else None

    def replicate_means(self, name: str) -> np.ndarray:
        """(B,) means of the replicates (NaN for a replicate that drew no episode of the column)."""
        return np.array(
            [
                t / (w << SUM_SCALE) if w else np.nan
                for t, w in zip(self.weighted_totals[name], self.weighted_counts[name])
            ]
        )

    def interval(self, name: str, confidence: float = DEFAULT_CONFIDENCE) -> list[float] | None:
        """The percentile bootstrap interval of the column's mean (None without replicates or values)."""
        if not self.replicates or not self.counts.get(name):
            return None
        return percentile_interval(self.replicate_means(name), confidence)

    def difference(self, a: str, b: str) -> float | None:
        """mean(a) - mean(b) of two columns over the same episodes, correctly rounded (0.0 for equal columns)."""
        n = self._paired_count(a, b)
        return (self.totals[a] - self.totals[b]) / (n << SUM_SCALE) if n else None

    def replicate_differences(self, a: str, b: str) -> np.ndarray:
        """(B,) per-replicate mean(a) - mean(b) of two paired columns, each exactly rounded once."""
        self._paired_count(a, b)
        return np.array(
            [
                (ta - tb) / (w << SUM_SCALE) if w else np.nan
                for ta, tb, w in zip(self.weighted_totals[a], self.weighted_totals[b], self.weighted_counts[a])
            ]
        )

    def _paired_count(self, a: str, b: str) -> int:
        if self.counts.get(a) != self.counts.get(b) or self.weighted_counts.get(a) != self.weighted_counts.get(b):
            raise ValueError(f"columns {a!r} and {b!r} are not paired (they cover different episodes)")
        return self.counts.get(a, 0)
