"""Per-worker access to navigation graphs from inside DoFns."""

from __future__ import annotations

import apache_beam as beam

from transforms.worker_cache import per_worker
from vlnkit.navigation.graph import GraphStore


def worker_graph_store(connectivity_dir: str) -> GraphStore:
    """One GraphStore per connectivity folder per worker process, shared by every DoFn in it."""
    return per_worker("graphs", connectivity_dir, lambda: GraphStore(connectivity_dir))


class GraphDoFn(beam.DoFn):
    """A DoFn that reads navigation graphs through the worker's shared store (each scan loaded once)."""

    def __init__(self, connectivity_dir: str):
        super().__init__()
        self.connectivity_dir = connectivity_dir
        self.graphs: GraphStore | None = None

    def setup(self):
        self.graphs = worker_graph_store(self.connectivity_dir)
