"""Navigation graphs of Matterport3D scans, with all-pairs shortest distances and paths.

A scan has at most a few hundred included viewpoints, so its whole distance matrix and
predecessor matrix are computed once (scipy's vectorized Dijkstra) and then every query
is an array lookup. Load a graph once per worker and reuse it.

This module is a little over 400 lines because strict validation of connectivity files
(`validate_connectivity`) belongs with the one constructor that reads them: a graph that exists
has passed it, whoever built it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from vlnkit.io import fileio, inputs
from vlnkit.io.json_text import loads_exact

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

CONNECTIVITY_SUFFIX = "_connectivity.json"


class GraphError(ValueError):
    """A connectivity file is missing or malformed, or a query names an unknown viewpoint."""


def connectivity_path(connectivity_dir: str, scan: str) -> str:
    return fileio.join(connectivity_dir, f"{scan}{CONNECTIVITY_SUFFIX}")


POSE_LENGTH = 16
REQUIRED_FIELDS = ("image_id", "pose", "included", "unobstructed")


def _finite_number(x) -> bool:
    """A JSON number that is a finite float: not a bool, not a string, not NaN/Infinity, not a 400-digit int."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an int too large for a float
        return False


_NUMBER_TYPES = {int, float}  # exact JSON number types: bool is a subclass of int and is excluded


def _raise_bad_pose(where: str, label: str, pose: list) -> None:
    """Raise the GraphError naming the first pose value that is not a finite number (no-op if there is none)."""
    bad = next((m for m, x in enumerate(pose) if not _finite_number(x)), None)
    if bad is not None:
        raise GraphError(f"{where}: {label}: field 'pose' value {bad} must be a finite number, got {_kind(pose[bad])}")


def _kind(x) -> str:
    return f"{x!r:.40}" if isinstance(x, (str, int, float, bool)) or x is None else type(x).__name__


