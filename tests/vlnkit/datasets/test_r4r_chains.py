"""Longer joins (R6R, R8R): chains of K R2R paths, their enumeration, seeded sampling and records."""

import itertools
import json
import math
import random
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracles.r4r_chains import Distances, chain_problems, count_chains
from tests.oracles.r4r_generator import load_graph
from tests.vlnkit.navigation.test_graph import entry
from vlnkit.datasets.r4r import (
    DEFAULT_MAX_PATHS_PER_SCAN,
    JoinConfig,
    PairTable,
    build_chain,
    build_joined,
    chain_blocks,
    chain_path_id,
    join_chains,
    join_paths,
    landmark_records,
    sample_chains,
)
from vlnkit.hashing import stable_hash
from vlnkit.navigation.graph import NavGraph


def line_graph():
    """a - b - c - d - e along +y, 2 m apart."""
    names = "abcde"
    return NavGraph.from_connectivity(
        "line", [entry(n, (0, 2 * k, 0), [abs(k - j) == 1 for j in range(5)]) for k, n in enumerate(names)]
    )


def rec(pid, path, instructions=None, heading=0.0):
    return {
        "path_id": pid,
        "path": list(path),
        "heading": heading,
        "distance": 2.0 * (len(path) - 1),
        "instructions": list(instructions or [f"<{pid}{c}>" for c in "xyz"]),
        "scan": "line",
    }


def ids(result):
    return [j["path_ids"] for j in result.joined]


# ---------------------------------------------------------------------------- hand-made graphs, known counts


def test_every_ordering_of_mutually_joinable_paths_is_a_chain():
    """Five paths a->b on a 2 m edge, threshold 2 m: every ordered pair joins (itself too, as in R4R),
    so there are 5^2 = 25 pairs, 5*4*3 = 60 chains of three and 5*4*3*2 = 120 of four (no reuse)."""
    g = line_graph()
    records = [rec(i, "ab") for i in range(5)]
    for k, expected in [(2, 25), (3, 60), (4, 120), (5, 120), (6, 0)]:
        out = join_chains(g, records, JoinConfig(distance_threshold=2.0, num_paths=k, max_paths_per_scan=0))
        assert out.counts["chains_valid"] == len(out.joined) == expected
        assert sorted(map(tuple, ids(out))) == sorted(
            itertools.product(range(5), repeat=2) if k == 2 else itertools.permutations(range(5), k)
        )


def test_hand_worked_chain_of_three():
    """1: a->b, 2: c->d, 3: e->d with a 2 m threshold. Pairs: 1->1, 1->2, 2->2, 2->3, 3->2, 3->3 (as in
    the R4R test); the only chain of three distinct paths is 1 -> 2 -> 3 and there is none of four."""
    g = line_graph()
    p1, p2, p3 = rec(1, "ab", ["A1 ", "A2 "]), rec(2, "cd", ["B1 "]), rec(3, "ed", ["C1", "C2"])
    three = join_chains(g, [p1, p2, p3], JoinConfig(distance_threshold=2.0, num_paths=3))
    assert ids(three) == [[1, 2, 3]] and three.counts["valid_pairs"] == 6
    j = three.joined[0]
    # a b | (b->c) c d | (d->e) e d: the connectors are single edges.
    assert j["path"] == ["a", "b", "c", "d", "e", "d"]
    assert j["join_distances"] == [2.0, 2.0] and j["join_distance"] == 2.0
    assert j["distance"] == pytest.approx(2 + 2 + 2 + 2 + 2)
    assert j["instructions"] == ["A1 B1 C1", "A1 B1 C2", "A2 B1 C1", "A2 B1 C2"]
    assert j["shortest_path"] == ["a", "b", "c", "d"] and j["shortest_path_distance"] == pytest.approx(6.0)
    assert (j["first_path_id"], j["second_path_id"], j["heading"]) == (1, 2, 0.0)
    assert j["path_id"] == chain_path_id([1, 2, 3]) and 0 <= j["path_id"] < 2**63
    assert join_chains(g, [p1, p2, p3], JoinConfig(distance_threshold=2.0, num_paths=4)).joined == []


