"""zhao2023's human followers scored by the score job, fed back to score_instructions as outcomes (issue 48,
point 4): the followers' own paths (`human_annotation.path`) must give the file's success, SPL, nDTW, SDTW
and navigation error, and the tau-b table from the episode rows must be the one from the file's
`human_scores`.

The score job's dataset is built from the file itself (each path's own `path`, `heading` and `distance`; path
4554 follows an older R2R revision than ../shared/data/r2r), with enough instructions per path for the
speakers' ids (`<path_id>_<k>`, k the sample index, up to 10). The human row's ids (`<path_id>_0_<ref>`) are
no score-job episode id, so its followers are scored under `<path_id>_0` and checked per episode, and the
tau-b comparison runs on the 12 speakers.
"""

from __future__ import annotations

import glob
import json

import numpy as np
import pytest

from pipelines import score, score_instructions

# file outcome -> episode-row metric
SAME = {"score": "sr", "spl": "spl", "ndtw": "ndtw", "sdtw": "sdtw", "dist": "ne"}
# The episodes whose recorded walk (`human_annotation.path`) is not the one the file scored: its length
# (`human_scores.path_len`) differs from the walk's (4.8 m vs 13.6 m for gpt_beam 1365; 157.6 m vs 15.1 m
# for gpt_pi-clip 185), and so do every outcome but the rating.
NOT_THE_WALK = {
    ("speaker-gpt_beam", "1365"),
    ("speaker-gpt_pi-clip-10vln", "185"),
    ("speaker-lstm_pi-clip-10vln", "2907"),
    ("human-reference", "355"),
    ("human-reference", "5231"),
}
HUMAN = "human-reference"


def _episode_id(system: str, record: dict) -> str:
    return record["instr_id"].rsplit("_", 1)[0] if system == HUMAN else record["instr_id"]


@pytest.fixture(scope="module")
def followed(tmp_path_factory, shared_data):
    """The score job's run on the followers' paths (13 agents x 75 episodes) and the file."""
    tmp = tmp_path_factory.mktemp("followed")
    data = json.loads((shared_data / "speaker" / "zhao2023_coop_human_eval" / "human_eval_dataset.json").read_text())
    first, k_max = {}, {}
    for records in data.values():
        for p, r in records.items():
            first.setdefault(p, r)
            k_max[p] = max(k_max.get(p, 0), int(r["instr_id"].split("_")[1]))
    dataset = [
        {k: r[k] for k in ("scan", "path", "heading", "distance")}
        | {"path_id": int(p), "instructions": [""] * (k_max[p] + 1)}
        for p, r in first.items()
    ]
    (tmp / "dataset.json").write_text(json.dumps(dataset))
    flags = []
    for system, records in data.items():
        walks = [
            {"instr_id": _episode_id(system, r), "trajectory": r["human_annotation"]["path"]} for r in records.values()
        ]
        (tmp / f"{system}.json").write_text(json.dumps(walks))
        flags.append(f"--predictions={system}={tmp / f'{system}.json'}")
    summary = score.main(
        [
            "--runner=DirectRunner",
            f"--dataset={tmp / 'dataset.json'}",
            f"--connectivity_dir={shared_data / 'connectivity'}",
            "--bootstrap=0",
            f"--output_dir={tmp / 'score'}",
            *flags,
        ]
    )
    return tmp, data, summary


def test_followers_paths_give_the_files_outcomes(followed):
    """Every episode's success, SPL, nDTW, SDTW and NE from the score job equal the file's, except the five
    whose recorded walk is not the one the file scored (named above; each differs in every outcome)."""
    import pyarrow.parquet as pq

    tmp, data, _ = followed
    rows = pq.read_table(sorted(glob.glob(str(tmp / "score" / "episodes-*.parquet")))).to_pylist()
    mine = {(r["agent"], r["instr_id"]): r for r in rows}
    assert len(mine) == 975
    differ = set()
    for system, records in data.items():
        for p, r in records.items():
            e = mine[(system, _episode_id(system, r))]
            gap = max(abs(r["human_scores"][a] - e[b]) for a, b in SAME.items())
            if gap > 1e-6:
                differ.add((system, p))
            assert abs(r["human_scores"]["path_len"] - e["pl"]) <= 1e-6 or (system, p) in NOT_THE_WALK
    assert differ == NOT_THE_WALK


