"""Reading continuous episodes, ground truth, positions and simulator results: the README facts of
../shared/data/vlnce, and every malformed record as a dead letter with its file, record and reason."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from vlnkit.continuous.documents import file_kind, kind_of
from vlnkit.continuous.episodes import gt_path_for, read_episodes, read_ground_truth
from vlnkit.continuous.positions import join, read_positions
from vlnkit.continuous.results import read_results

SPLITS = {("1-2", "val_seen"): (778, 259), ("1-2", "val_unseen"): (1839, 613), ("1-3", "val_seen"): (778, 259),
          ("1-3", "val_unseen"): (1839, 613)}  # fmt: skip
AUTHORS = {  # the authors' stats_ckpt_0_*.json, as the data README lists them
    ("cwp_results", "cma", "val_unseen"): {"sr": 0.4062, "spl": 0.3550, "ndtw": 0.5506, "ne": 6.204},
    ("cwp_results", "vlnbert", "val_unseen"): {"sr": 0.4383, "spl": 0.3866, "ndtw": 0.5390, "ne": 5.759},
    ("cwp_results_val_seen", "cma", "val_seen"): {"sr": 0.5090, "spl": 0.4525, "ndtw": 0.6115},
    ("cwp_results_val_seen", "vlnbert", "val_seen"): {"sr": 0.4974, "spl": 0.4372, "ndtw": 0.5766},
}
STATS_KEYS = {"ne": "distance_to_goal", "sr": "success", "osr": "oracle_success", "spl": "spl", "ndtw": "ndtw",
              "pl": "path_length", "steps": "steps_taken", "collisions": "collisions"}  # fmt: skip


def episode_file(shared_data, version: str, split: str) -> str:
    return str(shared_data / "vlnce" / f"R2R_VLNCE_v{version}_preprocessed" / split / f"{split}.json.gz")


def write_gz(path, value) -> str:
    path.write_bytes(gzip.compress(json.dumps(value).encode()))
    return str(path)


def small_episode(eid: int, tid: int = 5, **change) -> dict:
    episode = {
        "episode_id": eid,
        "trajectory_id": tid,
        "scene_id": "mp3d/scanA/scanA.glb",
        "start_position": [0.0, 0.0, 0.0],
        "start_rotation": [0, 0, 0, 1],
        "info": {"geodesic_distance": 2.0},
        "goals": [{"position": [2.0, 0.0, 0.0], "radius": 3.0}],
        "instruction": {"instruction_text": f"go {eid}", "instruction_tokens": [1, 2]},
        "reference_path": [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]],
    }
    episode.update(change)
    return episode


# ----------------------------------------------------------------------------- real data
@pytest.mark.parametrize(("version", "split"), sorted(SPLITS))
def test_real_splits_read_whole_with_their_ground_truth(shared_data, version, split):
    path = episode_file(shared_data, version, split)
    episodes, errors = read_episodes(path)
    count, trajectories = SPLITS[version, split]
    assert errors == []
    assert len(episodes) == count and len(set(episodes.trajectory_id.tolist())) == trajectories
    assert episodes.flavour == "r2r" and episodes.gt_source == gt_path_for(path)
    assert set(episodes.language.tolist()) == {None}
    # three episodes per trajectory, k = 0, 1, 2 in episode_id order (val_seen: one R2R path has four)
    ks = np.array([int(i.rsplit("_", 1)[1]) for i in episodes.instr_id])
    assert np.bincount(ks).tolist()[:3] == [trajectories] * 3 and len(set(episodes.instr_id)) == count
    # the README's invariants: start = reference_path[0] = locations[0], goal = reference_path[-1]
    assert np.array_equal(episodes.start, episodes.reference_path.firsts())
    assert np.array_equal(episodes.goal, episodes.reference_path.lasts())
    assert np.array_equal(episodes.start, episodes.gt_locations.firsts())
    assert episodes.scan[0] in episodes.to_arrow().column("scan").to_pylist()


@pytest.mark.parametrize("split", ["val_seen", "val_unseen"])
def test_instr_ids_follow_r2r_instruction_order(shared_data, split):
    """The k-th episode of a trajectory (episode_id order) carries R2R's instruction k of that path."""
    episodes, _ = read_episodes(episode_file(shared_data, "1-2", split), gt=None)
    r2r = {r["path_id"]: r["instructions"] for r in json.loads((shared_data / "r2r" / f"R2R_{split}.json").read_text())}
    words = lambda text: text.lower().split()  # noqa: E731
    same, other = 0, 0
    for instr_id, text in zip(episodes.instr_id, episodes.instruction_text):
        path_id, k = map(int, instr_id.split("_"))
        same += words(r2r[path_id][k]) == words(text)
        other += any(words(t) == words(text) for n, t in enumerate(r2r[path_id]) if n != k)
    assert other == 0 and same >= 0.995 * len(episodes)  # a few R2R texts were revised since


