"""Metric API guards and conventions: malformed distance matrices and node indices are refused with a
ValueError naming the problem; the success rule at exactly d_th is an explicit option; a batch scores
each pair as if it were alone."""

import numpy as np
import pytest

from vlnkit.datasets.columns import Paths
from vlnkit.evaluation import batch, metrics
from vlnkit.evaluation.common import ALL, METRICS, collapse_repeats_padded, non_adjacent_steps, pack
from vlnkit.evaluation.rewards import RewardBatch, RewardEpisode
from vlnkit.evaluation.scoring_config import ScoringConfig
from vlnkit.fixtures.grid import grid_connectivity
from vlnkit.navigation.graph import GraphStore, NavGraph
from vlnkit.scoring.scans import ScanTables
from vlnkit.scoring.score import score_pairs

LINE = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])  # 0 - 1 - 2, 1 m apart


def job_scorer(graph: NavGraph):
    """The score job's scorer of pairs (`vlnkit.scoring.score.score_pairs`) on one graph: (scores, jumps,
    scored lengths, repeats collapsed) of lists of node-index paths."""
    scans = ScanTables(GraphStore("", {graph.scan: graph}))

    def scorer(refs, queries, config):
        r = Paths.from_lists([[graph.viewpoints[i] for i in p] for p in refs], _vocab(graph))
        q = Paths.from_lists([[graph.viewpoints[i] for i in p] for p in queries], _vocab(graph))
        r, q = Paths(r.offsets, r.values.astype(np.int64)), Paths(q.offsets, q.values.astype(np.int64))
        got = score_pairs(scans, np.full(len(refs), scans.slot(graph.scan)), r, q, config)
        return got.scores, got.jumps, got.query_lengths, q.lengths - got.query_lengths

    return scorer


def _vocab(graph: NavGraph):
    from vlnkit.datasets.columns import Vocabulary

    return Vocabulary([graph.scan], [list(graph.viewpoints)])


LINE_GRAPH = NavGraph(
    "line", ("a", "b", "c"), np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]), np.array([[0, 1], [1, 2]])
)
PUBLIC = [getattr(metrics, name) for name in ALL] + [metrics.score]

NOT_SQUARE = {
    "3 x 2": np.zeros((3, 2)),
    "2 x 3": np.zeros((2, 3)),
    "1-D": np.zeros(3),
    "3-D": np.zeros((3, 3, 3)),
    "0-D": np.float64(0.0),
}


def test_a_3x2_matrix_no_longer_reads_past_its_buffer():
    d = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0]])
    # Before the guard: 1.0, from whatever followed the buffer (node 2 is < d.shape[0] = 3).
    with pytest.raises(ValueError, match=r"square \(n, n\) matrix, got shape \(3, 2\)"):
        metrics.ndtw([0, 2], [0, 2], d)


@pytest.mark.parametrize("shape", NOT_SQUARE)
@pytest.mark.parametrize("fn", PUBLIC, ids=lambda f: f.__name__)
def test_every_metric_refuses_a_matrix_that_is_not_square(fn, shape):
    with pytest.raises(ValueError, match=r"distances must be a square \(n, n\) matrix, got shape"):
        fn([0, 1], [0, 1], NOT_SQUARE[shape])


@pytest.mark.parametrize("shape", NOT_SQUARE)
def test_score_batch_and_rewards_refuse_a_matrix_that_is_not_square(shape):
    d = NOT_SQUARE[shape]
    with pytest.raises(ValueError, match=r"distances must be a square \(n, n\) matrix"):
        batch.score_batch(d, [[0, 1]], [[0, 1]])
    with pytest.raises(ValueError, match=r"distances must be a square \(n, n\) matrix"):
        RewardBatch(d).reset([[0, 1]])
    with pytest.raises(ValueError, match=r"distances must be a square \(n, n\) matrix"):
        RewardEpisode(d, [0, 1]).reset()


@pytest.mark.parametrize("bad", [-1, 3, 10**6])
@pytest.mark.parametrize("fn", PUBLIC, ids=lambda f: f.__name__)
def test_every_metric_refuses_a_node_index_out_of_range(fn, bad):
    with pytest.raises(ValueError, match=r"reference #0 has a node index outside \[0, 3\)"):
        fn([0, bad], [0, 1], LINE)
    with pytest.raises(ValueError, match=r"query #0 has a node index outside \[0, 3\)"):
        fn([0, 1], [bad, 1], LINE)


@pytest.mark.parametrize("bad", [-1, 3])
def test_score_batch_and_rewards_refuse_a_node_index_out_of_range(bad):
    with pytest.raises(ValueError, match=r"query #1 has a node index outside \[0, 3\)"):
        batch.score_batch(LINE, [[0, 1], [0, 2]], [[0, 1], [0, bad]])
    with pytest.raises(ValueError, match=r"reference #1 has a node index outside \[0, 3\)"):
        batch.score_batch(LINE, [[0, 1], [bad, 2]], [[0, 1], [0, 2]])
    env = RewardBatch(LINE)
    with pytest.raises(ValueError, match=r"environment 0 .*node outside \[0, 3\)"):
        env.reset([[0, bad]])
    env.reset([[0, 1, 2]])
    with pytest.raises(ValueError, match=f"environment 0 .*node {bad} is not a node"):
        env.step([bad])


