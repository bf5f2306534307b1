"""Per-worker access to navigation graphs from inside DoFns."""

from __future__ import annotations

from dataclasses import dataclass

import apache_beam as beam

from transforms.worker_cache import per_worker
from vlnkit.navigation.graph import GraphStore


def worker_graph_store(connectivity_dir: str) -> GraphStore:
    """One GraphStore per connectivity folder per worker process, shared by every DoFn in it."""
    return per_worker("graphs", connectivity_dir, lambda: GraphStore(connectivity_dir))


@dataclass
class GraphDoFn(beam.DoFn):
    """A DoFn that reads navigation graphs through the worker's shared store (each scan loaded once).

    A subclass adds its own parameters as dataclass fields, after `connectivity_dir`."""

    connectivity_dir: str
    graphs = None  # the worker's GraphStore, set in `setup` (per worker, not a parameter)

    def setup(self):
        self.graphs = worker_graph_store(self.connectivity_dir)
