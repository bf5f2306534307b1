"""Compiled (numba) kernels of the Poisson bootstrap: weights from hashes, and exact weighted sums.

Why compiled: the bootstrap multiplies every episode's values by B (1,000) weights. In numpy that
is a float64 matrix product per block of episodes, after converting the uint8 weights to float64
and gathering them per agent and per breakdown group; the conversions and copies cost as much as the
arithmetic, and the score job takes 5x its time without the bootstrap. Here one pass over the rows
adds `weight * limb` into per-(cell, column) accumulators, reading each weight as a byte, four rows
per accumulator update and skipping columns whose four limbs are zero (a value below 1,024 has one
non-zero limb of two), with one cell's accumulators (rows come sorted by cell) for up to `TILE`
replicates in the CPU cache. A cell is one combination of agent and breakdown groups: its sums move
into the agent's and every group's totals when the cell ends, so the breakdowns cost no pass of their
own.

Exactness (why float64 accumulators give integer-exact sums): limbs are integers below 2**36
(`vlnkit.comparison.replicates`), weights at most 31, so one product is below 2**41, and a tile's
accumulators take at most `CHUNK_ROWS` products before they are moved into int64 totals:
4,096 * 31 * 2**36 < 2**53. Integer sums do not depend on the order they are added in,
so the results are the same bits for any row order, chunking or partitioning.

The weight of episode key k in replicate b is the one `vlnkit.comparison.resampling` defines:
`h = stable_hash(k, b // 3, seed=seed)`, computed with the splitmix64 steps of
`vlnkit.hashing.stable_hash_array`; three 21-bit uniforms per hash; the Poisson(1) inverse CDF as
the number of integer thresholds ceil(P(X <= j) * 2**21) at or below the uniform's bits (a sum of
comparisons rather than a search, so no branch depends on the random draw). Where each episode is one
row (one agent), the sums kernel makes a row's weights itself, tile by tile, from the row's key: hashing
is half of what it costs (a 28,000-row bucket: about 15 ms for the weights, 15 ms for the sums, one thread),
and a weights matrix written and gathered back cost another 5%. Where several rows share an episode (agents),
the weights are made once per episode into a matrix the sums kernel reads, since hashing once per row
would cost more than the matrix saves.
"""

from __future__ import annotations

import numpy as np

from vlnkit.compiled import njit
from vlnkit.hashing import GOLDEN, TAG_INT

# Replicates per accumulator tile: a cell's columns x 504 float64 and four weight rows stay in L2. A multiple
# of 3 (a hash serves three replicates, so a tile computing its own weights starts at a hash) and of 8.
TILE = 504
SPLIT = 24  # replicate ranges of threads are cut at multiples of this: a hash's three, an int64 cache line's 8
THRESHOLDS = 9  # thresholds a 21-bit uniform can reach: Poisson(1) weights are at most 9
# Bits of a uniform, three per 64-bit hash (`vlnkit.comparison.resampling` checks this is its UNIFORM_BITS):
# a constant, so the compiler sees the cut of each uniform and keeps the comparisons in 32-bit lanes (with
# the bits as an argument the pass ran 30% slower, in 64-bit lanes).
UNIFORM_BITS = 21
CHUNK_ROWS = 1 << 12  # rows per tile pass: 4,096 x 31 x 2**36 < 2**53, so float64 sums stay exact
_GOLDEN = np.uint64(GOLDEN)
_TAG_INT = np.uint64(TAG_INT)


