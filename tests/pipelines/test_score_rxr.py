"""Scoring RxR end to end: an RxR-format conversion of R2R val_unseen scores exactly as the R2R file itself,
per-language summaries equal a groupby over the episode rows, follower paths score as an agent and are
compared with the metrics RxR released with them, and the README sample's follower path scores as SOURCE.md says."""

import gzip
import json
import math
from fractions import Fraction

import pyarrow.parquet as pq
import pytest

from pipelines import score
from vlnkit.evaluation.common import METRICS
from vlnkit.fixtures.rxr import r2r_instr_id, rxr_instruction_id, write_rxr_fixtures

pytestmark = pytest.mark.real_data
AGENT = "agent_outputs/rszia+rpl2024-final-group9/val_unseen_shortest_agent.json"


def run(out, *flags):
    return score.main(["--runner=DirectRunner", f"--output_dir={out}", *flags])


def episodes(out) -> list[dict]:
    return pq.read_table(sorted(out.glob("episodes-*-of-*.parquet"))).to_pylist()


@pytest.fixture(scope="module")
def runs(shared_data, r2r_dir, connectivity_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rxr_score")
    r2r_file = r2r_dir / "R2R_val_unseen.json"
    records = json.loads(r2r_file.read_text())
    files = write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp), pose_traces=False)
    preds = json.loads((shared_data / AGENT).read_text())
    # The same trajectories addressed by instruction id: half in the R2R submission layout (instr_id
    # "<instruction_id>"), half as {"instruction_id", "path"} (its viewpoints, repeats kept).
    converted = tmp / "preds.jsonl"
    with open(converted, "w") as f:
        for n, p in enumerate(preds):
            iid = rxr_instruction_id(*map(int, p["instr_id"].split("_")))
            line = (
                {"instr_id": str(iid), "trajectory": p["trajectory"]}
                if n % 2
                else {"instruction_id": iid, "path": [step[0] for step in p["trajectory"]]}
            )
            f.write(json.dumps(line) + "\n")
    common = [f"--connectivity_dir={connectivity_dir}"]
    r2r = run(tmp / "r2r", f"--dataset={r2r_file}", f"--predictions=shortest={shared_data / AGENT}", *common)
    rxr = run(
        tmp / "rxr",
        f"--dataset={files.guide}",
        f"--predictions=shortest={converted}",
        f"--predictions=human={files.follower}",
        *common,
    )
    return tmp, files, r2r, rxr, len(preds)


def test_rxr_conversion_scores_exactly_as_r2r_instruction_by_instruction(runs):
    tmp, _, r2r, rxr, n = runs
    ours = {r["instr_id"]: r for r in episodes(tmp / "r2r")}
    theirs = [r for r in episodes(tmp / "rxr") if r["agent"] == "shortest"]
    assert len(ours) == len(theirs) == n == rxr["reference_episodes"] and rxr["dead_letters"] == 0
    for row in theirs:
        want = ours[r2r_instr_id(int(row["instr_id"]))]
        assert row["language"] is not None and want["language"] is None
        for m in METRICS:  # bit for bit (nulls, unreachable distances, included)
            assert row[m] == want[m] or (math.isnan(row[m]) and math.isnan(want[m])), (row["instr_id"], m)
        assert (row["scan"], row["path"], row["non_adjacent_steps"]) == (
            want["scan"],
            want["path"],
            want["non_adjacent_steps"],
        )
    assert rxr["agents"]["shortest"]["metrics"] == r2r["metrics"]
    assert r2r["by_language"] == {} and "language" in pq.read_schema(next((tmp / "rxr").glob("episodes-*"))).names


def test_by_language_is_a_groupby_over_the_episode_rows(runs):
    tmp, _, _, rxr, n = runs
    rows = episodes(tmp / "rxr")
    for agent in ("shortest", "human"):
        block = rxr["agents"][agent]
        mine = [r for r in rows if r["agent"] == agent]
        assert sum(b["count"] for b in block["by_language"].values()) == block["count"] == len(mine) == n
        assert set(block["by_language"]) == {"en-IN", "en-US", "hi-IN", "te-IN"}
        for language, got in block["by_language"].items():
            of = [r for r in mine if r["language"] == language]
            assert got["count"] == len(of)
            for m in METRICS:
                values = [r[m] for r in of if r[m] is not None and math.isfinite(r[m])]
                exact = float(sum(map(Fraction, values)) / len(values)) if values else None
                assert got["metrics"][m] == exact, (agent, language, m)
    board = (tmp / "rxr" / "leaderboard.csv").read_text().splitlines()[0].split(",")
    assert [c for c in board if c.endswith("en-IN")] == ["sr_en-IN", "spl_en-IN", "ndtw_en-IN", "sdtw_en-IN"]
    assert "SR te-IN (%)" in (tmp / "rxr" / "leaderboard.md").read_text()


def test_follower_lines_score_as_an_agent_and_are_compared_with_their_released_metrics(runs):
    tmp, files, _, rxr, n = runs
    report = json.loads((tmp / "rxr" / "human_metrics_comparison.json").read_text())
    assert set(report) == {"human"}  # the shortest-path agent's files are not follower files
    compared = report["human"]["metrics"]
    assert set(compared) == {"ne", "sr", "spl", "dtw", "ndtw", "sdtw"}
    assert all(c["count"] == n for c in compared.values())
    # The fixture's follower metrics were computed by this library on the same graphs.
    assert all(c["max_abs_difference"] < 1e-9 for c in compared.values())
    assert 0 < rxr["agents"]["human"]["metrics"]["sr"] < 1


def test_the_readme_sample_follower_path_scores_as_source_md_says(shared_data, connectivity_dir, tmp_path):
    folder = shared_data / "rxr_sample"
    summary = run(
        tmp_path,
        f"--dataset={folder / 'rxr_sample_guide.jsonl.gz'}",
        f"--predictions=human={folder / 'rxr_sample_follower.jsonl.gz'}",
        f"--connectivity_dir={connectivity_dir}",
    )
    ((row,),) = [episodes(tmp_path)]
    assert (row["instr_id"], row["language"]) == ("26", "en-IN")
    assert row["ndtw"] == math.exp(-row["dtw"] / 15) and row["sr"] == 1.0 and row["ne"] == 0.0
    assert summary["by_language"]["en-IN"]["count"] == 1
    (follower,) = [
        json.loads(x) for x in gzip.decompress((folder / "rxr_sample_follower.jsonl.gz").read_bytes()).splitlines()
    ]
    report = json.loads((tmp_path / "human_metrics_comparison.json").read_text())["human"]["metrics"]
    # SOURCE.md: the released dtw comes from another graph revision, about 0.03 m away.
    assert report["dtw"]["max_abs_difference"] == pytest.approx(abs(row["dtw"] - follower["metrics"]["dtw"]))
    assert 0.02 < report["dtw"]["max_abs_difference"] < 0.04 and report["sr"]["max_abs_difference"] == 0.0
