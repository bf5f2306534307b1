"""Metrics from positions against plain formulas written here, the gt-path-as-agent identities on real
data, the euclidean-goal bounds, and the RxR-Habitat fixture scored the same as its R2R-CE source."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.oracles.fastdtw_rules import distance, plain_dtw
from vlnkit.continuous.documents import instruction_keyed
from vlnkit.continuous.episodes import read_episodes
from vlnkit.continuous.points import PointPaths
from vlnkit.continuous.positions import Positions, read_positions
from vlnkit.continuous.schemas import EUCLIDEAN
from vlnkit.continuous.scoring import score_episodes, score_paths
from vlnkit.fixtures.rxr_habitat import fixture_language, write_rxr_habitat

TH = 3.0


def plain_metrics(reference, query) -> dict:
    """The CLS and nDTW papers' definitions with point distances, one pair, plain Python."""
    q = [p for n, p in enumerate(query) if n == 0 or list(p) != list(query[n - 1])]
    length = lambda ps: sum(distance(a, b) for a, b in zip(ps, ps[1:]))  # noqa: E731
    pc = sum(math.exp(-min(distance(r, p) for p in q) / TH) for r in reference) / len(reference)
    epl = pc * length(reference)
    ls = 1.0 if epl + abs(epl - length(q)) == 0 else epl / (epl + abs(epl - length(q)))
    dtw = plain_dtw(q, reference)
    return {
        "pl": length(q),
        "pc": pc,
        "ls": ls,
        "cls": pc * ls,
        "dtw": dtw,
        "ndtw": math.exp(-dtw / (TH * len(reference))),
    }