def test_tau_table_from_episode_rows_is_the_files(followed, tmp_path):
    """The 12 speakers, with the file's outcomes of the three speaker episodes above set to the score
    job's (their walk and their outcomes disagree in the file): the episode outcomes (`--outcomes`, the
    rows' agents naming the systems) give the tau-b table of the file's own `human_scores`, point and
    interval, at both levels; the human row's episode rows and instructions are dead letters (ids apart)."""
    import pyarrow.parquet as pq

    tmp, data, _ = followed
    rows = pq.read_table(sorted(glob.glob(str(tmp / "score" / "episodes-*.parquet")))).to_pylist()
    mine = {(r["agent"], r["instr_id"]): r for r in rows}
    speakers = {s: records for s, records in data.items() if s != HUMAN}
    for system, p in NOT_THE_WALK:
        if system in speakers:
            r = speakers[system][p]
            e = mine[(system, r["instr_id"])]
            r["human_scores"].update({a: e[b] for a, b in SAME.items()})
    (tmp_path / "speakers.json").write_text(json.dumps(speakers))
    summary = score_instructions.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={tmp_path / 'si'}",
            "--bootstrap=50",
            f"--predictions=zhao={tmp_path / 'speakers.json'}",
            f"--outcomes={tmp / 'score'}",
        ]
    )
    counts = summary["episode_outcomes"]
    assert counts["episode_rows"] == 975 and counts["joined"] == 900
    assert counts["episode rows of systems not scored"] == 75 and summary["dead_letters"] == 75
    means = counts["means"]  # what the report draws the systems against
    for system, records in speakers.items():
        for a, b in SAME.items():
            mean = np.mean([r["human_scores"][a] for r in records.values()])
            assert means[system][f"episode_{b}"] == pytest.approx(mean, abs=1e-7), (system, a)  # SPL: 5e-8 apart
    agreement = summary["agreement"]
    for a, b in SAME.items():
        theirs, ours = agreement[a], agreement[f"episode_{b}"]
        assert sorted(theirs) == sorted(ours) == ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "cider_d", "rouge_l"]
        for metric in theirs:
            for level in ("instance", "system"):
                t, o = theirs[metric][level], ours[metric][level]
                assert t["n"] == o["n"] == (900 if level == "instance" else 12)
                assert o["tau_b"] == pytest.approx(t["tau_b"], abs=1e-12), (a, metric, level)
                assert np.allclose(o["interval"], t["interval"], atol=1e-12), (a, metric, level)


def _small_run(tmp_path, episodes: dict, *outcomes: str, extra=()):
    """Three instructions of system s (own references) and a hand-made episode file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    system = {
        f"{p}_0": {"generated_instr": f"walk to room {p} and stop", "instructions": ["walk to the room", "stop there"]}
        for p in (1, 2, 3)
    }
    (tmp_path / "s.json").write_text(json.dumps(system))
    n = len(episodes["instr_id"])
    metrics = {
        m: pa.array([0.5 + 0.1 * k for k in range(n)], pa.float64()) for m in ("sr", "spl", "ndtw", "sdtw", "ne")
    }
    pq.write_table(pa.table({**episodes, **metrics}), tmp_path / "episodes-00000-of-00001.parquet")
    flags = [f"--outcomes={v.format(tmp_path / 'episodes-00000-of-00001.parquet')}" for v in outcomes]
    return score_instructions.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={tmp_path / 'out'}",
            "--bootstrap=0",
            f"--predictions=s={tmp_path / 's.json'}",
            *flags,
            *extra,
        ]
    )


def test_every_row_that_does_not_join_is_a_dead_letter_and_counted(tmp_path):
    episodes = {"agent": ["s", "s", "x"], "instr_id": ["1_0", "9_0", "1_0"]}
    summary = _small_run(tmp_path, episodes, "{}", extra=["--max_failure_fraction=0.7"])  # 4 of 6 rows do not join
    counts = summary["episode_outcomes"]
    assert counts["joined"] == 1 and counts["episode_rows"] == 3
    assert (
        counts["episode rows of systems not scored"] == 1 and counts["episode rows naming no scored instruction"] == 1
    )
    assert counts["instructions without an episode row"] == 2 and summary["dead_letters"] == 4
    letters = [json.loads(x) for x in (tmp_path / "out" / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    assert sorted(x["record"] for x in letters) == ["s/2_0", "s/3_0", "s/9_0", "x/1_0"]
    assert all(x["stage"] == "outcomes" and x["reason"] for x in letters)
    assert summary["instructions"] == 3 and (tmp_path / "out" / "_SUCCESS").exists()


def test_rows_of_two_agents_under_one_name_fail_the_run(tmp_path):
    """SYSTEM=FILES holding two agents: the file is a dead letter naming both, nothing joins, the run fails
    (exit 3, nothing published); a file that is not Parquet is refused before the run (exit 2)."""
    with pytest.raises(SystemExit) as stop:
        _small_run(tmp_path, {"agent": ["s", "x"], "instr_id": ["1_0", "2_0"]}, "s={}")
    assert stop.value.code == 3 and not (tmp_path / "out" / "_SUCCESS").exists()
    (tmp_path / "rows.json").write_text("[]")
    with pytest.raises(SystemExit) as stop:
        _small_run(tmp_path / "..", {"agent": ["s"], "instr_id": ["1_0"]}, f"s={tmp_path / 'rows.json'}")
    assert stop.value.code == 2
