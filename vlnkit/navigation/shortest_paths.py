"""All-pairs shortest-path distances of a navigation graph, compiled: Dijkstra from every node.

Why written here rather than taken from scipy (`scipy.sparse.csgraph.shortest_path`, which the graph still
uses where it needs predecessors): importing scipy's graph module costs a job about a third of a second,
every run, for a few milliseconds of work on graphs of a few hundred nodes, and the score job needs the
distances only. The distances are the same bits as scipy's: every implementation of Dijkstra with
non-negative weights computes d(v) = min over the nodes u settled before v of fl(d(u) + w(u, v)), and the
nodes settled before v are those closer than v whatever the order ties are broken in (a tie adds nothing
below d(v)); the tests compare the two on every Matterport scan and on random graphs with ties.

    >>> import numpy as np
    >>> d = all_pairs_distances(3, np.array([[0, 1], [1, 2]]), np.array([1.0, 2.0]))
    >>> d.tolist()
    [[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

from vlnkit.compiled import njit

__all__ = ["all_pairs_distances"]


def all_pairs_distances(n: int, edges: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(n, n) distances of an undirected graph with `edges` (m, 2) and non-negative `weights` (m,); inf where
    unreachable. A zero weight counts as the smallest positive float, as the graph's sparse matrix holds it."""
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    weights = np.asarray(weights, np.float64)
    weights = np.where(weights > 0, weights, np.finfo(np.float64).tiny)
    heads = np.concatenate([edges[:, 0], edges[:, 1]])
    tails = np.concatenate([edges[:, 1], edges[:, 0]])
    both = np.concatenate([weights, weights])
    order = np.argsort(heads, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(heads, minlength=n), out=indptr[1:])
    out = np.empty((n, n))
    _dijkstra_all(n, indptr, tails[order], both[order], out)
    return out


@njit(cache=True, nogil=True)
def _dijkstra_all(n, indptr, indices, weights, out):
    heap_d = np.empty(len(indices) + n)
    heap_v = np.empty(len(indices) + n, np.int64)
    done = np.zeros(n, np.bool_)
    for source in range(n):
        dist = out[source]
        dist[:] = np.inf
        done[:] = False
        dist[source] = 0.0
        size = 0
        heap_d[0], heap_v[0] = 0.0, source
        size = 1
        while size:
            d, u = heap_d[0], heap_v[0]
            size -= 1
            # pop: move the last item to the root and sift it down
            if size:
                x_d, x_v = heap_d[size], heap_v[size]
                i = 0
                while True:
                    c = 2 * i + 1
                    if c >= size:
                        break
                    if c + 1 < size and heap_d[c + 1] < heap_d[c]:
                        c += 1
                    if heap_d[c] < x_d:
                        heap_d[i], heap_v[i] = heap_d[c], heap_v[c]
                        i = c
                    else:
                        break
                heap_d[i], heap_v[i] = x_d, x_v
            if done[u] or d > dist[u]:
                continue
            done[u] = True
            for e in range(indptr[u], indptr[u + 1]):
                v = indices[e]
                nd = d + weights[e]
                if nd < dist[v]:
                    dist[v] = nd
                    i = size  # push: sift up
                    size += 1
                    while i:
                        p = (i - 1) // 2
                        if heap_d[p] > nd:
                            heap_d[i], heap_v[i] = heap_d[p], heap_v[p]
                            i = p
                        else:
                            break
                    heap_d[i], heap_v[i] = nd, v