def test_ground_truth_invariants(shared_data):
    """v1-2 val_unseen gt: len(locations) - 1 == forward_steps == actions.count(1), last action STOP."""
    path = gt_path_for(episode_file(shared_data, "1-2", "val_unseen"))
    raw = json.loads(gzip.decompress((shared_data / "vlnce" / path.split("vlnce/")[1]).read_bytes()))
    assert len(raw) == 1839
    for entry in raw.values():
        assert len(entry["locations"]) - 1 == entry["forward_steps"] == entry["actions"].count(1)
        assert entry["actions"][-1] == 0
    (keys, paths), errors = read_ground_truth(path)
    assert errors == [] and len(keys) == 1839
    first = str(int(keys[0]))
    assert paths.path(0).tolist() == raw[first]["locations"]


@pytest.mark.parametrize(("folder", "agent", "split"), sorted(AUTHORS))
def test_simulator_results_give_the_authors_means(shared_data, folder, agent, split):
    directory = shared_data / "vlnce" / folder / agent
    results, errors = read_results(str(directory / f"stats_ep_ckpt_0_{split}_r0_w1.json"))
    assert errors == [] and results.layout == "vlnce_stats"
    assert len(results) == (1839 if split == "val_unseen" else 778)
    published = json.loads((directory / f"stats_ckpt_0_{split}.json").read_text())
    means = results.means()
    for name, key in STATS_KEYS.items():
        assert abs(means[name] - published[key]) < 1e-9, name
    for name, value in AUTHORS[folder, agent, split].items():
        assert round(means[name], 3 if name == "ne" else 4) == value
    episodes, _ = read_episodes(episode_file(shared_data, "1-2", split), gt=None)
    assert set(results.episode_id.tolist()) == set(episodes.episode_id.tolist())


def test_third_party_positions_join_val_unseen(shared_data):
    positions, errors = read_positions(
        str(shared_data / "vlnce" / "third_party_positions" / "mln_ce_val_unseen_v1-2_positions.json")
    )
    assert errors == [] and positions.layout == "positions" and len(positions) == 420
    lengths = positions.paths.lengths()
    assert lengths.min() == 1 and lengths.max() == 500
    episodes, _ = read_episodes(episode_file(shared_data, "1-2", "val_unseen"))
    matched, missing_episode = join(episodes, positions)
    assert missing_episode == [] and len(matched.episode_rows) == 420
    gap = np.abs(positions.paths.firsts()[matched.position_rows] - episodes.start[matched.episode_rows]).max(axis=1)
    assert (gap < 1e-6).sum() == 402  # equal up to float32 rounding
    assert ((gap > 0.2) & (gap < 0.3)).sum() == 18


# ----------------------------------------------------------------------------- layouts and malformed records
def test_every_layout_is_told_by_content():
    assert kind_of({"episodes": []}) == "episodes"
    assert kind_of({"1": {"locations": [[0, 0, 0]]}}) == "ground_truth"
    assert kind_of({"1": [{"position": [0, 0, 0]}]}) == "vlnce_inference"
    assert kind_of({"1": [[0, 0, 0]]}) == "positions"
    assert kind_of({"1": {"success": 1.0}}) == "vlnce_stats"
    assert kind_of({"id": 3, "success": 1.0}) == "navid_stats"
    assert kind_of([{"instruction_id": 1, "path": [[0, 0, 0]]}]) == "path_lines"
    assert kind_of([{"episode_id": 1, "success": 1}]) == "result_lines"
    assert kind_of({}) is None and kind_of([]) is None


