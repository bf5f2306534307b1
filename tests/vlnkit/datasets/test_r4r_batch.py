"""The batched builder of joined paths (`r4r_batch.build_chains`) equals the per-chain builder it replaced
(`tests/oracles/r4r_chain_builder.py`), record for record, reason for reason."""

import json
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracles.r4r_chain_builder import ChainError
from tests.oracles.r4r_chain_builder import build_chain as oracle_chain
from vlnkit.datasets.r4r import JoinConfig, join_chains
from vlnkit.datasets.r4r_batch import build_chains, ragged_take, shortest_paths
from vlnkit.datasets.schemas import R4R_PATHS
from vlnkit.navigation.graph import NavGraph


def assert_batch_equals_oracle(graph: NavGraph, records: list[dict], chains: np.ndarray) -> int:
    """Every chain: the batched record equals the oracle's, or both refuse it with the same reason."""
    batch = build_chains(graph, records, chains)
    built = iter(batch.records(records, landmark=True, ordered=True))
    failed = dict(batch.errors)
    assert batch.table.schema == R4R_PATHS and batch.table.num_rows == len(chains) - len(failed)
    for q, row in enumerate(chains.tolist()):
        sources = [records[i] for i in row]
        try:
            expected = oracle_chain(graph, sources)
        except ChainError as exc:
            assert failed.get(q) == str(exc)
            continue
        assert q not in failed
        record = next(built)
        assert record.pop("_order") == tuple(s["_order"] for s in sources)
        assert record == expected
    assert next(built, None) is None
    return batch.table.num_rows


@st.composite
def scans(draw):
    """A small graph (possibly disconnected, possibly with coincident viewpoints), records and chains on it."""
    n = draw(st.integers(1, 7))
    coord = st.integers(-3, 3).map(float)
    positions = np.array([[draw(coord), draw(coord), 0.0] for _ in range(n)])
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = [p for p in pairs if draw(st.booleans())]
    graph = NavGraph("s", tuple(f"v{i}" for i in range(n)), positions, np.array(edges, dtype=np.int64).reshape(-1, 2))
    records = []
    for pid in draw(st.lists(st.integers(0, 2_000_000), min_size=1, max_size=6, unique=True)):
        path = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4))
        records.append(
            {
                "path_id": pid,
                "path": [f"v{i}" for i in path],
                "distance": draw(st.floats(0, 30, allow_nan=False)),
                "heading": draw(st.floats(0, 6.28)),
                "instructions": draw(st.lists(st.text("ab. ", max_size=3), max_size=3)),
                "_order": (0, draw(st.integers(0, 9)), pid),
            }
        )
    k = draw(st.integers(2, 4))
    index = st.integers(0, len(records) - 1)
    chains = np.array(draw(st.lists(st.lists(index, min_size=k, max_size=k), max_size=8)), dtype=np.int64)
    return graph, records, chains.reshape(-1, k)


@settings(max_examples=300, deadline=None)
@given(scans())
def test_batched_builder_equals_the_per_chain_builder_on_small_graphs(scan):
    assert_batch_equals_oracle(*scan)


def test_unreachable_junction_and_goal_are_reported_like_the_per_chain_builder():
    # a - b, c alone: b -> c is unreachable.
    g = NavGraph("s", ("a", "b", "c"), np.array([[0, 0, 0], [1, 0, 0], [5, 0, 0]]), np.array([[0, 1]]))
    r = [
        {"path_id": i, "path": p, "distance": 1.0, "heading": 0.0, "instructions": ["x"]}
        for i, p in enumerate(["ab", "ba", "c"])
    ]
    for x in r:
        x["path"], x["_order"] = list(x["path"]), (0, x["path_id"])
    batch = build_chains(g, r, np.array([[0, 1], [0, 2], [1, 0]]))
    assert batch.table["path_id"].to_pylist() == [1, 1_000_000] and batch.chains.tolist() == [[0, 1], [1, 0]]
    assert batch.errors == [(1, "scan 's': 'c' is unreachable from 'b'")]
    assert_batch_equals_oracle(g, r, np.array([[0, 1], [0, 2], [1, 0], [2, 2]]))


def test_ragged_take_and_shortest_paths_on_empty_input():
    assert ragged_take(np.arange(3), np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []
    g = NavGraph("s", ("a",), np.zeros((1, 3)), np.zeros((0, 2), np.int64))
    flat, lengths = shortest_paths(g, np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert flat.tolist() == [] and lengths.tolist() == []
    empty = build_chains(g, [], np.zeros((0, 3), np.int64))
    assert empty.table.num_rows == 0 and empty.table.schema == R4R_PATHS and empty.records([]) == []


@pytest.mark.real_data
def test_batched_builder_equals_the_per_chain_builder_on_r2r_val_unseen(r2r_dir, connectivity_dir):
    from vlnkit.navigation.graph import GraphStore

    by_scan = defaultdict(list)
    for i, r in enumerate(json.loads((r2r_dir / "R2R_val_unseen.json").read_text())):
        by_scan[r["scan"]].append({**r, "_order": (0, i)})
    store = GraphStore(connectivity_dir)
    built = 0
    for scan, group in sorted(by_scan.items()):
        graph = store.get(scan)
        for config in (JoinConfig(), JoinConfig(num_paths=3, max_paths_per_scan=60, seed=5)):
            out = join_chains(graph, group, config)
            assert not out.errors
            built += assert_batch_equals_oracle(graph, group, out.batch.chains)
            # what the job writes to Parquet is the table itself
            assert pa.Table.from_pylist(out.joined, schema=R4R_PATHS).equals(out.batch.table)
    assert built > 5_000