@njit(cache=True, inline="always")
def _mix(z):  # splitmix64's finaliser, as vlnkit.hashing._mix_array
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _key_weights(key, start, group_hashes, g0, hashes, thresholds, halves, counts):
    """The weights of `key` in the replicates of hashes g0..g0+hashes-1, as int32 in hash-major planes:
    counts[j * hashes + g] is replicate 3 * (g0 + g) + j's. `start` is the seed's hash state,
    `group_hashes[g]` the hash of the integer g (one per three replicates), `thresholds` the `THRESHOLDS`
    integer inverse-CDF thresholds of the `UNIFORM_BITS`-bit uniforms; `halves` (2, hashes) uint32 scratch.

    Two passes, each of one lane width so the compiler vectorizes both: the 64-bit hashes, kept as their
    32-bit halves; then, in 32-bit lanes, the three uniforms of each hash (bits 0-20, 21-41, 42-62: the
    middle one across the halves) each compared with every threshold, so a weight is a sum of
    comparisons with no branch on the draw. The planes are what makes the second pass vectorize: with the
    uniforms interleaved in replicate order (3 g + j), the cutting and comparing took 40% longer.
    """
    mask = np.uint32((1 << UNIFORM_BITS) - 1)
    shift, across, third_shift = np.uint32(UNIFORM_BITS), np.uint32(32 - UNIFORM_BITS), np.uint32(2 * UNIFORM_BITS - 32)
    # The nine thresholds held in registers (`THRESHOLDS`): one pass over the uniforms compares each
    # with all nine, where a pass per threshold loaded and stored every count nine times (a third slower).
    l0, l1, l2 = np.int32(thresholds[0]), np.int32(thresholds[1]), np.int32(thresholds[2])
    l3, l4, l5 = np.int32(thresholds[3]), np.int32(thresholds[4]), np.int32(thresholds[5])
    l6, l7, l8 = np.int32(thresholds[6]), np.int32(thresholds[7]), np.int32(thresholds[8])
    state = _mix(start * _GOLDEN + _mix(key ^ _TAG_INT))
    low, high = halves[0], halves[1]
    # The tile's group hashes as a slice indexed from 0: indexed at g0 + g (an index that might be negative,
    # for all the compiler knows) they were gathered one by one, a tenth of the sums pass.
    mine, base = group_hashes[g0 : g0 + hashes], state * _GOLDEN
    for g in range(hashes):
        h = _mix(base + mine[g])
        low[g] = np.uint32(h & np.uint64(0xFFFFFFFF))
        high[g] = np.uint32(h >> np.uint64(32))
    first, second, third = counts[:hashes], counts[hashes : 2 * hashes], counts[2 * hashes : 3 * hashes]
    for g in range(hashes):
        lo, hi = low[g], high[g]
        first[g] = _weight(np.int32(lo & mask), l0, l1, l2, l3, l4, l5, l6, l7, l8)
        middle = (lo >> shift) | ((hi << across) & mask)  # its low bits in lo, the rest in hi
        second[g] = _weight(np.int32(middle), l0, l1, l2, l3, l4, l5, l6, l7, l8)
        third[g] = _weight(np.int32((hi >> third_shift) & mask), l0, l1, l2, l3, l4, l5, l6, l7, l8)


@njit(cache=True, nogil=True, inline="always")
def _weight(u, l0, l1, l2, l3, l4, l5, l6, l7, l8):
    """The Poisson(1) weight at uniform bits u: how many of the thresholds l0..l8 are at or below u."""
    low = np.int32(u >= l0) + np.int32(u >= l1) + np.int32(u >= l2)
    mid = np.int32(u >= l3) + np.int32(u >= l4) + np.int32(u >= l5)
    return low + mid + (np.int32(u >= l6) + np.int32(u >= l7) + np.int32(u >= l8))


@njit(cache=True, nogil=True)
def poisson_weight_rows(keys, first, stop, start, group_hashes, thresholds, out):
    """Rows first..stop-1 of the (len(keys), B) uint8 weights `out` (`_key_weights` of each key, put
    back in replicate order)."""
    replicates = out.shape[1]
    hashes = len(group_hashes)
    halves = np.empty((2, hashes), np.uint32)
    counts = np.empty(3 * hashes, np.int32)
    for i in range(first, stop):
        _key_weights(keys[i], start, group_hashes, 0, hashes, thresholds, halves, counts)
        row = out[i]  # narrowed in a pass of its own: narrowing inside the comparisons' loop is slower
        whole = replicates // 3
        for g in range(whole):  # back in replicate order
            row[3 * g] = np.uint8(counts[g])
            row[3 * g + 1] = np.uint8(counts[hashes + g])
            row[3 * g + 2] = np.uint8(counts[2 * hashes + g])
        for j in range(replicates - 3 * whole):
            row[3 * whole + j] = np.uint8(counts[j * hashes + whole])