# ----------------------------------------------------------------------------- the success rule
TIE = ([0, 1, 2], [0, 1], LINE, 1.0)  # the agent stops exactly d_th = 1 m from the goal


@pytest.mark.parametrize("fn", [metrics.sr, metrics.osr, metrics.spl, metrics.sed, metrics.sdtw])
def test_an_exact_tie_succeeds_with_le_and_fails_with_lt(fn):
    assert fn(*TIE) == fn(*TIE, success_rule="le") > 0  # le is the default
    assert fn(*TIE, success_rule="lt") == 0.0
    # Away from the tie both rules agree.
    assert fn([0, 1, 2], [0, 1, 2], LINE, 2.0, success_rule="lt") == fn([0, 1, 2], [0, 1, 2], LINE, 2.0) > 0
    assert fn([0, 1, 2], [0], LINE, 1.5, success_rule="lt") == fn([0, 1, 2], [0], LINE, 1.5) == 0.0


def test_the_success_rule_reaches_score_score_batch_the_transform_and_rewards():
    le, lt = metrics.score(*TIE), metrics.score(*TIE, success_rule="lt")
    assert (le["sr"], le["osr"], lt["sr"], lt["osr"]) == (1.0, 1.0, 0.0, 0.0)
    assert {m: v for m, v in le.items() if m not in ("sr", "osr", "spl", "sed", "sdtw")} == {
        m: v for m, v in lt.items() if m not in ("sr", "osr", "spl", "sed", "sdtw")
    }
    refs, queries = [[0, 1, 2], [0, 1, 2]], [[0], [0, 1, 2]]
    for rule, want in (("le", [1.0, 1.0]), ("lt", [0.0, 1.0])):
        assert batch.score_batch(LINE, refs, queries, 2.0, success_rule=rule)["sr"].tolist() == want
        config = ScoringConfig(success_distance=2.0, success_rule=rule)  # the score job's scorer
        scores, *_ = job_scorer(LINE_GRAPH)(refs, queries, config)
        assert scores["sr"].tolist() == want
    for rule, end in (("le", 1.0), ("lt", 0.0)):
        env = RewardBatch(LINE, "goal", threshold=2.0, success_rule=rule)
        env.reset([[0, 1, 2]])
        assert env.step([None], stop=[True]).tolist() == [end]


def test_an_unknown_success_rule_is_refused_everywhere():
    for call in (
        lambda: metrics.sr(*TIE, success_rule="<"),
        lambda: metrics.score(*TIE, success_rule="lte"),
        lambda: batch.score_batch(LINE, [[0]], [[0]], success_rule="gt"),
        lambda: RewardBatch(LINE, success_rule="eq"),
        lambda: ScoringConfig(success_rule="LE"),
    ):
        with pytest.raises(ValueError, match=r"success_rule must be one of \('le', 'lt'\)"):
            call()


# ----------------------------------------------------------------------------- batch independence
def test_500_random_pairs_in_one_batch_equal_each_pair_scored_alone_bit_for_bit():
    """The compiled kernel scores each pair on its own, so no grouping by length is needed."""
    graph = NavGraph.from_connectivity("grid", grid_connectivity(11, size=9))
    n = len(graph.distances)
    rng = np.random.default_rng(24)
    refs, queries = [], []
    for _ in range(500):  # lengths 1..40 mixed in one batch (sums of 8+ values, padding of every width)
        ref = graph.shortest_path_indices(*rng.integers(0, n, 2))
        refs.append(list(ref) + list(rng.integers(0, n, rng.integers(0, 12))))
        queries.append(list(rng.integers(0, n, rng.integers(1, 41))))
    for keep_repeats in (False, True):
        together = batch.score_batch(graph.distances, refs, queries, metrics=ALL, keep_repeats=keep_repeats)
        for b in range(len(refs)):
            alone = batch.score_batch(graph.distances, [refs[b]], [queries[b]], metrics=ALL, keep_repeats=keep_repeats)
            for m in ALL:
                assert together[m][b].tobytes() == alone[m][0].tobytes(), (b, m)
    # The job's scorer (collapse, jumps, score) too: a pair's row does not depend on its companions, and it
    # is score_batch's row, bit for bit.
    config = ScoringConfig()
    together = batch.score_batch(graph.distances, refs, queries, metrics=ALL)
    scorer = job_scorer(graph)
    whole, jumps, q_len, repeats = scorer(refs, queries, config)
    for b in range(0, len(refs), 5):
        one, one_jumps, _, one_repeats = scorer(refs[b : b + 1], queries[b : b + 1], config)
        assert all(whole[m][b].tobytes() == one[m][0].tobytes() for m in METRICS), b
        assert all(whole[m][b].tobytes() == together[m][b].tobytes() for m in METRICS), b  # score_batch's bits
        assert (jumps[b], repeats[b]) == (one_jumps[0], one_repeats[0])
    collapsed, lengths = collapse_repeats_padded(*pack(queries))
    assert (q_len == lengths).all() and (jumps == non_adjacent_steps(graph.adjacent, collapsed, lengths)).all()
