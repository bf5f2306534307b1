"""Per-worker access to navigation graphs from inside DoFns."""

from __future__ import annotations

import threading

import apache_beam as beam

from vlnkit.navigation.graph import GraphStore

_STORES: dict[str, GraphStore] = {}
_LOCK = threading.Lock()


def worker_graph_store(connectivity_dir: str) -> GraphStore:
    """One GraphStore per connectivity folder per worker process, shared by every DoFn in it."""
    with _LOCK:
        store = _STORES.get(connectivity_dir)
        if store is None:
            store = _STORES[connectivity_dir] = GraphStore(connectivity_dir)
        return store


class GraphDoFn(beam.DoFn):
    """A DoFn that reads navigation graphs through the worker's shared store (each scan loaded once)."""

    def __init__(self, connectivity_dir: str):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.graphs: GraphStore | None = None

    def setup(self):
        self.graphs = worker_graph_store(self.connectivity_dir)
