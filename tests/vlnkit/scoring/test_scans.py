"""One worker's ScanTables used by many threads at once, as a Flink SDK worker runs bundles on several
threads: every scan lands in one slot, and every slot holds its own scan's matrix and names.

Without the lock, a thread that found the arrays long enough while another was growing them wrote past
the new adjacency array ("could not broadcast input array from shape (400,) into shape (0,)", seen on
the Flink cluster at 1M predictions).
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from vlnkit.navigation.graph import GraphStore, NavGraph
from vlnkit.scoring.scans import ScanTables


def _graph(i: int) -> NavGraph:
    n = 3 + i % 17  # sizes that make the flat arrays grow many times
    names = tuple(f"s{i}v{j}" for j in range(n))
    positions = np.random.default_rng(i).uniform(-10, 10, (n, 3))
    return NavGraph(f"s{i}", names, positions, np.array([[j, j + 1] for j in range(n - 1)]))


def test_threads_loading_scans_at_once_each_get_their_own_slot_and_matrix():
    graphs = {f"s{i}": _graph(i) for i in range(400)}
    tables = ScanTables(GraphStore("", graphs))
    tables.distances, tables.adjacent = np.zeros(16), np.zeros(16, np.bool_)  # grow from tiny arrays
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def load(offset: int) -> None:
        try:
            barrier.wait()
            for i in range(offset, offset + 400):
                tables.slots(np.array([f"s{i % 400}"]), np.zeros(1, np.int64))
        except BaseException as exc:  # noqa: BLE001 -- reported by the assertion below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        threads = [threading.Thread(target=load, args=(k * 50,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert sorted(tables.scans) == sorted(graphs) and len(set(tables.scans)) == 400
    for scan, graph in graphs.items():
        slot = tables.slot(scan)
        start, n = int(tables.starts[slot]), int(tables.sizes[slot])
        assert n == len(graph)
        np.testing.assert_array_equal(tables.distances[start : start + n * n], graph.distances.ravel())
        np.testing.assert_array_equal(tables.adjacent[start : start + n * n], graph.adjacent.ravel())
        names = tables.names(np.full(n, slot), np.arange(n)).to_pylist()
        assert names == list(graph.viewpoints)


def test_slots_of_coded_rows_load_only_the_names_present():
    """Rows coded into sorted names get their scans' slots, loaded in the names' order; a name no row
    uses is not loaded (its graph may be the one that fails)."""
    tables = ScanTables(GraphStore("", {"a": _graph(1), "c": _graph(3)}))
    names = np.array(["a", "b_broken", "c"])
    assert tables.slots(names, np.array([2, 0, 2, 2], np.int64)).tolist() == [1, 0, 1, 1]
    assert tables.scans == ["a", "c"]
    assert tables.slots(names, np.zeros(0, np.int64)).tolist() == []