@njit(cache=True, nogil=True, inline="always")
def _number(data, first, stop):
    """The value of data[first:stop] as `0|[1-9][0-9]{0,17}` (ASCII digits), or -1."""
    width = stop - first
    if width < 1 or width > 18 or (data[first] == 48 and width > 1):
        return -1
    value = 0
    for j in range(first, stop):
        digit = data[j] - 48
        if digit < 0 or digit > 9:
            return -1
        value = value * 10 + digit
    return value


THREE_PARTS = 1 << 62  # marks a REVERIE id's k in `canonical_id_parts`


@njit(cache=True, nogil=True)
def canonical_id_parts(offsets, data, first, n, path_ids, ks):
    """For Arrow strings first..first+n-1 (offsets, UTF-8 bytes): path_ids[i], ks[i] of an id
    `<path_id>_<k>` (two integers of at most 18 digits, no sign, no leading zero), or -1 and -1.
    A REVERIE id `<path_id>_<objId>_<k>` (path_id < 2**31, objId < 2**32) gives path_ids[i] =
    path_id << 32 | objId (`vlnkit.datasets.reverie.pack_keys`: its record, the unit of one target) and
    ks[i] = k | THREE_PARTS, the bit that tells it from a two-part id (k < 10**18 < 2**60).
    One pass over the bytes: the regular expression in Arrow cost 0.2 s per million ids, a tenth of
    the score job's bootstrap."""
    for i in range(n):
        start, stop = offsets[first + i], offsets[first + i + 1]
        path_ids[i] = -1
        ks[i] = -1
        for j in range(start, stop):
            if data[j] == 95:  # the first "_"
                second = -1
                for m in range(j + 1, stop):
                    if data[m] == 95:
                        second = m
                        break
                if second < 0:
                    p, k = _number(data, start, j), _number(data, j + 1, stop)
                    if p >= 0 and k >= 0:
                        path_ids[i] = p
                        ks[i] = k
                else:
                    p, o, k = _number(data, start, j), _number(data, j + 1, second), _number(data, second + 1, stop)
                    if 0 <= p < (1 << 31) and 0 <= o < (1 << 32) and k >= 0:
                        path_ids[i] = (p << 32) | o
                        ks[i] = k | THREE_PARTS
                break


@njit(cache=True, nogil=True)
def grid_limbs(values, scale, limb_bits, limit, out, missing):
    """out[i] = the two limbs of rint(values[i] * scale) (round half to even: an exact power-of-two
    scale, then IEEE rounding), low in [0, 2**limb_bits), high signed; a non-finite value gets 0 and
    missing[i] = 1. Returns the index of the first value at or above `limit` in magnitude, -1 if none."""
    mask = np.int64((1 << limb_bits) - 1)
    for i in range(len(values)):
        v = values[i]
        if not np.isfinite(v):
            out[i, 0] = 0.0
            out[i, 1] = 0.0
            missing[i] = 1.0
            continue
        if abs(v) >= limit:
            return i
        whole = np.int64(np.rint(v * scale))
        out[i, 0] = whole & mask
        out[i, 1] = whole >> limb_bits
        missing[i] = 0.0
    return -1