def test_two_paths_are_r4r_record_for_record():
    g = line_graph()
    records = [rec(1, "ab"), rec(2, "cd", heading=2 * math.pi - 0.2), rec(3, "ed", heading=math.pi)]
    config = JoinConfig(distance_threshold=2.0, heading_threshold=1.0)
    joined, counts = join_paths(g, records, config)
    chains = join_chains(g, records, config)
    assert chains.joined == joined and chains.counts["filtered_heading"] == counts["filtered_heading"] > 0
    assert joined[0]["path_id"] == 1_000_001 and joined[0] == build_joined(g, records[0], records[0])


def test_heading_rule_applies_at_every_junction():
    g = line_graph()
    # 1 ends travelling +y (heading 0); 2 starts facing pi (back): the junction 1 -> 2 fails a 1 rad rule.
    records = [rec(1, "ab"), rec(2, "cb", heading=math.pi), rec(3, "ab")]
    loose = join_chains(g, records, JoinConfig(distance_threshold=2.0, num_paths=3))
    strict = join_chains(g, records, JoinConfig(distance_threshold=2.0, heading_threshold=1.0, num_paths=3))
    assert [1, 2, 3] in ids(loose) and strict.counts["filtered_heading"] > 0
    for chain in ids(strict):
        assert all(b != 2 for b in chain[1:])  # nothing may follow into 2


def test_landmark_layout_splits_each_instruction_into_its_sub_paths_and_sub_instructions():
    g = line_graph()
    sources = [rec(1, "ab", ["A1 ", "A2 "], heading=0.1), rec(2, "cd", ["B1 "], heading=0.2), rec(3, "ed", heading=3)]
    joined = build_chain(g, sources, landmark=True)
    assert "_landmark" not in build_chain(g, sources)  # built only when asked
    layout = landmark_records(joined)
    assert len(layout) == len(joined["instructions"]) == 2 * 1 * 3
    for k, item in enumerate(layout):
        assert item["instr_id"] == f"{joined['path_id']}_{k}"
        assert "".join(item["instructions"]) == joined["instructions"][k]
        assert item["path"] == [["a", "b"], ["b", "c", "d"], ["d", "e", "d"]] and item["headings"] == [0.1, 0.2, 3]
        # BabyWalk's merge_data_landmark: the first sub-path, then each next one without its first viewpoint.
        merged = item["path"][0] + [v for sub in item["path"][1:] for v in sub[1:]]
        assert merged == joined["path"]


def test_config_rejects_what_it_cannot_mean():
    with pytest.raises(ValueError, match="num_paths"):
        JoinConfig(num_paths=1)
    with pytest.raises(ValueError, match="max_paths_per_scan"):
        JoinConfig(max_paths_per_scan=-1)
    assert JoinConfig().cap is None and JoinConfig(num_paths=3).cap == DEFAULT_MAX_PATHS_PER_SCAN
    assert JoinConfig(num_paths=4, max_paths_per_scan=0).cap is None and JoinConfig(max_paths_per_scan=7).cap == 7


# ---------------------------------------------------------------------------- properties of enumeration and sampling

pair_sets = st.integers(1, 7).flatmap(
    lambda n: st.tuples(st.just(n), st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))))
)


def table_of(pairs):
    pairs = sorted(pairs)
    first = np.array([a for a, _ in pairs], dtype=np.int64)
    second = np.array([b for _, b in pairs], dtype=np.int64)
    return PairTable(first, second, len(pairs), 0)


def brute_force(n, pairs, k):
    return sorted(
        c
        for c in itertools.product(range(n), repeat=k)
        if all((a, b) in pairs for a, b in zip(c, c[1:])) and (k == 2 or len(set(c)) == k)
    )


