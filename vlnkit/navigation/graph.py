"""Navigation graphs of Matterport3D scans, with all-pairs shortest distances and paths.

A scan has at most a few hundred included viewpoints, so its whole distance matrix and
predecessor matrix are computed once (scipy's vectorized Dijkstra) and then every query
is an array lookup. Load a graph once per worker and reuse it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path as _csgraph_shortest_path

from vlnkit.io import fileio

CONNECTIVITY_SUFFIX = "_connectivity.json"


class GraphError(ValueError):
    """A connectivity file is missing or malformed, or a query names an unknown viewpoint."""


def connectivity_path(connectivity_dir: str, scan: str) -> str:
    return fileio.join(connectivity_dir, f"{scan}{CONNECTIVITY_SUFFIX}")


@dataclass(frozen=True, eq=False)
class NavGraph:
    """The navigable graph of one scan: included viewpoints, unobstructed edges, 3D euclidean weights."""

    scan: str
    viewpoints: tuple[str, ...]
    positions: np.ndarray  # (n, 3) pose translations, metres
    edges: np.ndarray  # (m, 2) index pairs i < j, each undirected edge once
    source: str = ""
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {v: i for i, v in enumerate(self.viewpoints)})
        object.__setattr__(self, "_path_cache", {})

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_connectivity(cls, scan: str, entries: list, source: str = "") -> NavGraph:
        """Build from the parsed JSON list of a `<scan>_connectivity.json` file."""
        where = source or f"connectivity of {scan}"
        if not isinstance(entries, list) or not entries:
            raise GraphError(f"{where}: expected a non-empty JSON list of viewpoints")
        n_all = len(entries)
        ids, poses, included, unobstructed = [], [], [], []
        for k, entry in enumerate(entries):
            try:
                ids.append(str(entry["image_id"]))
                pose = entry["pose"]
                if len(pose) != 16:
                    raise GraphError(f"{where}: viewpoint #{k} pose has {len(pose)} values, expected 16")
                poses.append((float(pose[3]), float(pose[7]), float(pose[11])))
                included.append(bool(entry["included"]))
                row = entry["unobstructed"]
                if len(row) != n_all:
                    raise GraphError(f"{where}: viewpoint #{k} 'unobstructed' has {len(row)} entries, expected {n_all}")
                unobstructed.append(row)
            except GraphError:
                raise
            except (KeyError, TypeError, ValueError) as exc:
                raise GraphError(f"{where}: viewpoint #{k} is malformed ({type(exc).__name__}: {exc})") from exc
        keep = np.flatnonzero(np.asarray(included, dtype=bool))
        matrix = np.asarray(unobstructed, dtype=bool)[np.ix_(keep, keep)]
        matrix = matrix | matrix.T  # an edge exists if either direction says so
        np.fill_diagonal(matrix, False)
        i, j = np.nonzero(np.triu(matrix, k=1))
        viewpoints = tuple(ids[k] for k in keep)
        if len(set(viewpoints)) != len(viewpoints):
            raise GraphError(f"{where}: duplicate image_id among included viewpoints")
        return cls(
            scan=scan,
            viewpoints=viewpoints,
            positions=np.asarray(poses, dtype=np.float64)[keep].reshape(-1, 3),
            edges=np.stack([i, j], axis=1).astype(np.int64),
            source=source,
        )

    @classmethod
    def load(cls, connectivity_dir: str, scan: str) -> NavGraph:
        """Load `<connectivity_dir>/<scan>_connectivity.json` (local path or any Beam filesystem)."""
        path = connectivity_path(connectivity_dir, scan)
        try:
            raw = fileio.read_bytes(path)
        except Exception as exc:  # OSError locally; Beam filesystems raise their own error types
            detail = getattr(exc, "strerror", None) or exc
            raise GraphError(f"{path}: cannot read connectivity file for scan {scan!r} ({detail})") from exc
        try:
            entries = json.loads(raw)
        except ValueError as exc:
            raise GraphError(f"{path}: not valid JSON ({exc})") from exc
        return cls.from_connectivity(scan, entries, source=path)

    # ----------------------------------------------------------------- derived arrays
    def __len__(self) -> int:
        return len(self.viewpoints)

    @cached_property
    def edge_weights(self) -> np.ndarray:
        diff = self.positions[self.edges[:, 0]] - self.positions[self.edges[:, 1]]
        return np.sqrt(np.einsum("ij,ij->i", diff, diff))

    @cached_property
    def adjacency(self) -> csr_matrix:
        n = len(self)
        rows = np.concatenate([self.edges[:, 0], self.edges[:, 1]])
        cols = np.concatenate([self.edges[:, 1], self.edges[:, 0]])
        weights = np.concatenate([self.edge_weights, self.edge_weights])
        # Two viewpoints at the same position would give a zero weight, which a sparse
        # matrix cannot hold as an edge; the smallest positive float keeps it an edge.
        weights = np.where(weights > 0, weights, np.finfo(np.float64).tiny)
        return csr_matrix((weights, (rows, cols)), shape=(n, n))

    @cached_property
    def _all_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        dist, pred = _csgraph_shortest_path(self.adjacency, method="D", directed=False, return_predecessors=True)
        return dist, pred

    @property
    def distances(self) -> np.ndarray:
        """(n, n) shortest-path distances in metres; `inf` where unreachable."""
        return self._all_pairs[0]

    @property
    def predecessors(self) -> np.ndarray:
        """(n, n) predecessor matrix from scipy (-9999 where there is none)."""
        return self._all_pairs[1]

    @cached_property
    def neighbours(self) -> tuple[np.ndarray, ...]:
        adj = self.adjacency
        return tuple(np.sort(adj.indices[adj.indptr[k] : adj.indptr[k + 1]]) for k in range(len(self)))

    # ----------------------------------------------------------------- queries
    def idx(self, viewpoint: str) -> int:
        try:
            return self.index[viewpoint]
        except KeyError:
            raise GraphError(f"viewpoint {viewpoint!r} is not an included viewpoint of scan {self.scan!r}") from None

    def indices(self, viewpoints) -> np.ndarray:
        return np.fromiter((self.idx(v) for v in viewpoints), dtype=np.int64)

    def distance(self, u: str, v: str) -> float:
        return float(self.distances[self.idx(u), self.idx(v)])

    def shortest_path_indices(self, i: int, j: int) -> list[int]:
        """Node indices from i to j, both ends included; raises GraphError when unreachable."""
        if i == j:
            return [i]
        pred = self.predecessors[i]
        if pred[j] < 0:
            raise GraphError(f"scan {self.scan!r}: {self.viewpoints[j]!r} is unreachable from {self.viewpoints[i]!r}")
        out = [j]
        while out[-1] != i:
            out.append(int(pred[out[-1]]))
        out.reverse()
        return out

    def shortest_path(self, u: str, v: str) -> list[str]:
        """Viewpoint ids from u to v (a new list; reconstructions are cached per pair)."""
        key = (self.idx(u), self.idx(v))
        path = self._path_cache.get(key)
        if path is None:
            path = self._path_cache[key] = tuple(self.viewpoints[k] for k in self.shortest_path_indices(*key))
        return list(path)

    def within(self, viewpoint: str, radius: float) -> list[str]:
        """Viewpoints whose shortest-path distance from `viewpoint` is at most `radius` (itself included)."""
        row = self.distances[self.idx(viewpoint)]
        return [self.viewpoints[k] for k in np.flatnonzero(row <= radius)]

    def is_edge(self, u: str, v: str) -> bool:
        j = self.idx(v)
        nb = self.neighbours[self.idx(u)]
        k = np.searchsorted(nb, j)
        return bool(k < len(nb) and nb[k] == j)

    def path_length(self, path) -> float:
        """Sum of shortest-path distances between consecutive viewpoints (edge weights for a walk)."""
        idx = self.indices(path)
        if len(idx) < 2:
            return 0.0
        return float(self.distances[idx[:-1], idx[1:]].sum())

    def heading_of_step(self, u: str, v: str) -> float:
        """Simulator heading of travel from u to v: radians clockwise from +y, in [0, 2*pi)."""
        d = self.positions[self.idx(v)] - self.positions[self.idx(u)]
        return simulator_heading(float(d[0]), float(d[1]))


def simulator_heading(dx: float, dy: float) -> float:
    """Heading of a horizontal displacement in the simulator's convention: atan2(dx, dy) in [0, 2*pi)."""
    return math.atan2(dx, dy) % (2 * math.pi)


