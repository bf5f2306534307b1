"""Rewards: incremental steps equal the metrics recomputed from scratch on the walk so far."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.vlnkit.evaluation.test_metrics import line_graph
from vlnkit.evaluation import metrics as M
from vlnkit.evaluation.rewards import RewardBatch, RewardEpisode
from vlnkit.fixtures.grid import grid_connectivity
from vlnkit.navigation.graph import GraphStore, NavGraph

TH = 3.0


@pytest.fixture(scope="module")
def grid():
    return NavGraph.from_connectivity("grid", grid_connectivity(7, size=8))


def expected_rewards(kind, R, walk, dist, th=TH, keep=False, goal_end="indicator", shaping=False):
    """Straight from the definitions: the metric of the walk so far, recomputed at every step."""
    g = R[-1]
    out = []
    for t in range(1, len(walk)):
        before, after = walk[:t], walk[: t + 1]
        if kind == "goal":
            out.append(dist[walk[t - 1], g] - dist[walk[t], g])
        elif kind == "ndtw":
            out.append(M.ndtw(R, after, dist, th, keep_repeats=keep) - M.ndtw(R, before, dist, th, keep_repeats=keep))
        else:
            gain = M.cls(R, after, dist, th, keep_repeats=keep) - M.cls(R, before, dist, th, keep_repeats=keep)
            out.append(gain if shaping else 0.0)
        if walk[t] == walk[t - 1] and not keep:
            out[-1] = 0.0  # turning in place changes nothing
    d = dist[walk[-1], g]
    success = d <= th
    if kind == "goal":
        end = 1.0 if success else (-1.0 if goal_end == "signed" else 0.0)
    elif kind == "ndtw":
        end = 1.0 - d / th if success else 0.0
    else:
        end = float(success) + M.cls(R, walk, dist, th, keep_repeats=keep)
    return out, end


def test_hand_worked_rewards_on_a_line():
    # v0 - v1 - v2 - v3 at x = 0, 1, 2, 3; reference 0 1 2 3 (goal v3), walk 0 1 1 2 then stop (NE = 1).
    g = line_graph([0, 1, 2, 3], [(0, 1), (1, 2), (2, 3)])
    R = ["v0", "v1", "v2", "v3"]
    goal = RewardBatch(g, "goal")
    assert goal.reset([R]).tolist() == [0.0]
    assert [goal.step([v])[0] for v in ("v1", "v1", "v2")] == [1.0, 0.0, 1.0]
    assert goal.distance_to_goal.tolist() == [1.0]
    assert goal.step([None], stop=[True]).tolist() == [1.0] and goal.finished.tolist() == [True]
    assert goal.step(["v3"]).tolist() == [0.0]  # stopped: earns nothing, ignores its entries
    signed = RewardBatch(g, "goal", goal_end="signed", threshold=0.5)
    signed.reset([R])
    signed.step(["v1"])
    assert signed.step([None], stop=[True]).tolist() == [-1.0]  # NE = 2 > 0.5
    # nDTW: start [v0]: DTW = 0 + 1 + 2 + 3 = 6 -> exp(-6 / 12); the whole reference -> 1.
    ep = RewardEpisode(g, R, "ndtw")
    start = ep.reset()
    assert start == math.exp(-6 / 12)
    gains = [ep.step(v) for v in ("v1", "v2", "v3")]
    assert ep.value == 1.0 and abs(start + sum(gains) - 1.0) <= 1e-15
    assert ep.stop() == 1.0  # 1 - 0 / 3
    # CLS without shaping: 0 per move, 1 + CLS at the end.
    cls = RewardEpisode(g, R, "cls")
    cls.reset()
    assert [cls.step(v) for v in ("v1", "v2")] == [0.0, 0.0]
    assert cls.stop() == 1.0 + M.cls(R, ["v0", "v1", "v2"], g)


walks = st.lists(st.integers(0, 63), min_size=0, max_size=10)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    episodes=st.lists(st.tuples(st.lists(st.integers(0, 63), min_size=1, max_size=10), walks), min_size=1, max_size=4),
    kind=st.sampled_from(["goal", "ndtw", "cls"]),
    keep=st.booleans(),
    shaping=st.booleans(),
    goal_end=st.sampled_from(["indicator", "signed"]),
    th=st.sampled_from([1.0, 3.0]),
    repeat=st.booleans(),
)
def test_property_batched_steps_equal_recomputation(grid, episodes, kind, keep, shaping, goal_end, th, repeat):
    """B environments of different lengths: every reward equals the from-scratch value, bit for bit."""
    dist = grid.distances
    refs = [R for R, _ in episodes]
    # Walks start at the reference start; `repeat` doubles some nodes (turning in place).
    walks_ = [[R[0], *[v for v in w for _ in range(2 if repeat and v % 3 == 0 else 1)]] for R, w in episodes]
    env = RewardBatch(grid, kind, threshold=th, keep_repeats=keep, cls_shaping=shaping, goal_end=goal_end)
    start = env.reset(refs)
    got = [[] for _ in episodes]
    ends = [None] * len(episodes)
    for t in range(1, max(map(len, walks_)) + 1):
        nodes = [w[t] if t < len(w) else None for w in walks_]
        stop = [t == len(w) for w in walks_]
        rewards = env.step(nodes, stop=stop)
        for b, w in enumerate(walks_):
            if t < len(w):
                got[b].append(rewards[b])
            elif t == len(w):
                ends[b] = rewards[b]
            else:
                assert rewards[b] == 0.0
    assert env.finished.all()
    for b, (R, w) in enumerate(zip(refs, walks_)):
        want, end = expected_rewards(kind, R, w, dist, th, keep, goal_end, shaping)
        assert got[b] == want, (b, R, w)
        assert ends[b] == end
        if kind == "ndtw":
            assert start[b] == M.ndtw(R, w[:1], dist, th)
            assert abs(start[b] + sum(got[b]) - M.ndtw(R, w, dist, th, keep_repeats=keep)) <= 1e-12
        elif kind == "cls":
            assert start[b] == M.cls(R, w[:1], dist, th)
            if shaping:
                assert abs(start[b] + sum(got[b]) - M.cls(R, w, dist, th, keep_repeats=keep)) <= 1e-12
        else:
            assert start[b] == 0.0


def test_environments_in_several_scans_through_a_graph_store(grid):
    other = NavGraph.from_connectivity("other", grid_connectivity(11, size=6))
    store = GraphStore("/nonexistent", graphs={"grid": grid, "other": other})
    rng = np.random.default_rng(2)
    scans, refs, walks_ = [], [], []
    for b in range(6):
        g = grid if b % 2 else other
        nodes = [int(rng.integers(len(g)))]
        for _ in range(8):
            nodes.append(int(rng.choice(g.neighbours[nodes[-1]])))
        scans.append(g.scan)
        refs.append([g.viewpoints[k] for k in nodes[:5]])
        walks_.append([g.viewpoints[k] for k in [nodes[0], *nodes[5:]]])
    env = RewardBatch(store, "ndtw")
    start = env.reset(refs, scans=scans)
    totals = start.copy()
    for t in range(1, 5):
        totals += env.step([w[t] for w in walks_])
    for b in range(6):
        g = store.get(scans[b])
        assert start[b] == M.ndtw(refs[b], walks_[b][:1], g)
        assert env.value[b] == M.ndtw(refs[b], walks_[b], g)
        assert abs(totals[b] - env.value[b]) <= 1e-12
    # A later reset with a new scan and another order: matrices already placed are reused, not copied.
    third = NavGraph.from_connectivity("third", grid_connectivity(12, size=5))
    store._graphs["third"] = third
    flat_before = env._flat
    again = env.reset([refs[1], [third.viewpoints[0], third.viewpoints[6]], refs[0]], scans=["grid", "third", "other"])
    assert again.tolist() == [
        M.ndtw(refs[1], refs[1][:1], grid),
        M.ndtw([third.viewpoints[0], third.viewpoints[6]], [third.viewpoints[0]], third),
        M.ndtw(refs[0], refs[0][:1], other),
    ]
    assert len(env._flat) == len(flat_before) + third.distances.size
    env.reset(refs[:2], scans=scans[:2])
    assert len(env._flat) == len(flat_before) + third.distances.size  # nothing new: no copy
    # Indices work too, and a shared NavGraph keeps the matrix as is (no copy).
    one = RewardBatch(grid, "cls", cls_shaping=True)
    one.reset([grid.indices(refs[1])])
    assert np.shares_memory(one._flat, grid.distances)
    with pytest.raises(ValueError, match="one scan id per environment"):
        env.reset(refs)


def test_errors_name_the_environment_and_change_nothing(grid):
    env = RewardBatch(grid, "ndtw")
    with pytest.raises(RuntimeError, match="reset"):
        env.step([0])
    env.reset([[0, 1, 2], [5, 6]])
    before = (env.value, env.position)
    with pytest.raises(ValueError, match="environment 1 .*'nowhere' is not a node"):
        env.step([grid.viewpoints[1], "nowhere"])
    with pytest.raises(ValueError, match="environment 0 .*node 99"):
        env.step([99, 6])
    assert np.array_equal(env.value, before[0]) and np.array_equal(env.position, before[1])
    with pytest.raises(ValueError, match="2 environments"):
        env.step([1])
    with pytest.raises(ValueError, match="environment 1: viewpoint 'nowhere' is not in scan 'grid'"):
        env.reset([[grid.viewpoints[0]], ["nowhere"]])
    with pytest.raises(ValueError, match="environment 0 .*reference path is empty"):
        env.reset([[]])
    with pytest.raises(ValueError, match="kind"):
        RewardBatch(grid, "spl")
    with pytest.raises(ValueError, match="threshold"):
        RewardBatch(grid, threshold=0)


def test_unreachable_nodes():
    g = line_graph([0, 1, 2, 10, 11], [(0, 1), (1, 2), (3, 4)])  # components {0, 1, 2} and {3, 4}
    goal = RewardBatch(g, "goal")
    with pytest.raises(ValueError, match="environment 0 .*goal cannot be reached"):
        goal.reset([[0, 3]])
    goal.reset([[0, 1, 2]])
    with pytest.raises(ValueError, match="goal cannot be reached from node 3"):
        goal.step([3])  # a jump into the other component
    # Fidelity rewards follow the metrics: nDTW / CLS fall to 0, rewards stay finite.
    for kind in ("ndtw", "cls"):
        env = RewardBatch(g, kind, cls_shaping=True)
        start = env.reset([[0, 1, 2]])[0]
        r = env.step([3])[0]
        assert r == -start and env.value[0] == 0.0
        assert env.step([2])[0] == 0.0  # DTW stays inf: every warping matches the unreachable node
        end = env.step([None], stop=[True])[0]
        assert end == (1.0 if kind == "ndtw" else 1.0 + M.cls([0, 1, 2], [0, 3, 2], g.distances))
        assert all(map(math.isfinite, (start, r, end)))