@settings(max_examples=60, deadline=None)
@given(pair_sets, st.integers(2, 4), st.sampled_from([1, 3, 1 << 20]))
def test_enumeration_equals_brute_force_for_any_block_size(n_pairs, k, block_rows):
    n, pairs = n_pairs
    blocks = list(chain_blocks(table_of(pairs), n, k, block_rows=block_rows))
    found = [tuple(row) for b in blocks for row in b.tolist()]
    assert sorted(found) == brute_force(n, pairs, k)  # each chain exactly once


@settings(max_examples=60, deadline=None)
@given(pair_sets, st.integers(2, 4), st.integers(1, 12), st.integers(0, 3), st.randoms(use_true_random=False))
def test_sample_is_the_lowest_hashes_whatever_the_blocks(n_pairs, k, cap, seed, rnd):
    n, pairs = n_pairs
    path_ids = np.array(rnd.sample(range(10**6), n), dtype=np.int64)
    everything = brute_force(n, pairs, k)
    # Independently: priority = stable_hash of the chain's path ids (scalar form), ties by records.
    by_priority = sorted(everything, key=lambda c: (stable_hash(*(int(path_ids[i]) for i in c), seed=seed), c))
    expected = sorted(by_priority[:cap])
    rows = np.array(everything, dtype=np.int64).reshape(-1, k)
    shuffled = rows[rnd.sample(range(len(rows)), len(rows))]
    cut = rnd.randint(0, len(rows))
    for blocks in ([rows], [shuffled[:cut], shuffled[cut:]], list(chain_blocks(table_of(pairs), n, k, 2))):
        kept, valid = sample_chains([b for b in blocks if len(b)], path_ids, cap, seed)
        assert [tuple(r) for r in kept.tolist()] == expected and valid == len(everything)
    bigger, _ = sample_chains([rows], path_ids, cap + 3, seed)
    assert set(expected) <= {tuple(r) for r in bigger.tolist()}  # raising the cap only adds chains


def test_sample_does_not_depend_on_the_order_records_arrive_in():
    g = line_graph()
    records = [rec(i, "ab") for i in range(8)]
    config = JoinConfig(distance_threshold=2.0, num_paths=3, max_paths_per_scan=25, seed=4)
    kept = sorted(map(tuple, ids(join_chains(g, records, config))))
    shuffled = random.Random(1).sample(records, len(records))
    assert sorted(map(tuple, ids(join_chains(g, shuffled, config)))) == kept and len(kept) == 25
    other_seed = join_chains(g, records, JoinConfig(distance_threshold=2.0, num_paths=3, max_paths_per_scan=25))
    assert sorted(map(tuple, ids(other_seed))) != kept


# ---------------------------------------------------------------------------- real data, checked independently


@pytest.mark.real_data
@pytest.mark.parametrize("split", ["val_seen", "val_unseen"])
def test_real_chains_are_valid_and_counted_as_an_independent_enumeration_counts_them(split, r2r_dir, connectivity_dir):
    from vlnkit.navigation.graph import GraphStore

    records = json.loads((r2r_dir / f"R2R_{split}.json").read_text())
    by_scan = defaultdict(list)
    for r in records:
        by_scan[r["scan"]].append(r)
    store = GraphStore(connectivity_dir)
    scans = sorted(by_scan) if split == "val_seen" else sorted(by_scan)[:3]
    checked = 0
    for scan in scans:
        group = by_scan[scan]
        distance = Distances(load_graph(connectivity_dir, scan))
        sources = {r["path_id"]: r for r in group}
        for k, cap in [(3, 40), (4, 40)]:
            out = join_chains(store.get(scan), group, JoinConfig(num_paths=k, max_paths_per_scan=cap, seed=2))
            assert out.counts["chains_valid"] == count_chains(group, distance, 3.0, k)
            assert len(out.joined) == min(cap, out.counts["chains_valid"]) and not out.errors
            for joined in out.joined:
                assert chain_problems(joined, sources, distance, 3.0) == []
            assert len({j["path_id"] for j in out.joined}) == len(out.joined)
            checked += len(out.joined)
    assert checked > (30 if split == "val_seen" else 200)