def test_an_object_wrapping_records_is_no_continuous_layout_and_says_what_it_wraps():
    from vlnkit.continuous.documents import head_kind, wrapped_records

    r2r = {"distance": 9.5, "scan": "s", "path_id": 4, "path": ["a", "b"], "heading": 0.0, "instructions": ["Go."]}
    one_line = json.dumps({"data": [r2r, r2r]}).encode()
    indented = json.dumps({"data": [r2r] * 3000}, indent=2).encode()  # longer than the head that is sniffed
    for text in (one_line, indented):
        assert kind_of(json.loads(text)) is None
        assert head_kind(text[:65536]) is None
        assert wrapped_records(text[:65536]) == ("data", "R2R records")
    later_key = json.dumps({"version": 2, "split": "val_seen", "data": [r2r]}).encode()  # not the first key
    assert wrapped_records(later_key) == ("data", "R2R records") and head_kind(later_key) is None
    assert wrapped_records(json.dumps({"version": [{"instr_id": "4_0", "trajectory": []}]}).encode()) == (
        "version",
        "predictions (R2R submission layout)",
    )
    # Not wrappers: a JSON Lines record (its own list of objects is not records), and every continuous layout.
    timed = {"instruction_id": 1, "path": ["a"], "timed_instruction": [{"word": "go", "start_time": 0.0}]}
    for value in (timed, {"7": [{"position": [0, 0, 0]}]}, {"7": {"success": 1.0}}, {"episodes": [{"episode_id": 1}]}):
        assert wrapped_records(json.dumps(value).encode()) is None, value


def test_file_kind_reads_the_file(shared_data, tmp_path):
    vlnce = shared_data / "vlnce"
    assert file_kind(str(vlnce / "cwp_results" / "cma" / "stats_ep_ckpt_0_val_unseen_r0_w1.json")) == "vlnce_stats"
    assert file_kind(str(vlnce / "third_party_positions" / "mln_ce_val_unseen_v1-2_positions.json")) == "positions"
    assert file_kind(episode_file(shared_data, "1-2", "val_seen")) == "episodes"
    assert file_kind(str(tmp_path / "missing.json")) is None


def test_gzip_is_told_by_its_magic_number_and_wrong_files_are_named(tmp_path):
    plain = tmp_path / "episodes.data"  # gzip without a .gz name
    plain.write_bytes(gzip.compress(json.dumps({"episodes": [small_episode(1)]}).encode()))
    episodes, errors = read_episodes(str(plain), gt=None)
    assert errors == [] and episodes.instr_id.tolist() == ["5_0"]
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps({"1": {"success": 1.0}}))
    _, errors = read_positions(str(stats))
    assert [e.reason for e in errors] == [
        "expected agent positions (vlnce_inference, positions, path_lines), but the file is a vlnce_stats file"
    ]
    _, errors = read_episodes(str(stats), gt=None)
    assert "expected an episode file" in errors[0].reason and errors[0].record == ""


def test_malformed_episodes_are_dead_letters(tmp_path):
    path = write_gz(
        tmp_path / "val.json.gz",
        {
            "episodes": [
                small_episode(1),
                small_episode("x"),
                small_episode(3, start_position=[0, 0]),
                small_episode(4, reference_path=[[0, 0, 0], [1, 0, float("nan")]]),
                small_episode(5, goals=[]),
                small_episode(1),
                small_episode("6"),
            ]
        },
    )
    episodes, errors = read_episodes(path, gt=None)
    assert episodes.episode_id.tolist() == [1, 6] and episodes.instr_id.tolist() == ["5_0", "5_1"]
    reasons = {e.record: e.reason for e in errors}
    assert reasons == {
        "#1 (episode_id='x')": "'episode_id' must be an integer (or a string holding one), got 'x'",
        "#2 (episode_id=3)": "'start_position' must be three finite numbers [x, y, z], got [0, 0]",
        "#3 (episode_id=4)": "'reference_path' position 1 must be three finite numbers [x, y, z], got [1, 0, nan]",
        "#4 (episode_id=5)": "'goals' must be a non-empty list of {position: [x, y, z], radius}, got an empty list",
        "#5 (episode_id=1)": "episode_id 1 appears again (first at #0)",
    }
    assert all(e.source == path for e in errors)


