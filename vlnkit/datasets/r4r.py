"""R4R: joining pairs of R2R paths into longer paths (docs/design.md, "R4R").

Path A joins path B (same scan) when d(a_last, b_first) <= distance_threshold and, when a
heading threshold is given, A's final direction of travel and B's starting heading differ by
at most heading_threshold. The join is keyed: A is keyed by every viewpoint within the
threshold of its end, B by its start, so the work grows with the output, not with the
square of the input. `join_paths` runs that join in memory; the Beam transform
(`transforms.r4r.JoinR4R`) runs `join_chains`, the same rule, as a distributed keyed join.

Longer joins (R6R, R8R; docs/design.md, "Longer joins"): `join_chains` chains K paths whose
consecutive pairs pass the rule, no source twice for K >= 3, enumerated from the scan's pair table
with numpy joins (`chain_blocks`) and sampled per scan by the lowest stable hash (`sample_chains`);
the kept chains of a scan are built at once, as Arrow columns (`vlnkit.datasets.r4r_batch`).

Heading conventions
-------------------
`simulator` (default): headings are radians clockwise from +y (atan2(dx, dy)), as in the
Matterport3D simulator and in R2R's `heading` field; the difference is wrapped to [0, pi].
`r4r_generator`: the check of R4R's own generator (google-research/r4r), abs(b_heading - atan2(dy, dx) mod 2pi),
which measures A's direction counter-clockwise from +x and does not wrap around, so it
compares angles in different conventions and treats 359 deg vs 1 deg as far apart. Use it
only to reproduce files made by that generator with a heading threshold.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vlnkit.datasets.r4r_batch import PAIR_ID_BASE, JoinedBatch, build_chains, chain_path_ids, pair_id_problem
from vlnkit.hashing import stable_hash_array
from vlnkit.io.exactsum import exact_mean, exact_sum
from vlnkit.navigation.graph import NavGraph, angle_difference, simulator_heading

HEADING_CONVENTIONS = ("simulator", "r4r_generator")


class JoinError(ValueError):
    """A pair that passed the rule cannot be joined (for example, unreachable viewpoints)."""


# Default --max_paths_per_scan for K >= 3 (docs/design.md, "Longer joins"): keeps R8R of R2R train under
# 1 GB of output. K = 2 (R4R) is released unsampled, so it has no default cap.
DEFAULT_MAX_PATHS_PER_SCAN = 50


@dataclass(frozen=True)
class JoinConfig:
    """The join rule, and for longer joins how many paths a chain has and how chains are sampled.

    `max_paths_per_scan`: None means the default for `num_paths` (no cap for 2, DEFAULT_MAX_PATHS_PER_SCAN
    from 3), 0 means no cap; `seed` picks which chains a capped scan keeps (see `sample_chains`).
    """

    distance_threshold: float = 3.0
    heading_threshold: float | None = None
    heading_convention: str = "simulator"
    num_paths: int = 2
    max_paths_per_scan: int | None = None
    seed: int = 0

    @property
    def cap(self) -> int | None:
        """The per-scan cap in force: a number of joined paths, or None for every valid chain."""
        if self.max_paths_per_scan is None:
            return None if self.num_paths == 2 else DEFAULT_MAX_PATHS_PER_SCAN
        return self.max_paths_per_scan or None

    def __post_init__(self) -> None:
        if isinstance(self.num_paths, bool) or not isinstance(self.num_paths, int) or self.num_paths < 2:
            raise ValueError(f"num_paths must be an integer >= 2, got {self.num_paths!r}")
        if self.max_paths_per_scan is not None and not self.max_paths_per_scan >= 0:
            raise ValueError(f"max_paths_per_scan must be >= 0 (0: no cap), got {self.max_paths_per_scan}")
        if not (self.distance_threshold >= 0 and math.isfinite(self.distance_threshold)):
            raise ValueError(f"distance_threshold must be a finite number >= 0, got {self.distance_threshold}")
        if self.heading_threshold is not None and not self.heading_threshold >= 0:
            raise ValueError(f"heading_threshold must be >= 0 radians, got {self.heading_threshold}")
        if self.heading_convention not in HEADING_CONVENTIONS:
            raise ValueError(
                f"heading_convention must be one of {HEADING_CONVENTIONS}, got {self.heading_convention!r}"
            )


def pair_path_id(first_path_id: int, second_path_id: int) -> int:
    for pid in (first_path_id, second_path_id):
        if not 0 <= pid < PAIR_ID_BASE:
            raise JoinError(pair_id_problem(pid))
    return chain_path_id([first_path_id, second_path_id])


def final_heading(graph: NavGraph, record: dict) -> float:
    """A's direction of travel on its last edge (simulator convention); its own heading if it has one viewpoint."""
    path = record["path"]
    if len(path) < 2:
        return float(record["heading"])
    return graph.heading_of_step(path[-2], path[-1])


