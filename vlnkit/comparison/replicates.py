"""Mergeable bootstrap replicate sums: exact per-replicate sums of w*x and w, and percentile intervals.

A replicate's mean of metric x is sum(w * x) / sum(w) over the episodes whose x is finite (the same
episodes `vlnkit.evaluation.means` averages). The sums are integers, so `ReplicateSums` of any slices
of the data, added in any order, give the same bits, and so does every interval computed from them:

- the point estimate (`mean`) is the job's own exact mean: sum(x) as an integer count of
  2**-SUM_SCALE (`vlnkit.io.exactsum`), divided once;
- a replicate's sum(w * x) is the exact sum of w times x rounded to the grid 2**-REPLICATE_BITS
  (2**-26, 1.5e-8; round half to even). The rounding is the price of speed: a value on the grid is an
  integer of two 36-bit limbs of which one is non-zero for every value below 1,024 (all rates, and
  distances below a kilometre), where the exact float needs three 26-bit limbs at exponent-dependent
  positions (`vlnkit.comparison.kernels` explains the pass).
  A replicate mean moves by less than 2**-27 (7.5e-9) from the unrounded one, thousands of times
  below an interval's Monte-Carlo error (about 1e-3 with 1,000 replicates), and a test holds it.

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

from vlnkit.comparison.resampling import KeyedWeights, episode_keys, poisson_weights  # noqa: F401  (doctest names)
from vlnkit.io.exactsum import SUM_SCALE, exact_sums_by_cell
from vlnkit.parallel import parts, run_in_parallel, thread_count

DEFAULT_CONFIDENCE = 0.95
DEFAULT_REPLICATES = 1000
REPLICATE_BITS = 26  # replicate sums add values rounded to multiples of 2**-26
LIMB_BITS = 36  # `vlnkit.comparison.kernels`: 4,096 rows x weight 31 x 2**36 < 2**53
LIMBS = 2  # |x| < 2**36 on the 2**-26 grid: below 2**62, two limbs
MAX_WEIGHT = 31
MAX_VALUE = 2.0**36  # |x| * 2**26 below 2**62: two limbs, and int64 room for the carries
KERNEL_ROWS = 1 << 21  # rows per kernel call: low limbs of 2**21 rows x 31 x 2**36 < 2**63 before carrying


def limbs_of(values: np.ndarray) -> np.ndarray:
    """(n, 2) float64 limbs of finite values on the replicate grid: rint(x * 2**26) == l0 + l1 * 2**36,
    l0 in [0, 2**36), l1 signed (arithmetic shift).

    >>> limbs_of(np.array([1.0, 0.5, -1.0, 2.0**30])).tolist()
    [[67108864.0, 0.0], [33554432.0, 0.0], [68652367872.0, -1.0], [0.0, 1048576.0]]
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = np.empty((len(values), LIMBS))
    _grid_limbs(values, out, np.empty(len(values)))
    return out


def _grid_limbs(values: np.ndarray, out: np.ndarray, missing: np.ndarray) -> None:
    """`limbs_of` into `out` (0 and missing = 1 for a non-finite value), refusing values off the grid."""
    from vlnkit.comparison.kernels import grid_limbs

    bad = grid_limbs(values, float(1 << REPLICATE_BITS), LIMB_BITS, MAX_VALUE, out, missing)
    if bad >= 0:
        raise ValueError(f"bootstrap values must be below {MAX_VALUE:g} in magnitude, got {values[bad]!r}")


