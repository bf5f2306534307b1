"""score_pairs and score_bucket against the single-pair metrics and plain sums."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tests.vlnkit.scoring.test_join import preds, refs
from vlnkit.datasets.columns import Paths, ReferenceBatch
from vlnkit.evaluation.batch import score_batch
from vlnkit.evaluation.common import ALL, METRICS
from vlnkit.evaluation.score_summary import SEP, agent_key, language_key
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.fixtures.grid import grid_connectivity
from vlnkit.io.exactsum import SUM_SCALE, exact_sum
from vlnkit.navigation.graph import GraphStore, NavGraph
from vlnkit.scoring.join import join_bucket
from vlnkit.scoring.scans import ScanTables
from vlnkit.scoring.score import score_bucket, score_pairs


def test_pairs_of_two_scans_in_one_call_equal_score_batch_on_each_scan_bit_for_bit():
    graphs = {f"g{i}": NavGraph.from_connectivity(f"g{i}", grid_connectivity(i, size=7)) for i in range(2)}
    scans = ScanTables(GraphStore("", graphs))
    rng = np.random.default_rng(3)
    slot, r_paths, q_paths = [], [], []
    for _ in range(400):
        name = f"g{rng.integers(0, 2)}"
        n = len(graphs[name])
        slot.append(scans.slot(name))
        r_paths.append(list(rng.integers(0, n, rng.integers(1, 12))))
        q = list(rng.integers(0, n, rng.integers(1, 20)))
        q[1:1] = q[:1] * int(rng.integers(0, 3))  # repeats to collapse
        q_paths.append(q)
    to_paths = lambda ps: Paths(np.concatenate([[0], np.cumsum([len(p) for p in ps])]), np.concatenate(ps))  # noqa: E731
    for config in (ScoringConfig(), ScoringConfig(2.0, True, "path", "lt")):
        got = score_pairs(scans, np.array(slot), to_paths(r_paths), to_paths(q_paths), config)
        for b in range(len(slot)):
            graph = graphs[scans.scans[slot[b]]]
            want = score_batch(
                graph.distances, [r_paths[b]], [q_paths[b]], config.success_distance, keep_repeats=config.keep_repeats,
                spl_reference=config.spl_reference, success_rule=config.success_rule, metrics=ALL,
            )  # fmt: skip
            assert all(got.scores[m][b].tobytes() == want[m][0].tobytes() for m in METRICS), b
            q = [v for i, v in enumerate(q_paths[b]) if config.keep_repeats or i == 0 or v != q_paths[b][i - 1]]
            assert got.query_lengths[b] == len(q)
            steps = [(u, v) for u, v in zip(q, q[1:]) if u != v]
            assert got.jumps[b] == sum(not graph.adjacent[u, v] for u, v in steps)
            r = r_paths[b]
            assert got.reference_length[b] == sum(graph.distances[u, v] for u, v in zip(r, r[1:]))  # left to right
        scored = got.scored_nodes(to_paths(q_paths))
        assert len(scored) == got.query_lengths.sum()


def test_a_bucket_becomes_rows_and_the_exact_sums_of_them(world):
    graphs, vocab = world
    data = refs(vocab, [(1, "s", ["s0", "s1", "s2"], 2), (2, "t", ["t0", "t1"], 1), (3, "s", ["s4"], 1)])
    a = preds(vocab, "a", [(1, 0, ["s0", "s0", "s2"]), (1, 1, ["s0", "s1"]), (2, 0, ["t0", "t1", "t3"])])
    b = preds(vocab, "b", [(1, 0, ["s0"]), (3, 0, ["s4"]), (7, 0, ["s4"])])
    join = join_bucket([data, a, b], {"a": ["a.json"], "b": ["b.json"]}, ["d.json"], vocab, graphs)
    scans = ScanTables(graphs)
    out = score_bucket(join, scans, ScoringConfig(), label_agents=True)
    rows = out.table.to_pylist()
    assert sorted((r["agent"], r["instr_id"], r["scan"], tuple(r["path"])) for r in rows) == [
        ("a", "1_0", "s", ("s0", "s2")),
        ("a", "1_1", "s", ("s0", "s1")),
        ("a", "2_0", "t", ("t0", "t1", "t3")),
        ("b", "1_0", "s", ("s0",)),
        ("b", "3_0", "s", ("s4",)),
    ]
    assert out.missing == ["a\t3_0", "b\t1_1", "b\t2_0"] and out.unusable == out.missing
    assert [d.reason for d in out.dead] == ["unknown instr_id '7_0': not in the dataset"]
    t = out.totals
    assert t["reference_episodes"] == 4 and t["single_viewpoint_episodes"] == 1
    for agent in ("a", "b"):
        mine = [r for r in rows if r["agent"] == agent]
        assert t[agent_key(agent, "count")] == len(mine)
        for m in METRICS:
            values = [r[m] for r in mine if r[m] is not None]
            assert t[agent_key(agent, f"sum_{m}")] == exact_sum(values) and t[agent_key(agent, f"finite_{m}")] == len(
                values
            )
    assert t[agent_key("a", "repeats_collapsed")] == 1 and t[agent_key("a", "non_adjacent_steps")] == 2
    assert t[agent_key("a", "trajectories_with_jumps")] == 2  # s0 -> s2 and t1 -> t3
    assert not any(language_key("", "") in k for k in t)  # R2R: no language
    assert abs(t[agent_key("a", "sum_pl")] / 2**SUM_SCALE - sum(r["pl"] for r in rows if r["agent"] == "a")) < 1e-12
    assert out.reference_length.tolist() == [
        {"s": 2.0, "t": 1.0}[r["scan"]] if r["instr_id"] != "3_0" else 0.0 for r in rows
    ]


def test_languages_are_summed_per_agent_and_language(world):
    graphs, vocab = world
    guide = ReferenceBatch(
        np.zeros(3, np.int64), np.arange(3), np.array([10, 11, 12]), np.array(["s", "s", "t"]), np.ones(3, np.int64),
        Paths.from_lists([["s0", "s1"], ["s2"], ["t0"]], vocab), first_k=np.full(3, -1, np.int64),
        language=np.array([0, 1, 0], np.int32), languages=("en-IN", "hi-IN"),
    )  # fmt: skip
    a = preds(vocab, "a", [(10, -1, ["s0", "s1"]), (11, -1, ["s2", "s3"]), (12, -1, ["t0"])])
    join = join_bucket([guide, a], {"a": ["a.jsonl"]}, ["g.jsonl"], vocab, graphs)
    out = score_bucket(join, ScanTables(graphs), ScoringConfig())
    assert out.table.column("language").to_pylist() == ["en-IN", "hi-IN", "en-IN"]
    assert out.table.schema.field("language").type == pa.string()
    t = out.totals
    assert (
        t[agent_key("a", language_key("en-IN", "count"))] == 2
        and t[agent_key("a", language_key("hi-IN", "count"))] == 1
    )
    assert t[agent_key("a", language_key("hi-IN", "sum_pl"))] == exact_sum([1.0])
    assert all(k.count(SEP) in (1, 3) for k in t if k.startswith("a" + SEP))