def heading_difference(graph: NavGraph, first: dict, second: dict, convention: str = "simulator") -> float:
    """How far B's starting heading is from A's final direction of travel, in radians."""
    if convention == "r4r_generator":
        path = first["path"]
        if len(path) < 2:
            return abs(second["heading"] - first["heading"])
        d = graph.positions[graph.idx(path[-1])] - graph.positions[graph.idx(path[-2])]
        return abs(second["heading"] - math.atan2(d[1], d[0]) % (2 * math.pi))
    return angle_difference(final_heading(graph, first), second["heading"])


def path_problem(graph: NavGraph, record: dict) -> str | None:
    """Why a record's reference path cannot take part in a join on this graph, or None.

    Every viewpoint must be an included viewpoint of the scan and consecutive viewpoints must be
    joined by an edge: a joined path is A + connector + B, so a jump inside A or B would make an
    R4R path that no agent can follow (the real R2R train / val paths have no such step).

        >>> import numpy as np
        >>> g = NavGraph("s", ("a", "b", "c"), np.zeros((3, 3)), np.array([[0, 1], [1, 2]]))
        >>> path_problem(g, {"path": ["a", "c"]})
        "path step 0 -> 1 ('a' -> 'c') is not an edge of scan 's' (consecutive viewpoints must be adjacent)"
    """
    return graph.walk_problem(record["path"])


def end_keys(graph: NavGraph, record: dict, distance_threshold: float) -> list[str]:
    """Viewpoints within the threshold of the path's end: the keys under which it meets second paths."""
    return graph.within(record["path"][-1], distance_threshold)


def passes_heading(graph: NavGraph, first: dict, second: dict, config: JoinConfig) -> bool:
    if config.heading_threshold is None:
        return True
    return heading_difference(graph, first, second, config.heading_convention) <= config.heading_threshold


def chain_path_id(path_ids: list[int]) -> int:
    """The path_id of a joined path made of `path_ids` in order (see `r4r_batch.chain_path_ids`).

    >>> chain_path_id([12, 34])
    12000034
    >>> chain_path_id([1, 2, 3]) == chain_path_id([1, 2, 3]) != chain_path_id([3, 2, 1])
    True
    """
    return int(chain_path_ids(np.array([path_ids], dtype=np.int64))[0])


def build_chain(graph: NavGraph, sources: list[dict], landmark: bool = False) -> dict:
    """The joined record of `sources` (K >= 2 R2R records, in order), as the R4R generator builds a
    pair (`r4r_batch.build_chains` on one chain; raises JoinError when it cannot be built). Besides R4R's
    fields it keeps `path_ids` and `join_distances`, and with `landmark` BabyWalk's `_landmark` layout.

        >>> import numpy as np
        >>> g = NavGraph("s", ("a", "b", "c"), np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]]), np.array([[0, 1], [1, 2]]))
        >>> r = lambda pid, path: {"path_id": pid, "path": path, "distance": 1.0, "heading": 0.0, "instructions": [f"{pid}."]}
        >>> j = build_chain(g, [r(1, ["a", "b"]), r(2, ["c", "b"])])
        >>> j["path"], j["instructions"], j["path_id"]
        (['a', 'b', 'c', 'b'], ['1.2.'], 1000002)
    """
    batch = build_chains(graph, sources, np.arange(len(sources))[None, :])
    if batch.errors:
        raise JoinError(batch.errors[0][1])
    return batch.records(sources, landmark=landmark)[0]


def build_joined(graph: NavGraph, first: dict, second: dict, landmark: bool = False) -> dict:
    """The R4R record of the pair (first, second), exactly as the R4R generator builds it."""
    return build_chain(graph, [first, second], landmark)