def test_a_ground_truth_that_does_not_match_the_episodes(tmp_path):
    path = write_gz(tmp_path / "val.json.gz", {"episodes": [small_episode(1), small_episode(2)]})
    gt = write_gz(
        tmp_path / "val_gt.json.gz",
        {
            "1": {"locations": [[0, 0, 0], [1, 0, 0]]},
            "9": {"locations": [[0, 0, 0]]},
            "7": {"locations": [[0, "a", 0]]},
        },
    )
    assert gt == gt_path_for(path)
    episodes, errors = read_episodes(path)
    assert episodes.episode_id.tolist() == [1] and episodes.gt_locations.path(0).tolist() == [[0, 0, 0], [1, 0, 0]]
    assert sorted((e.source, e.record, e.reason) for e in errors) == sorted([
        (gt, "episode_id=7", "'locations' position 0 must be three finite numbers [x, y, z], got [0, 'a', 0]"),
        (path, "episode_id=2", f"no ground-truth path for episode 2 in {gt}"),
        (gt, "episode_id=9", f"ground truth for episode 9, which {path} does not have"),
    ])  # fmt: skip
    with pytest.raises(ValueError, match="no ground-truth file"):
        read_episodes(path, gt=None)[0].reference("gt")


def test_malformed_positions_are_dead_letters(tmp_path):
    inference = tmp_path / "inference.json"
    inference.write_text(json.dumps({
        "1": [{"position": [0, 0, 0], "heading": 0.1, "stop": False}, {"position": [1, 0, 0], "heading": 0.2, "stop": True}],
        "2": [{"position": [0, 0], "heading": 0, "stop": False}],
        "x": [{"position": [0, 0, 0], "stop": True}],
        "3": [],
        "4": [{"position": [0, 0, 0], "heading": 0.0, "stop": False}],
    }))  # fmt: skip
    positions, errors = read_positions(str(inference))
    assert positions.layout == "vlnce_inference" and positions.keys.tolist() == [1, 4]
    assert positions.stopped.tolist() == [True, False]
    assert {e.record: e.reason for e in errors} == {
        "episode_id='2'": "step 0: 'position' must be three finite numbers [x, y, z], got [0, 0]",
        "episode_id='x'": "the key must be an integer id (or a string holding one), got 'x'",
        "episode_id='3'": "a trajectory must be a non-empty list of steps {position, heading, stop}",
    }
    lines = tmp_path / "submission.jsonl"
    lines.write_text(
        '{"instruction_id": 7, "path": [[0, 0, 0], [1, 1, 1]]}\n{"instruction_id": 8, "path": [[0, 0, Infinity]]}\n'
        '{"instruction_id": 7, "path": [[0, 0, 0]]}\nnot json\n'
    )
    positions, errors = read_positions(str(lines))
    assert positions.layout == "path_lines" and positions.key_kind == "instruction_id"
    assert positions.keys.tolist() == [7]
    assert {e.record: e.reason for e in errors} == {
        "line 2": "'path' position 0 must be three finite numbers [x, y, z], got [0, 0, inf]",
        "line 3": "instruction_id 7 appears again (first: line 1)",
        "line 4": "invalid JSON (Expecting value: line 1 column 1 (char 0))",
    }


def test_fast_and_record_by_record_paths_agree(tmp_path):
    data = {"10": [[0, 0, 0], [0.5, 0, 0]], "11": [[1, 2, 3]]}
    good = tmp_path / "good.json"
    good.write_text(json.dumps(data))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**data, "12": [[0, 0]]}))
    fast, _ = read_positions(str(good))
    slow, errors = read_positions(str(bad))
    assert len(errors) == 1
    assert fast.keys.tolist() == slow.keys.tolist() and np.array_equal(fast.paths.points, slow.paths.points)