def walks(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for k in range(count):
        r = rng.normal(scale=0.3, size=(int(rng.integers(1, 30)), 3)).cumsum(axis=0)
        q = rng.normal(scale=0.3, size=(int(rng.integers(1, 60)), 3)).cumsum(axis=0)
        if k % 2:
            q = np.repeat(q, rng.integers(1, 4, size=len(q)), axis=0)
        yield r, q


def test_metrics_equal_the_plain_formulas():
    cases = list(walks(0, 200))
    out = score_paths(
        PointPaths.from_lists([r.tolist() for r, _ in cases]), PointPaths.from_lists([q.tolist() for _, q in cases])
    )
    for b, (r, q) in enumerate(cases):
        want = plain_metrics(r.tolist(), q.tolist())
        for name, value in want.items():
            assert abs(out[name][b] - value) <= 1e-9, name
        assert out["steps"][b] == len(q) - 1


def test_a_hand_worked_pair():
    # R along x, 1 m apart; Q (a repeat dropped) goes up 1 m, across and back down: PL 4; the best
    # alignment pairs r0 with q0 and q1 (0 + 1), r1 with q2 (sqrt 2), r2 with q3 (0): DTW 1 + sqrt 2
    reference = [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    query = [[0, 0, 0], [0, 0, 0], [0, 1, 0], [2, 1, 0], [2, 0, 0]]
    out = score_paths(PointPaths.from_lists([reference]), PointPaths.from_lists([query]), success=[1])
    assert out["pl"][0] == 4.0 and out["steps"][0] == 4.0
    assert out["dtw"][0] == 1 + math.sqrt(2)
    assert out["ndtw"][0] == math.exp(-(1 + math.sqrt(2)) / 9.0) == out["sdtw"][0]
    pc = (1 + math.exp(-1 / 3) + 1) / 3  # the middle reference point is 1 m from Q's nearest position
    assert out["pc"][0] == pytest.approx(pc, abs=1e-15)
    epl = pc * 2.0
    assert out["ls"][0] == pytest.approx(epl / (epl + abs(epl - 4.0)), abs=1e-15)
    kept = score_paths(PointPaths.from_lists([reference]), PointPaths.from_lists([query]), keep_repeats=True)
    assert kept["dtw"][0] == 1 + math.sqrt(2) and kept["pl"][0] == 4.0  # the repeat pairs with r0 at distance 0


def test_gt_paths_as_positions_score_ndtw_one_and_their_own_length(shared_data):
    path = shared_data / "vlnce" / "R2R_VLNCE_v1-2_preprocessed" / "val_unseen" / "val_unseen.json.gz"
    episodes, errors = read_episodes(str(path))
    assert errors == []
    gt = episodes.gt_locations
    own = Positions("gt", "positions", "episode_id", episodes.episode_id, gt)
    expected_length = np.array(
        [sum(distance(a, b) for a, b in zip(p, p[1:])) for p in (gt.path(i) for i in range(len(gt)))]
    )
    for mode in ("exact", "fastdtw"):
        table, matched, missing = score_episodes(episodes, own, dtw=mode)
        assert missing == [] and len(table) == 1839 and len(matched.missing) == 0
        assert table.column("ndtw").to_pylist() == [1.0] * 1839
        assert np.abs(table.column("pl").to_numpy() - expected_length).max() < 1e-9
        assert table.column("cls").to_pylist() == [1.0] * 1839
    # against reference_path (the few R2R viewpoints, |R| about 6) the dense gt path is far from perfect
    table, _, _ = score_episodes(episodes, own, reference="reference_path")
    assert (
        0.0 < float(np.mean(table.column("ndtw").to_numpy())) < 0.5 and min(table.column("pc").to_pylist()) > 0.85
    )  # it passes near every viewpoint


def test_euclidean_goal_metrics_are_named_bounds():
    goal = [[3.0, 0, 0], [3.0, 0, 0], [10.0, 0, 0]]
    query = [[[0, 0, 0], [0, 0, 0]], [[0, 0, 0], [3, 4, 0], [0, 0, 0]], [[0, 0, 0], [4, 0, 0], [9, 0, 0], [0, 0, 0]]]
    reference = [[[0, 0, 0], [3, 0, 0]]] * 3
    kwargs = dict(goal_distance="euclidean", goal=goal, shortest=[3.5, np.nan, 10.0])
    out = score_paths(PointPaths.from_lists(reference), PointPaths.from_lists(query), **kwargs)
    assert set(EUCLIDEAN) <= set(out) and "sr" not in out and "ne" not in out
    assert out["ne_euclidean"].tolist() == [3.0, 3.0, 10.0]
    assert out["one_euclidean"].tolist() == [3.0, 3.0, 1.0]
    assert out["sr_euclidean"].tolist() == [1.0, 1.0, 0.0]  # "le": exactly d_th counts
    assert out["osr_euclidean"].tolist() == [1.0, 1.0, 1.0]
    # SPL: the geodesic start-goal distance where given (3.5 > PL 0 -> 1), else the straight line (3 / PL 10)
    assert out["spl_euclidean"].tolist() == [1.0, 0.3, 0.0]
    strict = score_paths(PointPaths.from_lists(reference), PointPaths.from_lists(query), success_rule="lt", **kwargs)
    assert strict["sr_euclidean"].tolist() == [0.0, 0.0, 0.0] and strict["osr_euclidean"].tolist() == [0.0, 0.0, 1.0]
    stopped = score_paths(
        PointPaths.from_lists(reference), PointPaths.from_lists(query), stopped=[False, True, True], **kwargs
    )
    assert stopped["sr_euclidean"].tolist() == [0.0, 1.0, 0.0]
    assert stopped["sdtw_euclidean"].tolist() == (stopped["sr_euclidean"] * stopped["ndtw"]).tolist()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"dtw": "fast"}, "dtw must be one of"),
        ({"fastdtw_rules": "cython"}, "fastdtw_rules must be one of"),
        ({"radius": 0}, "radius must be an integer >= 1"),
        ({"threshold": 0}, "threshold must be a finite number > 0"),
        ({"goal_distance": "geodesic"}, "goal_distance must be None or 'euclidean'"),
        ({"goal_distance": "euclidean"}, "needs the goal positions"),
        ({"success": [0.5]}, "success must be 0 or 1"),
    ],
)
def test_bad_options_are_refused(change, message):
    one = PointPaths.from_lists([[[0, 0, 0]]])
    with pytest.raises(ValueError, match=message):
        score_paths(one, one, **change)


def test_shapes_are_checked():
    one = PointPaths.from_lists([[[0, 0, 0]]])
    with pytest.raises(ValueError, match="1 reference paths but 2 query paths"):
        score_paths(one, PointPaths.from_lists([[[0, 0, 0]], [[1, 1, 1]]]))
    with pytest.raises(ValueError, match="query path #0 is empty"):
        score_paths(one, PointPaths.from_lists([[]]))


def test_point_paths_round_trip_through_arrow_and_take():
    paths = PointPaths.from_lists([[[0, 0, 0]], [[1, 2, 3], [4, 5, 6]], [[7, 8, 9]]])
    back = PointPaths.from_arrow(paths.to_arrow().slice(1, 2))
    assert back.path(0).tolist() == [[1, 2, 3], [4, 5, 6]] and back.path(1).tolist() == [[7, 8, 9]]
    taken = paths.take([2, 1])
    assert taken.lengths().tolist() == [1, 2] and taken.path(1).tolist() == [[1, 2, 3], [4, 5, 6]]