def landmark_records(joined: dict) -> list[dict]:
    """BabyWalk's `_landmark` layout of one joined record: one record per instruction, whose `path` is the
    list of K sub-paths (sub-path i + 1 starts where sub-path i ends: the connector, then source i + 1),
    `instructions` the K sub-instructions it concatenates and `headings` each source's R2R start heading.
    Instruction k of the joined record is instruction k here (`instr_id` "<path_id>_<k>" in both).

        >>> import numpy as np
        >>> g = NavGraph("s", ("a", "b"), np.array([[0, 0, 0], [1, 0, 0]]), np.array([[0, 1]]))
        >>> r = lambda pid, ins: {"path_id": pid, "path": ["a", "b"], "distance": 1.0, "heading": 0.0, "instructions": ins}
        >>> [x["instructions"] for x in landmark_records(build_chain(g, [r(1, ["x", "y"]), r(2, ["z"])], True))]
        [['x', 'z'], ['y', 'z']]
    """
    layout = joined["_landmark"]
    out = []
    for k, parts in enumerate(itertools.product(*layout["instructions"])):
        out.append(
            {
                "path_id": joined["path_id"],
                "instr_id": f"{joined['path_id']}_{k}",
                "scan": joined["scan"],
                "path_ids": joined["path_ids"],
                "distance": joined["distance"],
                "heading": joined["heading"],
                "headings": layout["headings"],
                "path": layout["path"],
                "instructions": list(parts),
                "_order": joined.get("_order"),
                "_k": k,
            }
        )
    return out


def join_paths(
    graph: NavGraph, records: list[dict], config: JoinConfig = JoinConfig(), landmark: bool = False
) -> tuple[list[dict], dict]:
    """Join every qualifying pair of one scan's records in memory (R4R: K = 2, no cap; the pairs in
    the R4R generator's order, first path, then second). Returns (joined records, counts).

    A record whose path is unusable (see `path_problem`), or a pair that cannot be built, raises
    JoinError: the Beam transform dead-letters such records and pairs instead.

        >>> import numpy as np
        >>> g = NavGraph("s", ("a", "b"), np.array([[0, 0, 0], [1, 0, 0]]), np.array([[0, 1]]))
        >>> recs = [{"path_id": 1, "path": ["a", "b"], "distance": 1.0, "heading": 0.0, "instructions": ["x"]},
        ...         {"path_id": 2, "path": ["b", "a"], "distance": 1.0, "heading": 0.0, "instructions": ["y"]}]
        >>> joined, counts = join_paths(g, recs, JoinConfig(distance_threshold=0.5))
        >>> [j["path_id"] for j in joined], counts["filtered_distance"]
        ([1000002, 2000001], 2)
    """
    for rec in records:
        problem = path_problem(graph, rec)
        if problem is not None:
            raise JoinError(f"path_id={rec.get('path_id')!r}: {problem}")
    table = pair_table(graph, records, config)
    batch = build_chains(graph, records, np.stack([table.first, table.second], axis=1))
    if batch.errors:
        raise JoinError(batch.errors[0][1])
    joined = batch.records(records, landmark=landmark)
    counts = {
        "pairs_considered": len(records) ** 2,
        "filtered_distance": len(records) ** 2 - table.passed_distance,
        "filtered_heading": table.filtered_heading,
        "joined": len(joined),
    }
    return joined, counts


@dataclass
class PairTable:
    """One scan's valid pairs as index arrays into its record list, sorted by (first, second)."""

    first: np.ndarray
    second: np.ndarray
    passed_distance: int
    filtered_heading: int


def pair_table(graph: NavGraph, records: list[dict], config: JoinConfig = JoinConfig()) -> PairTable:
    """Every pair (A, B) of `records` that passes the rule (A under every viewpoint within the threshold of its end, B under its start; records
    must have passed `path_problem`). A path may pair with itself, as in R4R; chains drop reuse later.

        >>> import numpy as np
        >>> g = NavGraph("s", ("a", "b"), np.array([[0, 0, 0], [1, 0, 0]]), np.array([[0, 1]]))
        >>> t = pair_table(g, [{"path": ["a", "b"]}, {"path": ["b", "a"]}], JoinConfig(distance_threshold=0.5))
        >>> t.first.tolist(), t.second.tolist()
        ([0, 1], [1, 0])
    """
    by_start: dict[str, list[int]] = defaultdict(list)
    for i, rec in enumerate(records):
        by_start[rec["path"][0]].append(i)
    firsts, seconds, filtered_heading = [], [], 0
    for i, first in enumerate(records):
        for key in end_keys(graph, first, config.distance_threshold):
            for j in by_start.get(key, ()):
                if passes_heading(graph, first, records[j], config):
                    firsts.append(i)
                    seconds.append(j)
                else:
                    filtered_heading += 1
    first_idx, second_idx = np.array(firsts, dtype=np.int64), np.array(seconds, dtype=np.int64)
    order = np.lexsort((second_idx, first_idx))
    return PairTable(first_idx[order], second_idx[order], len(firsts) + filtered_heading, filtered_heading)