def _normalized(limbs: np.ndarray, copy: bool = True) -> np.ndarray:
    """The same integers (limb p worth 2**(36 p)) with every limb but the top one in [0, 2**36): carries
    moved up, so int64 totals stay bounded however many sums are added; zero top limbs trimmed.
    `copy=False` works in place (for an array nothing else holds)."""
    limbs = limbs.copy() if copy else limbs
    for p in range(len(limbs) - 1):
        carry = limbs[p] >> LIMB_BITS
        limbs[p] -= carry << LIMB_BITS
        limbs[p + 1] += carry
    if len(limbs) and (limbs[-1].max(initial=0) >= 1 << 50 or limbs[-1].min(initial=0) <= -(1 << 50)):
        carry = limbs[-1] >> LIMB_BITS
        limbs[-1] -= carry << LIMB_BITS
        limbs = np.vstack([limbs, carry[None]])
    top = len(limbs)
    while top and not limbs[top - 1].any():
        top -= 1
    return limbs[:top]


def _combined(x: np.ndarray, y: np.ndarray, sign: int) -> np.ndarray:
    """x + sign * y of two limb totals, normalized."""
    if len(x) >= len(y):
        out = np.array(x, dtype=np.int64)  # a copy
    else:
        out = np.zeros((len(y), x.shape[1]), np.int64)
        out[: len(x)] = x
    if sign > 0:
        out[: len(y)] += y
    else:
        out[: len(y)] -= y
    return _normalized(out, copy=False)


def _to_ints(limbs: np.ndarray, replicates: int) -> list[int]:
    """Per replicate, the exact integer sum over limbs p of limbs[p] << 36 p."""
    exact = np.zeros(replicates, dtype=object)
    for p, row in enumerate(limbs):
        exact += row.astype(object) * (1 << (LIMB_BITS * p))
    return [int(e) for e in exact]


def _replicate_ratios(limbs: np.ndarray, weights: np.ndarray, replicates: int) -> np.ndarray:
    """(B,) the exact integer sums of `limbs` over (weights << REPLICATE_BITS), each correctly rounded
    (NaN where the weight is 0): what Python's int / int gives.

    When every numerator and denominator is at most 2**53 in magnitude (any run up to millions of
    episodes), both are float64 exactly and IEEE division rounds the exact quotient once, as CPython's
    int / int does on such operands: one numpy division instead of a big-integer division per replicate.
    Larger sums take the big-integer way.
    """
    weights = np.asarray(weights, dtype=np.int64)
    limbs = np.asarray(limbs, dtype=np.int64).reshape(-1, replicates)
    padded = np.zeros((2, replicates), np.int64)
    padded[: len(limbs)] = limbs[:2]
    small = (
        len(limbs) <= 2
        and np.abs(padded[0]).max(initial=0) < (1 << 52)
        and np.abs(padded[1]).max(initial=0) < (1 << 16)
        and weights.max(initial=0) < (1 << 27)
    )
    if small:
        exact = padded[0] + (padded[1] << LIMB_BITS)  # |exact| < 2**53: no overflow
        with np.errstate(invalid="ignore", divide="ignore"):
            ratios = exact.astype(np.float64) / (weights << REPLICATE_BITS).astype(np.float64)
        return np.where(weights > 0, ratios, np.nan)
    totals = _to_ints(limbs, replicates)
    return np.array([t / (w << REPLICATE_BITS) if w else np.nan for t, w in zip(totals, weights.tolist())])