def angle_difference(a: float, b: float) -> float:
    """Absolute difference of two angles in radians, wrapped to [0, pi]."""
    d = math.fmod(abs(a - b), 2 * math.pi)
    return 2 * math.pi - d if d > math.pi else d


def list_scans(connectivity_dir: str) -> list[str]:
    """Scans that have a connectivity file in the directory (local or any Beam filesystem)."""
    pattern = fileio.join(connectivity_dir, "*" + CONNECTIVITY_SUFFIX)
    return sorted(os.path.basename(p)[: -len(CONNECTIVITY_SUFFIX)] for p, _ in fileio.match(pattern))


class GraphStore:
    """Loads each scan's graph once and keeps it: one store per worker (create it in `DoFn.setup`).

    Failures are remembered too, so a missing file is reported once per worker per scan,
    not re-read for every record.
    """

    def __init__(self, connectivity_dir: str, graphs: dict[str, NavGraph] | None = None):
        self.connectivity_dir = connectivity_dir
        self._graphs: dict[str, NavGraph] = dict(graphs or {})
        self._errors: dict[str, GraphError] = {}

    def get(self, scan: str) -> NavGraph:
        graph = self._graphs.get(scan)
        if graph is not None:
            return graph
        if scan in self._errors:
            raise self._errors[scan]
        if not isinstance(scan, str) or not scan or "/" in scan or "\\" in scan:
            err = GraphError(f"invalid scan id {scan!r}")
            self._errors[str(scan)] = err
            raise err
        try:
            graph = NavGraph.load(self.connectivity_dir, scan)
            graph.distances  # noqa: B018  -- compute all-pairs once, at load time
        except GraphError as exc:
            self._errors[scan] = exc
            raise
        self._graphs[scan] = graph
        return graph