def test_malformed_results_are_dead_letters(tmp_path):
    stats = tmp_path / "stats_ep_ckpt_0_val_r0_w1.json"
    stats.write_text(json.dumps({
        "1": {"distance_to_goal": 1.5, "success": 1.0, "spl": 0.9, "ndtw": 0.8, "steps_taken": 4},
        "2": {"distance_to_goal": "far", "success": 0.0},
        "3": {"distance_to_goal": 4.0, "success": 0.5},
        "4": {"distance_to_goal": 4.0, "success": 0.0, "spl": 1.5},
        "5": {"distance_to_goal": 4.0, "success": False},
    }))  # fmt: skip
    results, errors = read_results(str(stats))
    assert results.episode_id.tolist() == [1, 5]
    assert results.metrics["sr"].tolist() == [1.0, 0.0] and np.isnan(results.metrics["ndtw"][1])
    assert results.missing == {"spl": 1, "ndtw": 1, "steps": 1}
    assert {e.record: e.reason for e in errors} == {
        "episode_id='2'": "'distance_to_goal' must be a finite number >= 0, got 'far'",
        "episode_id='3'": "'success' must be 0 or 1 (or true/false), got 0.5",
        "episode_id='4'": "'spl' must be a number in [0, 1], got 1.5",
    }


def test_result_lines_and_navid_stats(tmp_path):
    lines = tmp_path / "result.json"
    lines.write_text(
        '{"scene_id": "zsNo4HB9uLZ", "episode_id": "1", "success": 1.0, "spl": 0.5, "os": 1.0, "ne": 2.0, "steps": 40, '
        '"episode_instruction": "go"}\n'
        '{"scene_id": "zsNo4HB9uLZ", "episode_id": 2, "success": 0.0, "spl": 0.0, "os": 1.0, "ne": 5.0, "steps": 60, '
        '"ndtw": 0.4}\n'
    )
    results, errors = read_results(str(lines))
    assert errors == [] and results.layout == "result_lines"
    assert results.episode_id.tolist() == [1, 2] and results.scan.tolist() == ["zsNo4HB9uLZ"] * 2
    assert sorted(results.metrics) == ["ndtw", "ne", "osr", "spl", "sr", "steps"]
    assert results.missing == {"ndtw": 1}
    navid = tmp_path / "stats_9.json"
    navid.write_text(json.dumps({"distance_to_goal": 1.0, "success": 1.0, "spl": 0.7, "path_length": 9.0,
                                 "oracle_success": 1.0, "id": "9"}))  # fmt: skip
    results, errors = read_results(str(navid))
    assert errors == [] and results.layout == "navid_stats" and results.episode_id.tolist() == [9]
    assert results.metrics["pl"].tolist() == [9.0]


def test_the_design_page_shows_the_result_mapping_of_the_code():
    """docs/design.md's table of result keys is RESULT_METRICS, layout by layout."""
    from pathlib import Path

    from vlnkit.continuous.results import RESULT_METRICS

    page = (Path(__file__).resolve().parents[3] / "docs" / "design.md").read_text()
    head = next(line for line in page.splitlines() if line.startswith("| toolkit | `vlnce_stats`"))
    layouts = [cell.strip().split("`")[1] for cell in head.strip("|").split("|")[1:]]
    lines = page.splitlines()
    rows = lines[lines.index(head) + 2 :]
    rows = rows[: next(n for n, line in enumerate(rows) if not line.startswith("|"))]
    shown = {layout: set() for layout in layouts}
    for row in rows:
        cells = [cell.strip().strip("`") for cell in row.strip("|").split("|")]
        for layout, key in zip(layouts, cells[1:]):
            if key:
                shown[layout].add((key, cells[0]))
    assert shown == {layout: set(pairs) for layout, pairs in RESULT_METRICS.items()}