def chain_blocks(table: PairTable, n_records: int, num_paths: int, block_rows: int = 1 << 20):
    """Every chain of `num_paths` records whose consecutive pairs are in `table`, as (m, num_paths) index
    arrays, in blocks of at most about `block_rows` rows (a starting pair with more chains than that is
    one block). For num_paths >= 3 no record appears twice in a chain. Numpy joins on the pair table,
    no loop per chain: chains are extended one column at a time by every pair that starts where they end.

        >>> t = PairTable(np.array([0, 1, 1, 2]), np.array([1, 0, 2, 0]), 4, 0)  # 0->1, 1->0, 1->2, 2->0
        >>> np.concatenate(list(chain_blocks(t, 3, 3))).tolist()
        [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    """
    first, second = table.first, table.second
    if num_paths > 2:  # a chain of three or more never reuses a source path, so no pair of a path with itself
        distinct = first != second
        first, second = first[distinct], second[distinct]
    out_degree = np.bincount(first, minlength=n_records)
    offsets = np.concatenate(([0], np.cumsum(out_degree)))
    # walks[j]: walks of the remaining length from record j (an upper bound on its chains), to size blocks.
    walks = np.ones(n_records)
    for _ in range(num_paths - 2):
        walks = np.bincount(first, weights=walks[second], minlength=n_records)
    sizes = walks[second] if num_paths > 2 else np.ones(len(first))
    block_of = np.floor(np.cumsum(sizes) / block_rows).astype(np.int64) if len(first) else np.zeros(0, np.int64)
    for b in np.unique(block_of):
        rows = np.flatnonzero(block_of == b)
        chains = np.stack([first[rows], second[rows]], axis=1)
        for _ in range(num_paths - 2):
            last = chains[:, -1]
            degree = out_degree[last]
            total = int(degree.sum())
            within = np.arange(total) - np.repeat(np.cumsum(degree) - degree, degree)
            nxt = second[np.repeat(offsets[last], degree) + within]
            chains = np.concatenate([np.repeat(chains, degree, axis=0), nxt[:, None]], axis=1)
            chains = chains[(chains[:, :-1] != nxt[:, None]).all(axis=1)]
        if len(chains):
            yield chains


def sample_chains(blocks, path_ids: np.ndarray, cap: int | None, seed: int = 0) -> tuple[np.ndarray, int]:
    """The chains a scan keeps, sorted by their records (the R4R generator's order), and how many were valid.

    With a cap, a chain's priority is `stable_hash(its path_ids in order, seed)` and the `cap` chains of
    lowest priority are kept (ties by records): a uniform sample without replacement that depends only on
    the set of valid chains and the seed, never on block sizes, bundle order, runner or worker count, and
    that only grows as the cap grows.

        >>> chains = [np.array([[0, 1], [1, 0], [1, 2]])]
        >>> kept, valid = sample_chains(chains, np.array([7, 8, 9]), cap=2, seed=1)
        >>> kept.shape, valid, sample_chains(chains, np.array([7, 8, 9]), cap=None)[0].tolist()
        ((2, 2), 3, [[0, 1], [1, 0], [1, 2]])
    """
    kept, valid = None, 0
    for block in blocks:
        valid += len(block)
        if cap is None:
            kept = block if kept is None else np.concatenate([kept, block])
            continue
        pool = block if kept is None else np.concatenate([kept, block])
        if len(pool) > cap:
            priority = stable_hash_array(*(path_ids[pool[:, c]] for c in range(pool.shape[1])), seed=seed)
            order = np.lexsort((*pool.T[::-1], priority))
            pool = pool[order[:cap]]
        kept = pool
    if kept is None:
        return np.zeros((0, 0), dtype=np.int64), 0
    return kept[np.lexsort(kept.T[::-1])], valid


