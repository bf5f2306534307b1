"""A small synthetic world for the scoring core: two line-shaped scans and their vocabulary."""

from __future__ import annotations

import numpy as np
import pytest

from vlnkit.datasets.columns import Vocabulary
from vlnkit.navigation.graph import GraphStore, NavGraph


def line_scan(name: str, n: int) -> NavGraph:
    """Viewpoints <name>0 .. <name>{n-1} on a line, 1 m apart, each joined to the next."""
    positions = np.column_stack([np.arange(n, dtype=float), np.zeros(n), np.zeros(n)])
    edges = np.column_stack([np.arange(n - 1), np.arange(1, n)])
    return NavGraph(name, tuple(f"{name}{i}" for i in range(n)), positions, edges)


@pytest.fixture
def world():
    graphs = {"s": line_scan("s", 6), "t": line_scan("t", 4)}
    store = GraphStore("/nowhere", graphs)  # another scan name fails to load ("cannot read")
    vocab = Vocabulary(list(graphs), [list(g.viewpoints) for g in graphs.values()])
    return store, vocab
