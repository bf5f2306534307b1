"""The Poisson bootstrap weights in plain numpy: the definition the compiled kernel is tested against.

Row i, replicate b: `h = stable_hash_array(keys[i], b // 3, seed=seed)`, the uniform bits
`(h >> 21 * (b % 3)) & (2**21 - 1)`, and the Poisson(1) inverse CDF by `searchsorted` over the
cumulative probabilities (`vlnkit.comparison.resampling.POISSON_CDF`).
"""

from __future__ import annotations

import numpy as np

from vlnkit.comparison.resampling import PER_HASH, POISSON_CDF, UNIFORM_BITS
from vlnkit.hashing import stable_hash_array


def poisson_weights(keys: np.ndarray, replicates: int, seed: int = 0) -> np.ndarray:
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    hashes = -(-replicates // PER_HASH)
    h = stable_hash_array(np.repeat(keys, hashes), np.tile(np.arange(hashes, dtype=np.int64), len(keys)), seed=seed)
    shifts = np.uint64(UNIFORM_BITS) * np.arange(PER_HASH, dtype=np.uint64)
    bits = (h[:, None] >> shifts) & np.uint64((1 << UNIFORM_BITS) - 1)  # b = 3 g + j
    bits = bits.reshape(len(keys), hashes * PER_HASH)[:, :replicates]
    u = bits.astype(np.float64) * 2.0**-UNIFORM_BITS
    return np.searchsorted(POISSON_CDF, u, side="right").astype(np.uint8)
