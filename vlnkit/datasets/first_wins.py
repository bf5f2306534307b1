"""The one rule for records that share a key: the first file (its rank among the files given), then the
first record in it (its index), wins.

The graph score job applies it to dataset paths and to an agent's predictions of one episode
(`vlnkit.scoring.join`), the continuous one to episodes and to an agent's results
(`vlnkit.continuous.buckets`); each words its own dead letter for the records it drops.

    >>> import numpy as np
    >>> order, first, kept = first_of_each(np.array([7, 5, 7, 7]), np.array([1, 0, 0, 0]), np.array([0, 0, 3, 1]))
    >>> order.tolist(), first.tolist(), kept.tolist()
    ([1, 3, 2, 0], [True, True, False, False], [1, 3, 3, 3])
"""

from __future__ import annotations

import numpy as np

__all__ = ["first_of_each"]


def first_of_each(keys: np.ndarray, rank: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows sorted by (key, file rank, record index): (that order, whether each row in it is its key's
    first, and the row kept for each row's key in that order). One sort for any number of rows, no
    Python loop."""
    order = np.lexsort((index, rank, keys))
    k = keys[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = k[1:] != k[:-1]
    kept = order[np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))] if len(order) else order
    return order, first, kept
