"""Poisson bootstrap weights that are a pure function of (seed, episode key, replicate).

The classical bootstrap draws n episodes with replacement, which needs all n in one place. The
Poisson bootstrap (Chamandy, Muralidharan, Najmi and Naidu, "Estimating uncertainty for massive
data streams", Google, 2012) gives every record an independent Poisson(1) weight per replicate
instead; the weighted sums of any slice of the data can then be added to those of any other slice,
so a job computes B replicates in one pass, on any number of workers, and merges them exactly.

Here the weight is not drawn from a random stream but computed from a hash. For episode key `k`
(`episode_keys`) and replicate `b`, `h = stable_hash(k, b // 3, seed=seed)` (`vlnkit.hashing`) gives
three 21-bit uniforms, `u = ((h >> 21 * (b % 3)) & (2**21 - 1)) / 2**21`, and the weight is the
Poisson(1) inverse CDF at `u`: the number of cumulative probabilities P(X <= j) that are <= u. (One
hash per three replicates, because hashing is most of the cost; 21 bits resolve every probability of
Poisson(1) to 5e-7, so the weights are Poisson(1) but for the 1e-7 chance of a weight above 9.)
The same episode therefore gets the same weights in every agent, job, runner and partitioning,
which is what makes comparisons between agents paired.

>>> keys = episode_keys(["4332_0", "4332_1"])
>>> poisson_weights(keys, replicates=4, seed=0).shape
(2, 4)
>>> bool((poisson_weights(keys, 4, seed=1) == poisson_weights(keys[::-1], 4, seed=1)[::-1]).all())
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from vlnkit.hashing import integer_key_hashes, seed_state, stable_hash, stable_hash_array
from vlnkit.parallel import parts, run_in_parallel, thread_count

UNITS = ("episode", "path")

# P(X <= j) for X ~ Poisson(1), j = 0, 1, ...; past j = 18 the float is 1.0 (no uniform below 1 reaches it).
POISSON_CDF = np.cumsum([math.exp(-1.0) / math.factorial(j) for j in range(20)])
UNIFORM_BITS = 21
PER_HASH = 3  # uniforms per 64-bit hash

# A canonical R2R id: "<path_id>_<k>", two integers without sign or leading zeros of at most 18 digits
# each (so each fits in int64): `vlnkit.comparison.kernels.canonical_id_parts` reads them.


def _canonical_parts(instr_ids) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(is canonical, path ids, instruction indices, is a REVERIE id) of the canonical ids `<path_id>_<k>`
    and `<path_id>_<objId>_<k>` (path id packed with objId), parsed from Arrow's buffers."""
    from vlnkit.comparison.kernels import THREE_PARTS, canonical_id_parts

    ids = pa.array(instr_ids, type=pa.string()) if not isinstance(instr_ids, pa.Array) else instr_ids
    if ids.null_count:
        raise ValueError(f"episode_keys: instruction id #{ids.is_null().index(True).as_py()} is null")
    _, offsets, data = ids.buffers()
    offsets = np.frombuffer(offsets, np.int32)
    data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    path_ids, ks = np.empty(len(ids), np.int64), np.empty(len(ids), np.int64)
    canonical_id_parts(offsets, data, ids.offset, len(ids), path_ids, ks)
    canonical = path_ids >= 0
    ks = ks[canonical]
    three = ks >= THREE_PARTS
    return canonical, path_ids[canonical], ks & (THREE_PARTS - 1), three


def _as_strings(instr_ids) -> pa.Array:
    """Ids as an Arrow string array (in one call; integer ids become their decimal text)."""
    if isinstance(instr_ids, pa.ChunkedArray):
        instr_ids = instr_ids.combine_chunks()
    if isinstance(instr_ids, pa.Array) and pa.types.is_string(instr_ids.type):
        return instr_ids
    try:
        return pa.array(instr_ids, type=pa.string())
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([str(i) for i in instr_ids], type=pa.string())