@njit(cache=True, nogil=True)
def value_columns(values, rows, scale, limb_bits, limit, out):
    """`grid_limbs` of M metrics at once, laid out as `cell_limb_sums` reads them: values (M, n); row i of
    out (len(rows), 1 + 3 M) is value row rows[i] (the caller's order: rows sorted by cell), with 1, then
    per metric 1 where the value is not finite (else 0), then per metric its two limbs (0 where not
    finite). Row by row, so each row's cache lines are written once (a pass per metric wrote every line of
    `out` once per metric), and the values are gathered here rather than copied in order first (thirteen
    numpy gathers cost twice this pass). Returns the first i whose value is at or above `limit` in
    magnitude (-1 if none); the caller names the value."""
    metrics = values.shape[0]
    mask = np.int64((1 << limb_bits) - 1)
    for i in range(len(rows)):
        r = rows[i]
        out[i, 0] = 1.0
        for m in range(metrics):
            v = values[m, r]
            low = 1 + metrics + 2 * m
            if not np.isfinite(v):
                out[i, 1 + m] = 1.0
                out[i, low] = 0.0
                out[i, low + 1] = 0.0
                continue
            if abs(v) >= limit:
                return i
            whole = np.int64(np.rint(v * scale))
            out[i, 1 + m] = 0.0
            out[i, low] = whole & mask
            out[i, low + 1] = whole >> limb_bits
    return -1


@njit(cache=True, nogil=True, inline="always")
def _tile_weights(hashing, r, g0, hashes, halves, counts, w):
    """w[0 : 3 * hashes] = row r's weights (float64) of the tile's hashes g0.., in `_key_weights`' planes."""
    keys, start, group_hashes, thresholds = hashing
    _key_weights(keys[r], start, group_hashes, g0, hashes, thresholds, halves, counts)
    for b in range(3 * hashes):  # int32 to float64 in a pass of its own: inside the comparisons, 2.4x slower
        w[b] = counts[b]


