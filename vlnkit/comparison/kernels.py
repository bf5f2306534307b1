"""Compiled (numba) kernels of the Poisson bootstrap: weights from hashes, and exact weighted sums.

Why compiled: the bootstrap multiplies every episode's values by B (1,000) weights. In numpy that
was a float64 matrix product per block of episodes, after converting the uint8 weights to float64
and gathering them per agent and per breakdown group; the conversions and copies cost as much as the
arithmetic, and the score job took 5x its time without the bootstrap. Here one pass over the rows
adds `weight * limb` into per-(slot, column) accumulators, reading each weight as a byte and skipping
zero limbs (a value below 1,024 has one non-zero limb of two), with one slot's accumulators
(rows come sorted by slot) for up to `TILE` replicates in the CPU cache.

Exactness (why float64 accumulators give integer-exact sums): limbs are integers below 2**36
(`vlnkit.comparison.replicates`), weights at most 31, so one product is below 2**41, and a tile's
accumulators take at most `CHUNK_ROWS` products before they are moved into int64 totals:
4,096 * 31 * 2**36 < 2**53. Integer sums do not depend on the order they are added in,
so the results are the same bits for any row order, chunking or partitioning.

The weight of episode key k in replicate b is the one `vlnkit.comparison.resampling` defines:
`h = stable_hash(k, b // 3, seed=seed)`, computed with the splitmix64 steps of
`vlnkit.hashing.stable_hash_array`; three 21-bit uniforms per hash; the Poisson(1) inverse CDF as
the number of integer thresholds ceil(P(X <= j) * 2**21) at or below the uniform's bits (a sum of
comparisons rather than a search, so no branch depends on the random draw).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from vlnkit.hashing import GOLDEN, TAG_INT

__all__ = ["poisson_weight_rows", "weighted_limb_sums", "TILE", "CHUNK_ROWS", "SPLIT"]

TILE = 1024  # replicates per accumulator tile: one slot's columns x 1,024 float64 stay in the L2 cache
SPLIT = 64  # replicate ranges of threads are cut at multiples of this
CHUNK_ROWS = 1 << 12  # rows per tile pass: 4,096 x 31 x 2**36 < 2**53, so float64 sums stay exact
_GOLDEN = np.uint64(GOLDEN)
_TAG_INT = np.uint64(TAG_INT)


@njit(cache=True, inline="always")
def _mix(z):  # splitmix64's finaliser, as vlnkit.hashing._mix_array
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def poisson_weight_rows(keys, first, stop, start, group_hashes, thresholds, bits, out):
    """Rows first..stop-1 of the (len(keys), B) uint8 weights `out`: `start` is the seed's hash state,
    `group_hashes[g]` the hash of the integer g (one per three replicates), `thresholds` the integer
    inverse-CDF thresholds of the `bits`-bit uniforms. A key's uniforms are cut from its hashes first;
    then each threshold is compared with every uniform of the row in one pass (a loop over replicates,
    which the compiler vectorizes), so a weight is a sum of comparisons with no branch on the draw."""
    replicates = out.shape[1]
    mask = np.uint64((1 << bits) - 1)
    shift1 = np.uint64(bits)
    shift2 = np.uint64(2 * bits)
    hashes = len(group_hashes)
    n = 3 * hashes
    uniforms = np.empty(n, np.int32)
    counts = np.empty(n, np.int32)
    limits = thresholds.astype(np.int32)
    for i in range(first, stop):
        state = _mix(start * _GOLDEN + _mix(keys[i] ^ _TAG_INT))
        for g in range(hashes):
            h = _mix(state * _GOLDEN + group_hashes[g])
            uniforms[3 * g] = np.int32(h & mask)
            uniforms[3 * g + 1] = np.int32((h >> shift1) & mask)
            uniforms[3 * g + 2] = np.int32((h >> shift2) & mask)
        for b in range(n):
            counts[b] = 0
        for k in range(len(limits)):
            limit = limits[k]
            for b in range(n):
                counts[b] += uniforms[b] >= limit
        row = out[i]
        for b in range(replicates):
            row[b] = np.uint8(counts[b])


@njit(cache=True, nogil=True)
def weighted_limb_sums(weights, episode, slot, limbs, missing, out, first, stop):
    """Exact per-slot sums of weight * limb for replicates first..stop-1, added into `out`.

    weights (E, B) uint8; episode (n,) row -> weight row; slot (n,) row -> output slot (rows sorted
    by slot: the accumulators of one slot are moved out when the slot changes); limbs (n, M, L)
    float64; missing (n, M) bool: the row has no value of metric m; out (slots, 1 + M + L M, B)
    int64: column 0 sums the weights of all rows, 1 + m those of rows missing metric m,
    1 + M + L m + j limb j of metric m. Calls on disjoint replicate ranges write disjoint parts of
    `out`, so threads can share it (the kernel releases the GIL).
    """
    n, metrics = missing.shape
    limb_count = limbs.shape[2]
    columns = out.shape[1]
    acc = np.zeros((columns, TILE))
    w = np.zeros(TILE)
    for t0 in range(first, stop, TILE):
        width = min(TILE, stop - t0)
        current = -1
        rows = 0
        for r in range(n + 1):
            s = slot[r] if r < n else -1
            if s != current or rows == CHUNK_ROWS:  # move the sums out: exact below 2**53
                if current >= 0:
                    for c in range(columns):
                        for b in range(width):
                            out[current, c, t0 + b] += np.int64(acc[c, b])
                            acc[c, b] = 0.0
                current = s
                rows = 0
            if r == n:
                break
            rows += 1
            row = weights[episode[r]]
            for b in range(width):
                w[b] = row[t0 + b]
            total = acc[0]
            for b in range(width):
                total[b] += w[b]
            for m in range(metrics):
                if missing[r, m]:
                    gone = acc[1 + m]
                    for b in range(width):
                        gone[b] += w[b]
                    continue
                for j in range(limb_count):
                    v = limbs[r, m, j]
                    if v != 0.0:
                        sums = acc[1 + metrics + limb_count * m + j]
                        for b in range(width):
                            sums[b] += w[b] * v