def episode_keys(instr_ids, *, unit: str = "episode", scans=None) -> np.ndarray:
    """One uint64 key per episode: which episodes are resampled together (`unit`).

    One rule, used everywhere:
    - `unit="episode"`: an id `"<path_id>_<k>"` (two integers without sign or leading zeros) is keyed
      `stable_hash(path_id, k)`, a REVERIE id `"<path_id>_<objId>_<k>"` (path_id < 2**31, objId < 2**32)
      `stable_hash(path_id, objId, k)`, in numpy with no Python call per episode; any other id (e.g.
      `"a-7"`, `"012_3"`) is keyed `stable_hash(instr_id)` as a string. Numbers and strings never collide
      by design (they carry different tags), and `"12_3"` and `"012_3"` stay distinct episodes.
    - `unit="path"`: every instruction of one path shares the key `stable_hash(scan, path_id)`, so
      the bootstrap resamples paths (they share a trajectory target and are not independent). Needs
      `scans` and canonical ids. A REVERIE id `"<path_id>_<objId>_<k>"` is canonical too, its path being
      the record (one path to one target: `path_id << 32 | objId`).

    >>> int(episode_keys(["12_3"])[0]) == stable_hash(12, 3)
    True
    >>> int(episode_keys(["a-7"])[0]) == stable_hash("a-7")
    True
    >>> int(episode_keys(["1357_66_2"])[0]) == stable_hash(1357, 66, 2)
    True
    >>> k = episode_keys(["12_0", "12_1"], unit="path", scans=["scanA", "scanA"])
    >>> int(k[0]) == int(k[1]) == stable_hash("scanA", 12)
    True
    """
    if unit not in UNITS:
        raise ValueError(f"bootstrap unit must be one of {UNITS}, got {unit!r}")
    ids = _as_strings(instr_ids)
    canonical, path_ids, ks, three = _canonical_parts(ids)
    keys = np.empty(len(ids), dtype=np.uint64)
    if unit == "episode":
        if three.any():  # REVERIE's ids among them
            parts = np.empty(len(ks), dtype=np.uint64)
            parts[~three] = stable_hash_array(path_ids[~three], ks[~three])
            records, objects = path_ids[three] >> 32, path_ids[three] & 0xFFFFFFFF
            parts[three] = stable_hash_array(records, objects, ks[three])
        else:
            parts = stable_hash_array(path_ids, ks)
        keys[canonical] = parts
        for i in np.flatnonzero(~canonical):  # only ids outside the canonical form cost a Python call
            keys[i] = stable_hash(ids[int(i)].as_py())
        return keys
    if not canonical.all():
        bad = ids[int(np.argmin(canonical))].as_py()
        raise ValueError(
            f"--bootstrap_unit=path needs ids '<path_id>_<k>' (REVERIE: '<path_id>_<objId>_<k>'), got {bad!r}"
        )
    if scans is None or len(scans) != len(ids):
        raise ValueError("--bootstrap_unit=path needs the scan of every episode")
    scans = np.asarray(scans if not isinstance(scans, pa.Array) else scans.to_pylist(), dtype=object)
    names, which = np.unique(scans.astype(str), return_inverse=True)
    for j, scan in enumerate(names.tolist()):  # one numpy call per scan
        rows = which == j
        keys[rows] = stable_hash_array(scan, path_ids[rows])
    return keys


def _thresholds() -> np.ndarray:
    """ceil(P(X <= j) * 2**21) for every j: the weight at uniform bits u is the first j whose threshold
    exceeds u, i.e. the number of cumulative probabilities P(X <= j) <= u / 2**21 (exact: both sides
    are multiples of a power of two)."""
    return np.ceil(POISSON_CDF * float(1 << UNIFORM_BITS)).astype(np.int64)


def _reachable_thresholds() -> np.ndarray:
    """The thresholds a 21-bit uniform can reach (below 2**21): 9 of them, so weights are at most 9."""
    thresholds = _thresholds()
    return thresholds[thresholds < 1 << UNIFORM_BITS]


@dataclass(frozen=True)
class KeyedWeights:
    """The (len(keys), replicates) weights `poisson_weights(keys, replicates, seed)`, not computed: the
    bootstrap's sums kernel (`vlnkit.comparison.replicates.cell_sums`) makes each row's weights as it
    adds the row, so no weights matrix is written to memory and read back."""

    keys: np.ndarray
    replicates: int
    seed: int = 0

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.keys), self.replicates)

    def hashing(self, rows: np.ndarray) -> tuple:
        """What `vlnkit.comparison.kernels.cell_limb_sums` takes to make the weights of keys[rows]."""
        keys = np.ascontiguousarray(np.asarray(self.keys, dtype=np.uint64)[rows])
        return (keys, *_hash_parameters(self.replicates, self.seed))

    def __getitem__(self, rows) -> np.ndarray:
        """The weights of keys[rows], computed (an (n, replicates) uint8 matrix)."""
        return poisson_weights(np.asarray(self.keys, dtype=np.uint64)[rows], self.replicates, self.seed)


def _hash_parameters(replicates: int, seed: int) -> tuple[np.uint64, np.ndarray, np.ndarray]:
    """(the seed's hash state, the hash of every integer b // 3 below `replicates`, the thresholds)."""
    from vlnkit.comparison import kernels

    if replicates < 0:
        raise ValueError(f"replicates must be >= 0, got {replicates}")
    groups = integer_key_hashes(np.arange(-(-replicates // PER_HASH), dtype=np.int64))
    thresholds = _reachable_thresholds()
    assert len(thresholds) == kernels.THRESHOLDS  # the kernel holds exactly these in registers
    assert kernels.UNIFORM_BITS == UNIFORM_BITS  # and cuts uniforms of this many bits
    return np.uint64(seed_state(seed)), groups, thresholds


def poisson_weights(keys: np.ndarray, replicates: int, seed: int = 0) -> np.ndarray:
    """(n, replicates) uint8 Poisson(1) weights: row i, column b is a function of (seed, keys[i], b) only.

    Computed by a compiled loop (`vlnkit.comparison.kernels.poisson_weight_rows`) that applies the
    hash steps of `stable_hash_array(keys, b // 3, seed=seed)`; `tests/oracles/poisson_weights.py`
    holds the plain numpy formulation it is tested against.

    >>> w = poisson_weights(episode_keys([f"{p}_0" for p in range(20000)]), replicates=10, seed=3)
    >>> round(float(w.mean()), 1), round(float(w.var()), 1)  # Poisson(1): mean 1, variance 1
    (1.0, 1.0)
    """
    from vlnkit.comparison.kernels import poisson_weight_rows

    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    state, groups, thresholds = _hash_parameters(replicates, seed)
    out = np.empty((len(keys), replicates), np.uint8)
    run_in_parallel(
        lambda first, stop: poisson_weight_rows(keys, first, stop, state, groups, thresholds, out),
        parts(len(keys), thread_count(len(keys) * replicates * len(thresholds))),  # a comparison per threshold
    )
    return out
