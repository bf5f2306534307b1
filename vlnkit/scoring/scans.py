"""A worker's loaded scans as flat arrays: what the compiled scorer reads for pairs of many scans in one call.

The metric kernel scores a whole bucket at once, whatever scans its pairs belong to
(`vlnkit.evaluation.kernels.score_flat_pairs`), so every loaded scan's all-pairs distance matrix and
adjacency live in one growing flat array each, a scan at a fixed start (its slot). Viewpoint names of every
loaded scan form one Arrow array, so the scored paths of a bucket become strings in one `take`. Scans are
loaded through the worker's `GraphStore` the first time a bucket names them; the arrays grow by doubling,
so a worker copies each matrix at most about twice.

One `ScanTables` serves every thread of a worker (`per_worker`): a portable runner's SDK worker (Flink's)
runs bundles on several threads at once. Loading a scan and building the names array take a lock; a
thread that reads the arrays while another grows them reads either the old array or the new one, and
both hold every slot that existed when it looked the slot up.

    >>> import numpy as np
    >>> from vlnkit.navigation.graph import GraphStore, NavGraph
    >>> line = NavGraph("s", ("a", "b", "c"), np.arange(9.0).reshape(3, 3), np.array([[0, 1], [1, 2]]))
    >>> tables = ScanTables(GraphStore("", {"s": line}))
    >>> slot = tables.slot("s")
    >>> int(tables.sizes[slot]), tables.names(np.array([slot, slot]), np.array([2, 0])).to_pylist()
    (3, ['c', 'a'])
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

from vlnkit.counting import unique_ints


class ScanTables:
    """Distance matrices, adjacency and viewpoint names of the scans loaded so far, by slot."""

    def __init__(self, graphs):
        self.graphs = graphs
        self._slots: dict[str, int] = {}
        self.scans: list[str] = []
        self.starts = np.zeros(0, np.int64)  # slot -> start of its matrix in the flat arrays
        self.sizes = np.zeros(0, np.int64)  # slot -> number of viewpoints
        self.distances = np.zeros(1 << 16)
        self.adjacent = np.zeros(1 << 16, np.bool_)
        self._used = 0
        self._names: list[pa.Array] = []
        self._name_base = np.zeros(0, np.int64)  # slot -> its first name in `all_names`
        self._all_names: pa.Array | None = None
        self._lock = threading.Lock()

    def slot(self, scan: str) -> int:
        """The scan's slot, loading it the first time (GraphError when its graph cannot be used)."""
        found = self._slots.get(scan)  # set last, once the scan is in every array
        if found is not None:
            return found
        with self._lock:
            return self._load(scan)

    def _load(self, scan: str) -> int:
        found = self._slots.get(scan)  # another thread may have loaded it while this one waited
        if found is not None:
            return found
        graph = self.graphs.get(scan)
        n = len(graph)
        need = self._used + n * n
        if need > len(self.distances):
            size = max(need, 2 * len(self.distances))
            self.distances = np.concatenate([self.distances[: self._used], np.zeros(size - self._used)])
            self.adjacent = np.concatenate([self.adjacent[: self._used], np.zeros(size - self._used, np.bool_)])
        self.distances[self._used : need] = graph.distances.ravel()
        self.adjacent[self._used : need] = graph.adjacent.ravel()
        slot = len(self.scans)
        self.starts = np.append(self.starts, self._used)
        self.sizes = np.append(self.sizes, n)
        self._name_base = np.append(self._name_base, sum(len(a) for a in self._names))
        self._names.append(pa.array(graph.viewpoints, pa.string()))
        self._all_names = None
        self._used = need
        self.scans.append(scan)
        self._slots[scan] = slot
        return slot

    def vocabulary_bases(self, vocab) -> np.ndarray:
        """Per slot, the global number (`vlnkit.datasets.columns.Vocabulary`) of its scan's node 0 (a scan's
        viewpoints are numbered consecutively, in node order), or -1 when the vocabulary lacks the scan."""
        bases = np.full(len(self.scans), -1, np.int64)
        for slot, scan in enumerate(self.scans):
            scan_id = vocab.scan_ids.get(scan, -1)
            if scan_id >= 0:
                bases[slot] = int(np.searchsorted(vocab.scan_of, scan_id))
        return bases

    def slots(self, names: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Slots of many rows given as codes into `names` (scan names), each name present looked up once,
        in `names`' order; the rows' names come coded from the join, so no string is compared here."""
        present = unique_ints(codes)
        slot_of = np.full(len(names), -1, np.int64)
        slot_of[present] = [self.slot(s) for s in names[present].tolist()]
        return slot_of[codes]

    def names(self, slot_of_node: np.ndarray, nodes: np.ndarray) -> pa.Array:
        """Viewpoint ids of `nodes` (node indices of the scans in `slot_of_node`), in one Arrow take."""
        every = self._all_names
        if every is None:
            with self._lock:
                every = pa.concat_arrays(self._names) if self._names else pa.array([], pa.string())
                self._all_names = every
        return every.take(pa.array(self._name_base[slot_of_node] + nodes))