def validate_connectivity(entries, where: str) -> tuple[list[str], list[tuple], list[bool], np.ndarray]:
    """Check a parsed connectivity list and return (image ids, pose translations, included, (n, n) unobstructed).

    Strict JSON types, because a lenient reading silently changes results: `included` and each
    `unobstructed` entry must be JSON booleans (`"false"` would read as true), `pose` a list of 16
    finite numbers (a NaN becomes a zero-length edge, an Infinity an unreachable viewpoint),
    `unobstructed` exactly one entry per viewpoint, and image ids non-empty unique strings.
    Raises GraphError on the first problem, naming `where` (the file), the viewpoint and the field.

        >>> ids, xyz, inc, rows = validate_connectivity(
        ...     [{"image_id": "a", "pose": [1, 0, 0, 2, 0, 1, 0, 3, 0, 0, 1, 4, 0, 0, 0, 1],
        ...       "included": True, "unobstructed": [False]}], "s_connectivity.json")
        >>> ids, xyz
        (['a'], [(2.0, 3.0, 4.0)])
    """
    if not isinstance(entries, list) or not entries:
        got = type(entries).__name__ if not isinstance(entries, list) else "an empty list"
        raise GraphError(f"{where}: expected a non-empty JSON list of viewpoints, got {got}")
    n = len(entries)
    ids: list[str] = []
    poses: list[list] = []
    included: list[bool] = []
    rows: list[list[bool]] = []
    first_seen: dict[str, int] = {}
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise GraphError(f"{where}: viewpoint #{k} must be a JSON object, got {type(entry).__name__}")
        image_id = entry.get("image_id")
        label = f"viewpoint #{k}" + (f" (image_id {image_id!r})" if isinstance(image_id, str) else "")
        for name in REQUIRED_FIELDS:
            if name not in entry:
                raise GraphError(f"{where}: {label}: missing field {name!r}")
        if not isinstance(image_id, str) or not image_id:
            raise GraphError(f"{where}: {label}: field 'image_id' must be a non-empty string, got {_kind(image_id)}")
        if image_id in first_seen:
            raise GraphError(f"{where}: {label}: field 'image_id' repeats the id of viewpoint #{first_seen[image_id]}")
        first_seen[image_id] = k
        inc = entry["included"]
        if not isinstance(inc, bool):
            raise GraphError(
                f"{where}: {label}: field 'included' must be a JSON boolean (true/false), got {_kind(inc)}"
            )
        pose = entry["pose"]
        if not isinstance(pose, list) or len(pose) != POSE_LENGTH:
            size = f"{len(pose)} values" if isinstance(pose, list) else _kind(pose)
            raise GraphError(f"{where}: {label}: field 'pose' must be a list of {POSE_LENGTH} numbers, got {size}")
        if not set(map(type, pose)) <= _NUMBER_TYPES:  # C-level type scan; str, bool, None, list fail it
            _raise_bad_pose(where, label, pose)
        row = entry["unobstructed"]
        if not isinstance(row, list) or len(row) != n:
            size = f"{len(row)} entries" if isinstance(row, list) else _kind(row)
            raise GraphError(
                f"{where}: {label}: field 'unobstructed' must be a list of {n} booleans (one per viewpoint), got {size}"
            )
        ids.append(image_id)
        poses.append(pose)
        included.append(inc)
        rows.append(row)
    # Finiteness of all 16 * n pose numbers at once; an int too large for a float overflows the conversion.
    try:
        pose_array = np.asarray(poses, dtype=np.float64)
        finite = bool(np.isfinite(pose_array).all())
    except OverflowError:
        finite = False
    if not finite:
        for k, pose in enumerate(poses):
            _raise_bad_pose(where, f"viewpoint #{k} (image_id {ids[k]!r})", pose)
        raise GraphError(f"{where}: field 'pose' holds a number that is not finite")  # not reached
    translations = [tuple(xyz) for xyz in pose_array[:, [3, 7, 11]].tolist()]
    # One C-level conversion checks every entry: the array is boolean only if all n * n entries are JSON
    # booleans (a 1 makes it int, "yes" str, null object). The Python scan below runs only to name the culprit.
    try:
        matrix = np.asarray(rows)
    except ValueError:  # a nested list somewhere: ragged
        matrix = None
    if matrix is None or matrix.dtype != np.bool_:
        for k, row in enumerate(rows):
            bad = next((m for m, x in enumerate(row) if type(x) is not bool), None)
            if bad is not None:
                label = f"viewpoint #{k} (image_id {ids[k]!r})"
                raise GraphError(
                    f"{where}: {label}: field 'unobstructed' entry {bad} must be a JSON boolean (true/false), "
                    f"got {_kind(row[bad])}"
                )
        raise GraphError(f"{where}: field 'unobstructed' is not a matrix of JSON booleans")  # not reached
    return ids, translations, included, matrix


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
        # Graphs built in code (tests, synthetic scans) get the checks a file gets in `validate_connectivity`.
        n = len(self.viewpoints)
        if len(set(self.viewpoints)) != n:
            raise GraphError(f"{self.source or self.scan}: duplicate viewpoint ids")
        if self.positions.shape != (n, 3) or not np.isfinite(self.positions).all():
            raise GraphError(f"{self.source or self.scan}: positions must be {n} finite (x, y, z) rows")
        if len(self.edges) and (self.edges.min() < 0 or self.edges.max() >= n):
            raise GraphError(f"{self.source or self.scan}: an edge names a viewpoint index outside [0, {n})")
        object.__setattr__(self, "index", {v: i for i, v in enumerate(self.viewpoints)})
        object.__setattr__(self, "_path_cache", {})

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_connectivity(cls, scan: str, entries: list, source: str = "") -> NavGraph:
        """Build from the parsed JSON list of a `<scan>_connectivity.json` file, validated strictly.

        A graph file is input like any other: a NaN or string in a pose, `"false"` for a boolean or a
        repeated image_id would otherwise turn into wrong distances with nothing flagged, so the first
        problem raises one GraphError naming the file, the viewpoint and the field (see
        `validate_connectivity`), e.g. `s_connectivity.json: viewpoint #0 (image_id 'a'): field
        'included' must be a JSON boolean (true/false), got 'false'`.
        """
        where = source or f"connectivity of {scan}"
        viewpoints_all, poses, included, unobstructed = validate_connectivity(entries, where)
        keep = np.flatnonzero(np.asarray(included, dtype=bool))
        matrix = unobstructed[np.ix_(keep, keep)]
        matrix = matrix | matrix.T  # an edge exists if either direction says so
        np.fill_diagonal(matrix, False)
        i, j = np.nonzero(np.triu(matrix, k=1))
        return cls(
            scan=scan,
            viewpoints=tuple(viewpoints_all[k] for k in keep),
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
            entries = loads_exact(raw)
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
        # scipy is imported where it is used: a job's own process names graphs but never builds one,
        # and the import costs it about 0.2 s before any worker starts.
        from scipy.sparse import csr_matrix

        return csr_matrix((weights, (rows, cols)), shape=(n, n))

    @cached_property
    def adjacent(self) -> np.ndarray:
        """(n, n) dense booleans: True where an edge joins the two viewpoints (a few hundred KB per scan)."""
        dense = np.zeros((len(self), len(self)), dtype=bool)
        dense[self.edges[:, 0], self.edges[:, 1]] = True
        dense[self.edges[:, 1], self.edges[:, 0]] = True
        return dense

    @cached_property
    def _all_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        from scipy.sparse.csgraph import shortest_path

        dist, pred = shortest_path(self.adjacency, method="D", directed=False, return_predecessors=True)
        return dist, pred

    @cached_property
    def distances(self) -> np.ndarray:
        """(n, n) shortest-path distances in metres; `inf` where unreachable (compiled Dijkstra, the same bits
        as scipy's: `vlnkit.navigation.shortest_paths`)."""
        from vlnkit.navigation.shortest_paths import all_pairs_distances

        return all_pairs_distances(len(self), self.edges, self.edge_weights)

    @property
    def predecessors(self) -> np.ndarray:
        """(n, n) predecessor matrix from scipy (-9999 where there is none); scipy's distances are the same
        bits as `distances` (a test holds it)."""
        return self._all_pairs[1]

    @cached_property
    def index_codes(self) -> dict[str, bytes]:
        """Each viewpoint's node index as 4 little-endian bytes: a path of ids becomes, by one join, the
        bytes a single-pair metric kernel reads (`vlnkit.evaluation.metrics`; cheaper than an int64 array)."""
        return {v: i.to_bytes(4, "little") for i, v in enumerate(self.viewpoints)}

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

    def first_non_adjacent_step(self, path) -> int | None:
        """Index k of the first step path[k] -> path[k + 1] not joined by an edge (a repeat counts), or None.

        Raises GraphError for a viewpoint not in the graph.

            >>> g = NavGraph("s", ("a", "b", "c"), np.zeros((3, 3)), np.array([[0, 1], [1, 2]]))
            >>> g.first_non_adjacent_step(["a", "b", "c"]), g.first_non_adjacent_step(["a", "c"])
            (None, 0)
        """
        idx = self.indices(path)
        bad = np.flatnonzero(~self.adjacent[idx[:-1], idx[1:]])
        return int(bad[0]) if len(bad) else None

    def walk_problem(self, path) -> str | None:
        """Why `path` is not a walk on this graph (an unknown viewpoint, or a step that is not an edge), or None.

        >>> g = NavGraph("s", ("a", "b", "c"), np.zeros((3, 3)), np.array([[0, 1], [1, 2]]))
        >>> g.walk_problem(["a", "b", "c"]) is None, g.walk_problem(["a", "c"])[:27]
        (True, "path step 0 -> 1 ('a' -> 'c")
        """
        try:
            k = self.first_non_adjacent_step(path)
        except GraphError as exc:
            return str(exc)
        if k is None:
            return None
        return (
            f"path step {k} -> {k + 1} ({path[k]!r} -> {path[k + 1]!r}) is not an edge of scan {self.scan!r} "
            "(consecutive viewpoints must be adjacent)"
        )

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
    return sorted(os.path.basename(p)[: -len(CONNECTIVITY_SUFFIX)] for p, _ in inputs.match_current(pattern))


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
        """The scan's graph; GraphError (the same reason every time) when it cannot be used.

        A refused scan is refused for every record that names it, with the one reason recorded
        at the first attempt (file, viewpoint, field), so callers dead-letter each record with it.
        """
        graph = self._graphs.get(scan)
        if graph is not None:
            return graph
        key = scan if isinstance(scan, str) else repr(scan)
        if key in self._errors:
            # A fresh exception each time: re-raising one instance would grow its traceback per record.
            raise GraphError(str(self._errors[key]))
        if not isinstance(scan, str) or not scan or "/" in scan or "\\" in scan:
            err = GraphError(f"invalid scan id {scan!r}")
            self._errors[key] = err
            raise GraphError(str(err))
        try:
            graph = NavGraph.load(self.connectivity_dir, scan)
            graph.distances  # noqa: B018  -- compute all-pairs once, at load time
        except GraphError as exc:
            self._errors[key] = exc
            raise
        except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
            # Anything else the file provokes is still a refusal of this scan, never a crashed worker.
            path = connectivity_path(self.connectivity_dir, scan)
            err = GraphError(f"{path}: cannot build the graph of scan {scan!r} ({type(exc).__name__}: {exc})")
            self._errors[key] = err
            raise err from exc
        self._graphs[scan] = graph
        return graph

    def error(self, scan: str) -> GraphError | None:
        """The remembered reason a scan was refused, or None (not refused, or not tried yet)."""
        return self._errors.get(scan if isinstance(scan, str) else repr(scan))