def test_rxr_habitat_fixture_scores_as_its_r2r_ce_source(shared_data, tmp_path):
    source = shared_data / "vlnce" / "R2R_VLNCE_v1-2_preprocessed" / "val_seen" / "val_seen.json.gz"
    episodes_path, gt_path = write_rxr_habitat(str(source), str(tmp_path))
    assert episodes_path.endswith("val_seen_guide.json.gz") and gt_path.endswith("val_seen_guide_gt.json.gz")
    r2r, _ = read_episodes(str(source))
    rxr, errors = read_episodes(episodes_path)
    assert errors == [] and rxr.flavour == "rxr" and rxr.gt_source == gt_path
    assert rxr.episode_id.tolist() == r2r.episode_id.tolist()
    # instruction ids 10 x path_id + k from the R2R instr_id, languages from RxR's four by a stable hash
    expected = [10 * int(i.split("_")[0]) + int(i.split("_")[1]) for i in r2r.instr_id]
    assert rxr.instruction_id.tolist() == expected and rxr.instr_id.tolist() == [str(i) for i in expected]
    assert rxr.language.tolist() == [fixture_language(i) for i in expected]
    assert set(rxr.language.tolist()) == {"en-IN", "en-US", "hi-IN", "te-IN"}
    # an agent's positions, as an RxR-Habitat submission (by instruction id) and as plain positions
    rng = np.random.default_rng(0)
    noisy = [
        (p + rng.normal(scale=0.2, size=p.shape)).tolist() for p in (r2r.gt_locations.path(i) for i in range(len(r2r)))
    ]
    lines = tmp_path / "submission.jsonl"
    lines.write_text("".join(json.dumps({"instruction_id": i, "path": p}) + "\n" for i, p in zip(expected, noisy)))
    plain = tmp_path / "positions.json"
    plain.write_text(json.dumps({str(e): p for e, p in zip(r2r.episode_id.tolist(), noisy)}))
    by_instruction, errors_rxr = read_positions(str(lines))
    by_episode, errors_r2r = read_positions(str(plain))
    assert errors_rxr == errors_r2r == [] and by_instruction.key_kind == "instruction_id"
    table_rxr, _, missing_rxr = score_episodes(rxr, by_instruction)
    table_r2r, _, missing_r2r = score_episodes(r2r, by_episode)
    assert missing_rxr == missing_r2r == []
    for name in ("episode_id", "ndtw", "cls", "pl"):
        assert table_rxr.column(name).to_pylist() == table_r2r.column(name).to_pylist()
    assert set(table_rxr.column("language").to_pylist()) == {"en-IN", "en-US", "hi-IN", "te-IN"}
    # R2R-CE episodes cannot take a submission keyed by RxR instruction ids
    _, _, unknown = score_episodes(r2r, by_instruction)
    assert len(unknown) == len(r2r) and "without instruction ids" in unknown[0].reason


def test_instruction_keyed_tells_rxr_habitat_files_from_their_first_bytes(shared_data, tmp_path):
    """What the score job asks before `--bootstrap_unit=path`: the same answer as `read_episodes`' flavour
    for an R2R-CE file and its RxR-Habitat twin, and False for anything that is not an episode file."""
    source = shared_data / "vlnce" / "R2R_VLNCE_v1-2_preprocessed" / "val_seen" / "val_seen.json.gz"
    episodes_path, gt_path = write_rxr_habitat(str(source), str(tmp_path))
    assert [instruction_keyed(p) for p in (str(source), episodes_path)] == [False, True]
    assert [read_episodes(p)[0].flavour for p in (str(source), episodes_path)] == ["r2r", "rxr"]
    (tmp_path / "r2r.json").write_text(json.dumps([{"path_id": 1, "instructions": ["go"]}]))
    assert not any(instruction_keyed(p) for p in (gt_path, str(tmp_path / "r2r.json"), str(tmp_path / "none.gz")))


def test_threads_give_the_same_bits(monkeypatch):
    """Large batches are split over threads (`vlnkit.parallel`); each range writes its own rows."""
    import vlnkit.parallel

    cases = list(walks(3, 300))
    reference = PointPaths.from_lists([r.tolist() for r, _ in cases])
    query = PointPaths.from_lists([q.tolist() for _, q in cases])
    for mode in ("exact", "fastdtw"):
        one = score_paths(reference, query, dtw=mode)
        monkeypatch.setattr(vlnkit.parallel, "PARALLEL_WORK", 1)
        monkeypatch.setattr(vlnkit.parallel, "MAX_THREADS", 3)
        many = score_paths(reference, query, dtw=mode)
        monkeypatch.undo()
        assert all(np.array_equal(one[name], many[name]) for name in one)