@dataclass
class ScanChains:
    """One scan's longer join: the joined paths as columns (the R4R generator's order), the chains that failed, the counts."""

    batch: JoinedBatch
    sources: list[dict]  # the records `batch.chains` index
    errors: list[tuple[list[dict], str]]  # (the chain's source records, why it could not be built)
    counts: dict

    @property
    def joined(self) -> list[dict]:
        """The joined records as dicts (see `JoinedBatch.records`)."""
        return self.batch.records(self.sources)


def join_chains(graph: NavGraph, records: list[dict], config: JoinConfig = JoinConfig()) -> ScanChains:
    """Join one scan's usable records (passed `path_problem`, in `_order`) into chains of
    `config.num_paths` paths: the pair table, the chains enumerated from it in numpy, the seeded sample
    under `config.cap`, then every kept chain built at once (`r4r_batch.build_chains`). K = 2 without a
    cap is R4R.

        >>> import numpy as np
        >>> g = NavGraph("s", ("a", "b"), np.array([[0, 0, 0], [1, 0, 0]]), np.array([[0, 1]]))
        >>> recs = [{"path_id": i, "path": p, "distance": 1.0, "heading": 0.0, "instructions": [str(i)]}
        ...         for i, p in enumerate([["a", "b"], ["b", "a"], ["a", "b"]])]
        >>> out = join_chains(g, recs, JoinConfig(distance_threshold=0.5, num_paths=3))
        >>> [j["path_ids"] for j in out.joined], out.counts["chains_valid"]
        ([[0, 1, 2], [2, 1, 0]], 2)
    """
    table = pair_table(graph, records, config)
    path_ids = np.array([r["path_id"] for r in records], dtype=np.int64)
    kept, valid = sample_chains(chain_blocks(table, len(records), config.num_paths), path_ids, config.cap, config.seed)
    batch = build_chains(graph, records, kept.reshape(len(kept), config.num_paths))
    errors = [([records[i] for i in kept[row].tolist()], reason) for row, reason in batch.errors]
    counts = {
        "pairs_considered": len(records) ** 2,
        "passed_distance": table.passed_distance,
        "filtered_heading": table.filtered_heading,
        "valid_pairs": len(table.first),
        "chains_valid": valid,
        "chains_capped": valid - len(kept),
    }
    return ScanChains(batch, records, errors, counts)


def group_totals(joined: pa.Table) -> dict:
    """Joined paths' (an R4R_PATHS table's) contribution to the dataset statistics (sums, distances
    exact; see `summarize`), from the columns."""

    def list_total(name: str) -> int:
        return int(pc.sum(pc.list_value_length(joined[name])).as_py() or 0)

    return {
        "paths": joined.num_rows,
        "instructions": list_total("instructions"),
        "distance": exact_sum(joined["distance"].to_numpy()),
        "shortest_path_distance": exact_sum(joined["shortest_path_distance"].to_numpy()),
        "steps": list_total("path"),
        "shortest_path_steps": list_total("shortest_path"),
    }


def add_totals(into: dict, other: dict) -> dict:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v
    return into


def summarize(totals: dict) -> dict:
    """Counts and means of a join from summed `group_totals` (means are None when nothing joined)."""
    n = totals.get("paths", 0)

    def mean(key: str) -> float | None:
        return totals.get(key, 0) / n if n else None

    return {
        "paths": int(n),
        "instructions": int(totals.get("instructions", 0)),
        "mean_distance": exact_mean(totals.get("distance", 0), n),
        "mean_shortest_path_distance": exact_mean(totals.get("shortest_path_distance", 0), n),
        "mean_steps": mean("steps"),
        "mean_shortest_path_steps": mean("shortest_path_steps"),
    }


__all__ = [
    "HEADING_CONVENTIONS",
    "PAIR_ID_BASE",
    "JoinConfig",
    "JoinError",
    "add_totals",
    "build_chain",
    "build_joined",
    "chain_blocks",
    "chain_path_id",
    "DEFAULT_MAX_PATHS_PER_SCAN",
    "join_chains",
    "landmark_records",
    "pair_table",
    "PairTable",
    "sample_chains",
    "ScanChains",
    "end_keys",
    "final_heading",
    "group_totals",
    "heading_difference",
    "join_paths",
    "pair_path_id",
    "path_problem",
    "summarize",
    "passes_heading",
    "simulator_heading",
]