# contract: a product and its sum may be one fused multiply-add; every product and partial sum is an
# integer below 2**53 (see the module docstring), so fused or not the bits are the same.
@njit(cache=True, nogil=True, fastmath={"contract"})
def cell_limb_sums(weights, episode, hashing, cell, values, targets, row_of, out, first, stop):
    """Exact sums of weight * value per (target, column) for replicates first..stop-1, added into `out`.

    The weights: either `weights` (E, B) uint8 with `episode` (n,) row -> weight row, or (when `hashing`
    = (keys, start, group_hashes, thresholds) holds a key per row) row r's weights are `_key_weights`
    of keys[r], made tile by tile as the rows are summed (`first` a multiple of 3), so no weights
    matrix is written and read back; the tile's accumulators then hold the replicates in the planes of
    `_key_weights` (3 g + j at j * hashes + g) and are put back in order as they move into `out`. (One
    branch per four rows decides: numba does not prune a branch on `weights is None` here, so both kinds
    of call pass arrays of the same types.)
    cell (n,) row -> its cell (rows sorted by
    cell); values (n, C) float64, integers below 2**36 in magnitude (`vlnkit.comparison.replicates`
    lays out the columns); targets (cells, D) the targets every row of a cell counts in (-1: none);
    row_of (T, C): the row of `out` (R, B) int64 that holds column c of target t (-1: not kept).
    A cell's rows are summed once, then moved into each of its targets (an agent and its group in
    every breakdown), so one pass serves every breakdown. Rows go four at a time: one load and store
    of an accumulator per four products; and the columns they add to go two at a time, so four weights
    loaded serve eight products (loads, not arithmetic, bound the pass: with the fused multiply-adds this
    is about an eighth faster than a column per pass). Calls on disjoint replicate ranges write disjoint
    parts of `out`, so threads can share it (the kernel releases the GIL).
    """
    n, columns = values.shape
    acc = np.zeros((columns, TILE))
    w0 = np.zeros(TILE)
    w1 = np.zeros(TILE)
    w2 = np.zeros(TILE)
    w3 = np.zeros(TILE)
    touched = np.zeros(columns, np.bool_)  # the columns the current cell added to
    keyed = len(hashing[0]) == n and n > 0  # weights made from each row's key
    halves = np.empty((2, TILE // 3), np.uint32)  # a row's hashes and weights of one tile (keyed)
    counts = np.empty(TILE, np.int32)
    active = np.zeros(columns, np.int64)  # the columns four rows add to, in order
    for t0 in range(first, stop, TILE):
        width = min(TILE, stop - t0)
        g0, hashes = t0 // 3, (width + 2) // 3  # the tile's hashes (t0 is a multiple of 3)
        span = 3 * hashes if keyed else width  # the accumulators in use (keyed: the planes, padded)
        r = 0
        while r < n:
            here = cell[r]
            end = r
            while end < n and cell[end] == here and end - r < CHUNK_ROWS:  # exact below 2**53
                end += 1
            q = r
            while q + 4 <= end:
                if keyed:
                    _tile_weights(hashing, q, g0, hashes, halves, counts, w0)
                    _tile_weights(hashing, q + 1, g0, hashes, halves, counts, w1)
                    _tile_weights(hashing, q + 2, g0, hashes, halves, counts, w2)
                    _tile_weights(hashing, q + 3, g0, hashes, halves, counts, w3)
                else:
                    # The tile's weights as slices first: indexed from 0, the conversion loop vectorizes
                    # (indexed at t0 + b it is converted one weight at a time, half the kernel's time).
                    a0 = weights[episode[q]][t0 : t0 + width]
                    a1 = weights[episode[q + 1]][t0 : t0 + width]
                    a2 = weights[episode[q + 2]][t0 : t0 + width]
                    a3 = weights[episode[q + 3]][t0 : t0 + width]
                    for b in range(width):
                        w0[b] = a0[b]
                        w1[b] = a1[b]
                        w2[b] = a2[b]
                        w3[b] = a3[b]
                k = 0  # the columns these four rows add to (others are zero in all four)
                for c in range(columns):
                    if (
                        values[q, c] != 0.0
                        or values[q + 1, c] != 0.0
                        or values[q + 2, c] != 0.0
                        or values[q + 3, c] != 0.0
                    ):
                        touched[c] = True
                        active[k] = c
                        k += 1
                j = 0
                while j + 2 <= k:  # two columns per pass: each weight load serves both
                    c, d = active[j], active[j + 1]
                    v0, v1, v2, v3 = values[q, c], values[q + 1, c], values[q + 2, c], values[q + 3, c]
                    x0, x1, x2, x3 = values[q, d], values[q + 1, d], values[q + 2, d], values[q + 3, d]
                    sums, more = acc[c], acc[d]
                    for b in range(span):
                        p0, p1, p2, p3 = w0[b], w1[b], w2[b], w3[b]
                        sums[b] += (p0 * v0 + p1 * v1) + (p2 * v2 + p3 * v3)
                        more[b] += (p0 * x0 + p1 * x1) + (p2 * x2 + p3 * x3)
                    j += 2
                if j < k:
                    c = active[j]
                    v0, v1, v2, v3 = values[q, c], values[q + 1, c], values[q + 2, c], values[q + 3, c]
                    sums = acc[c]
                    for b in range(span):
                        sums[b] += (w0[b] * v0 + w1[b] * v1) + (w2[b] * v2 + w3[b] * v3)
                q += 4
            while q < end:
                if keyed:
                    _tile_weights(hashing, q, g0, hashes, halves, counts, w0)
                else:
                    a0 = weights[episode[q]][t0 : t0 + width]
                    for b in range(width):
                        w0[b] = a0[b]
                for c in range(columns):
                    v0 = values[q, c]
                    if v0 != 0.0:
                        touched[c] = True
                        sums = acc[c]
                        for b in range(span):
                            sums[b] += w0[b] * v0
                q += 1
            # Only the columns this cell added to move and are cleared (the others are all zero).
            for d in range(targets.shape[1]):
                t = targets[here, d]
                if t >= 0:
                    for c in range(columns):
                        k = row_of[t, c]
                        if k >= 0 and touched[c]:
                            mine = out[k][t0 : t0 + width]
                            sums = acc[c]
                            if keyed:  # replicate 3 g + j from plane j
                                for j in range(3):
                                    plane = sums[j * hashes : (j + 1) * hashes]
                                    for g in range((width - j + 2) // 3):
                                        mine[3 * g + j] += np.int64(plane[g])
                            else:
                                for b in range(width):
                                    mine[b] += np.int64(sums[b])
            for c in range(columns):
                if touched[c]:
                    sums = acc[c]
                    for b in range(span):
                        sums[b] = 0.0
                    touched[c] = False
            r = end