def _value_columns(values: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """(len(rows), 1 + 3 M) float64 kernel columns of M metrics (`values` (M, n)) for value rows `rows`
    (all, in order, by default): 1 (every row's weight), then per metric 1 where the row has no finite
    value, then per metric its two limbs (0 where missing)."""
    from vlnkit.comparison.kernels import value_columns

    values = np.ascontiguousarray(values, dtype=np.float64)
    rows = np.arange(values.shape[1]) if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    out = np.empty((len(rows), 1 + (1 + LIMBS) * len(values)))
    if value_columns(values, rows, float(1 << REPLICATE_BITS), LIMB_BITS, MAX_VALUE, out) >= 0:
        for m in range(len(values)):  # the refusal names the first value off the grid of the first such metric
            _grid_limbs(values[m, rows], np.empty((len(rows), LIMBS)), np.empty(len(rows)))
    return out


def cell_sums(weights, episode, cell, targets, columns: dict[str, np.ndarray], metrics_of=None) -> list[ReplicateSums]:
    """One `ReplicateSums` per target: row r (values `columns[name][r]`, weights `weights[episode[r]]`:
    `weights` an (E, B) uint8 matrix, or `KeyedWeights` whose rows the kernel makes as it sums)
    is in cell `cell[r]` and counts in every target `targets[cell[r]]` lists (-1: none). Target t keeps
    the metrics `metrics_of[t]` (all by default). One compiled pass over the rows serves every target:
    cells are the combinations of agent and breakdown groups, targets the agents and the groups.

    >>> w = np.ones((3, 2), np.uint8)
    >>> targets = np.array([[1, 2], [0, 2]])  # cell 0 counts in targets 1 and 2, cell 1 in 0 and 2
    >>> [s.mean("x") for s in cell_sums(w, np.arange(3), np.array([1, 0, 1]), targets, {"x": [1.0, 2.0, 4.0]})]
    [2.5, 2.0, 2.3333333333333335]
    """
    from vlnkit.comparison.kernels import SPLIT, cell_limb_sums

    names = list(columns)
    targets = np.asarray(targets, dtype=np.int64).reshape(len(targets), -1)
    n_targets = int(targets.max(initial=-1)) + 1 if metrics_of is None else len(metrics_of)
    metrics_of = [names] * n_targets if metrics_of is None else [list(m) for m in metrics_of]
    cell = np.asarray(cell, dtype=np.int64)
    values = np.empty((len(names), len(cell)))  # the rows in their given order (copied, not gathered)
    for m, name in enumerate(names):
        values[m] = columns[name]
    # One cell's rows together: its accumulators stay in the cache. Cell numbers below 2**15 sort as
    # int16, where numpy's stable sort is a radix sort (a twelfth of the time of int64's merge sort).
    small = len(cell) and -(1 << 15) <= cell.min() and cell.max() < 1 << 15
    order = np.argsort(cell.astype(np.int16) if small else cell, kind="stable")
    by_cell, episode = cell[order], np.asarray(episode, dtype=np.int64)[order]
    n, replicates = len(cell), weights.shape[1]
    n_columns = 1 + (1 + LIMBS) * len(names)
    low = 1 + len(names) + LIMBS * np.arange(len(names))  # the columns of each metric's low limb
    index = {name: m for m, name in enumerate(names)}
    masks: dict[tuple, np.ndarray] = {}  # one per distinct list of kept metrics (agents', breakdowns')
    keep = np.zeros((n_targets, len(names)), np.bool_)  # (target, metric): only kept columns take memory
    for t, kept in enumerate(metrics_of):
        key = tuple(kept)
        if key not in masks:
            masks[key] = np.zeros(len(names), np.bool_)
            masks[key][[index[name] for name in kept]] = True
        keep[t] = masks[key]
    # Rows of `out`: each target's weights and its kept metrics' misses first, then every kept low limb,
    # then every high limb in the same order, so the limbs are two blocks (carried and trimmed as slices).
    others = np.column_stack([np.ones(n_targets, np.bool_), keep])  # columns 0 .. M of each target
    n_others, n_limbs = int(others.sum()), int(keep.sum())
    row_of = np.full((n_targets, n_columns), -1, np.int64)  # (target, column) -> out row
    row_of[:, : 1 + len(names)][others] = np.arange(n_others)
    limb_rows = np.full(keep.shape, -1, np.int64)
    limb_rows[keep] = n_others + np.arange(n_limbs)
    row_of[:, low], row_of[:, low + 1] = limb_rows, np.where(keep, limb_rows + n_limbs, -1)
    out = np.zeros((n_others + 2 * n_limbs, replicates), np.int64)
    lows, highs = out[n_others : n_others + n_limbs], out[n_others + n_limbs :]
    if isinstance(weights, KeyedWeights):  # each row's weights made in the kernel from its key
        keyed, weights = weights, np.zeros((0, 0), np.uint8)
    else:  # no keys: the kernel reads the weights matrix
        keyed, weights = KeyedWeights(np.zeros(0, np.uint64), 0), np.ascontiguousarray(weights, dtype=np.uint8)
    for start in range(0, n, KERNEL_ROWS):
        rows = slice(start, start + KERNEL_ROWS)
        dense = _value_columns(values, order[rows])
        hashing = keyed.hashing(episode[rows] if len(keyed.keys) else slice(0, 0))
        args = (weights, episode[rows], hashing, by_cell[rows], dense, targets, row_of, out)
        # A row-replicate unit costs an addition per column (1 + the metrics' limbs and misses), so a
        # bucket of the score job (~30,000 rows x 1,000 replicates) is worth both cores.
        threads = thread_count(len(args[1]) * replicates * (1 + len(names)))
        run_in_parallel(lambda first, stop, a=args: cell_limb_sums(*a, first, stop), parts(replicates, threads, SPLIT))
        carry = lows >> LIMB_BITS  # low limbs back below 2**36 before the next rows
        lows -= carry << LIMB_BITS
        highs += carry
    totals, counts = exact_sums_by_cell(cell, targets, values, n_targets)  # per metric, per target
    # What `_normalized` does to each (low, high) pair, for all at once: the low limbs are carried
    # already, so it is trimming zero top limbs, unless a high limb needs a third (never below 2**50).
    big = ((highs.max(axis=1, initial=0) >= 1 << 50) | (highs.min(axis=1, initial=0) <= -(1 << 50))).tolist()
    used = np.where(highs.any(axis=1), 2, np.where(lows.any(axis=1), 1, 0)).tolist()
    result = []
    firsts, row_lists = limb_rows.tolist(), row_of.tolist()
    for t, kept in enumerate(metrics_of):
        sums = ReplicateSums(replicates)
        weights_row = out[row_lists[t][0]]
        for name in kept:
            m = index[name]
            sums.totals[name], sums.counts[name] = totals[m][t], counts[m][t]
            first = firsts[t][m]
            k = first - n_others  # the pair's place in the limb blocks
            pair = [first, first + n_limbs]
            sums.limb_totals[name] = _normalized(out[pair]) if big[k] else out[pair[: used[k]]]
            sums.weight_counts[name] = weights_row - out[row_lists[t][1 + m]]
        result.append(sums)
    return result


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


@dataclass(eq=False)
class ReplicateSums:
    """Per named column (a metric, or a metric of one side of a pair): exact plain and weighted sums.

    `totals[name]` / `counts[name]`: sum and number of finite values (the point estimate);
    `limb_totals[name]`: (limbs, B) int64, limb p worth 2**(36 p), whose column b is the exact sum of
    w * rint(x * 2**26) in replicate b; `weight_counts[name]`: (B,) int64 sums of w
    (`weighted_totals` / `weighted_counts` give both as Python integers). Non-finite values (NaN for nulls, +inf for unreachable distances) are left out,
    as in `means`.
    """

    replicates: int
    totals: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    limb_totals: dict[str, np.ndarray] = field(default_factory=dict)
    weight_counts: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, columns: dict[str, np.ndarray], weights: np.ndarray) -> ReplicateSums:
        """Sums of one batch: `columns` {name: (n,) float array}, `weights` (n, B) from `poisson_weights`."""
        weights = np.asarray(weights)
        if weights.ndim != 2:
            raise ValueError(f"weights must be an (episodes, replicates) array, got shape {weights.shape}")
        if int(weights.max(initial=0)) > MAX_WEIGHT or int(weights.min(initial=0)) < 0:
            raise ValueError(f"bootstrap weights above {MAX_WEIGHT} are not supported (exact sums would overflow)")
        for name, v in columns.items():
            if len(v) != len(weights):
                raise ValueError(f"column {name!r} has {len(v)} values for {len(weights)} weight rows")
        rows = np.arange(len(weights))
        return cell_sums(weights, rows, np.zeros(len(weights), np.int64), [[0]], columns)[0]

    @property
    def weighted_totals(self) -> dict[str, list[int]]:
        """{name: [exact sum of w * x in replicate b, as an integer count of 2**-REPLICATE_BITS]}."""
        return {name: _to_ints(limbs, self.replicates) for name, limbs in self.limb_totals.items()}

    @property
    def weighted_counts(self) -> dict[str, list[int]]:
        """{name: [sum of w over the column's finite values in replicate b]}."""
        return {name: counts.tolist() for name, counts in self.weight_counts.items()}

    def __eq__(self, other) -> bool:
        if not isinstance(other, ReplicateSums):
            return NotImplemented
        return (self.replicates, self.totals, self.counts, self.weighted_counts, self.weighted_totals) == (
            other.replicates,
            other.totals,
            other.counts,
            other.weighted_counts,
            other.weighted_totals,
        )

    def _merged(self, other: ReplicateSums, sign: int, names) -> ReplicateSums:
        out = ReplicateSums(self.replicates)
        empty = np.zeros((0, self.replicates), np.int64)
        zero = np.zeros(self.replicates, np.int64)
        for name in names:
            out.totals[name] = self.totals.get(name, 0) + sign * other.totals.get(name, 0)
            out.counts[name] = self.counts.get(name, 0) + sign * other.counts.get(name, 0)
            out.limb_totals[name] = _combined(
                self.limb_totals.get(name, empty), other.limb_totals.get(name, empty), sign
            )
            out.weight_counts[name] = self.weight_counts.get(name, zero) + sign * other.weight_counts.get(name, zero)
        return out

    def __add__(self, other: ReplicateSums) -> ReplicateSums:
        if self.replicates != other.replicates:
            raise ValueError(f"cannot merge {self.replicates} replicates with {other.replicates}")
        return self._merged(other, 1, sorted(set(self.totals) | set(other.totals)))

    def __sub__(self, other: ReplicateSums) -> ReplicateSums:
        """The sums of the episodes in `self` but not in `other` (exact, when `other`'s episodes are a subset)."""
        if self.replicates != other.replicates:
            raise ValueError(f"cannot subtract {other.replicates} replicates from {self.replicates}")
        return self._merged(other, -1, list(self.totals))

    def renamed(self, names: dict[str, str]) -> ReplicateSums:
        """The columns in `names` under their new names (others left out)."""
        return ReplicateSums(
            self.replicates,
            {names[k]: v for k, v in self.totals.items() if k in names},
            {names[k]: v for k, v in self.counts.items() if k in names},
            {names[k]: v for k, v in self.limb_totals.items() if k in names},
            {names[k]: v for k, v in self.weight_counts.items() if k in names},
        )

    # ------------------------------------------------------------------ estimates
    def mean(self, name: str) -> float | None:
        """The plain mean of the column's finite values (correctly rounded; None when there are none)."""
        n = self.counts.get(name, 0)
        return self.totals[name] / (n << SUM_SCALE) if n else None

    def replicate_means(self, name: str) -> np.ndarray:
        """(B,) means of the replicates (NaN for a replicate that drew no episode of the column)."""
        return _replicate_ratios(self.limb_totals[name], self.weight_counts[name], self.replicates)

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
        differences = _combined(self.limb_totals[a], self.limb_totals[b], -1)
        return _replicate_ratios(differences, self.weight_counts[a], self.replicates)

    def _paired_count(self, a: str, b: str) -> int:
        if a not in self.counts and b not in self.counts:
            return 0
        same = a in self.weight_counts and b in self.weight_counts
        same = same and np.array_equal(self.weight_counts[a], self.weight_counts[b])
        if self.counts.get(a) != self.counts.get(b) or not same:
            raise ValueError(f"columns {a!r} and {b!r} are not paired (they cover different episodes)")
        return self.counts.get(a, 0)
