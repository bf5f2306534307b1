"""The report job's comparison page, end to end: a real score job's output on R2R val_unseen (two agents,
300 episodes each) in, comparison.html out, looked at in headless Chromium."""

from __future__ import annotations

import json
import os
import re

import pytest

from pipelines import report, score
from tests.vlnkit.reports.browser import Browser, draw_episode, require_chromium

pytestmark = pytest.mark.real_data

AGENTS = {  # two real agents of val_unseen: a trained seq2seq agent and a random walk
    "seq2seq": "agent_outputs/weituo12321+PREVALENT_R2R/seq2seq_teacher_imagenet_val_unseen_iter_36000.json",
    "random": "agent_outputs/rszia+rpl2024-final-group9/val_unseen_random_agent.json",
}
PATHS = 100  # the first 100 paths of val_unseen: 300 episodes on 10 scans
SCREENSHOTS = os.environ.get("VLNKIT_SCREENSHOTS")  # a folder to keep the screenshots in, for looking at them


def run_report(out, *flags):
    return report.main(["--runner=DirectRunner", f"--output_dir={out}", "--draw=0", *flags])


@pytest.fixture(scope="module")
def scored(tmp_path_factory, shared_data, r2r_dir, connectivity_dir):
    """The score job's output folder (with --bootstrap, for comparing its intervals with the page's)."""
    tmp = tmp_path_factory.mktemp("comparison")
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:PATHS]
    dataset = tmp / "val_unseen_subset.json"
    dataset.write_text(json.dumps(records))
    ids = {f"{r['path_id']}_{k}" for r in records for k in range(len(r["instructions"]))}
    flags = []
    for name, relpath in AGENTS.items():
        predictions = [p for p in json.loads((shared_data / relpath).read_text()) if p["instr_id"] in ids]
        (tmp / f"{name}.json").write_text(json.dumps(predictions))
        flags.append(f"--predictions={name}={tmp / f'{name}.json'}")
    summary = score.main(
        [
            "--runner=DirectRunner",
            *flags,
            f"--dataset={dataset}",
            f"--connectivity_dir={connectivity_dir}",
            f"--output_dir={tmp / 'score'}",
            "--bootstrap=200",
        ]
    )
    assert summary["dead_letters"] == 0 and summary["reference_episodes"] == 300
    return {"tmp": tmp, "out": tmp / "score", "dataset": dataset, "records": records, "summary": summary}


@pytest.fixture(scope="module")
def page(scored, connectivity_dir):
    out = scored["tmp"] / "report"
    summary = run_report(
        out, f"--inputs={scored['out']}", f"--connectivity_dir={connectivity_dir}", "--bootstrap=200", "--seed=0"
    )
    return {"out": out, "summary": summary, "path": out / report.COMPARISON}


def test_the_report_writes_a_self_contained_comparison_page_linked_from_its_index(page, scored):
    summary = page["summary"]
    assert summary["comparison"]["written"] and summary["comparison"]["episodes"] == 600
    assert sorted(summary["comparison"]["agents"]) == ["random", "seq2seq"] and summary["dead_letters"] == 0
    text = page["path"].read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text) and "fetch(" not in text
    assert f'href="{report.COMPARISON}"' in (page["out"] / report.INDEX).read_text(encoding="utf-8")
    # the dataset came from the score job's summary.json, and is recorded as an input of the report
    manifest = json.loads((page["out"] / "manifest.json").read_text())
    assert str(scored["dataset"]) in {i["path"] for i in manifest["inputs"]}
    assert str(page["out"] / report.COMPARISON) in {o["path"] for o in manifest["outputs"]} or any(
        o["path"].endswith(report.COMPARISON) for o in manifest["outputs"]
    )


def test_the_page_intervals_are_the_score_jobs(page, scored):
    """Same seed and replicates: the page (one process, `vlnkit.comparison.episodes`) and the score job's
    leaderboard (merged bucket sums, `vlnkit.comparison.accumulate`) show the same intervals."""
    text = page["path"].read_text(encoding="utf-8")
    leaderboard = text.split('id="leaderboard"')[1].split("</table>")[0]
    for row in scored["summary"]["leaderboard"]:
        cells = re.search(rf"<td>{row['agent']}</td><td>300</td>(.*?)</tr>", leaderboard).group(1)
        low, high = row["sr_ci"]
        assert f"{100 * row['sr']:.1f} <span" in cells and f"[{100 * low:.1f}, {100 * high:.1f}]" in cells


def test_the_page_in_chromium_filters_and_draws(page, tmp_path):
    browser = Browser(require_chromium(), height=1400)
    shots = SCREENSHOTS or str(tmp_path)
    try:
        browser.open(page["path"].as_uri())
        browser.screenshot(os.path.join(shots, "report_comparison.png"))
        count = "document.getElementById('row-count').textContent"
        shown = "[...document.querySelectorAll('#episode-rows tbody tr')]"
        assert browser.evaluate(count) == "600 rows (first 500 shown)"
        # the episode drawn at load is the first row of the table, and it is marked
        first = browser.evaluate(f"{shown}[0].dataset.episode")
        assert browser.evaluate("document.querySelector('#episode-rows tr.sel').dataset.episode") == first

        def choose(name, value):
            browser.evaluate(
                f"(s => {{ s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})"
                f"(document.getElementById('filter-{name}'))"
            )

        choose("agent", "random")
        assert browser.evaluate(count) == "300 rows"
        assert browser.evaluate(f"{shown}.every(tr => tr.dataset.agent === 'random')")
        scan = browser.evaluate("document.getElementById('filter-scan').options[1].value")
        choose("scan", scan)
        per_scan = browser.evaluate(f"{shown}.length")
        assert 0 < per_scan < 300 and browser.evaluate(f"{shown}.every(tr => tr.children[1].textContent === '{scan}')")
        choose("outcome", "failure")
        failures = browser.evaluate(f"{shown}.length")
        assert 0 < failures <= per_scan and browser.evaluate(
            f"{shown}.every(tr => tr.children[3].textContent === 'failure')"
        )
        choose("agent", "")
        assert browser.evaluate(f"{shown}.length") > failures  # both agents' failures on the scan
        # choosing an episode draws its reference and both agents' paths on the scan's graph
        drawn = draw_episode(browser)
        assert drawn["references"] == 1 and drawn["agent_paths"] == 2
        assert drawn["edges"] > 20  # the scan's edges
        assert drawn["episode"] in drawn["caption"]
        browser.evaluate("document.getElementById('episode-table').scrollIntoView()")
        browser.screenshot(os.path.join(shots, "report_comparison_episode.png"))
        browser.open((page["out"] / report.INDEX).as_uri())
        browser.evaluate(f"document.querySelector('a[href=\"{report.COMPARISON}\"]').click()")
        browser.open(page["path"].as_uri())
        assert browser.errors == []
        assert all(u.startswith(("file:", "data:", "about:")) for u in browser.requests), browser.requests
    finally:
        browser.close()


def test_episodes_the_page_cannot_use_are_dead_letters_naming_file_and_record(scored, connectivity_dir, tmp_path):
    # a dataset without its first 5 paths (15 episodes per agent), and no graph for one scan
    dataset = tmp_path / "fewer.json"
    dataset.write_text(json.dumps(scored["records"][5:]))
    missing_ids = {f"{r['path_id']}_{k}" for r in scored["records"][:5] for k in range(3)}
    last_scan = scored["records"][-1]["scan"]
    conn = tmp_path / "conn"
    conn.mkdir()
    for name in os.listdir(connectivity_dir):
        if not name.startswith(last_scan):
            (conn / name).symlink_to(os.path.join(connectivity_dir, name))
    without_graph = {
        f"{r['path_id']}_{k}" for r in scored["records"] if r["scan"] == last_scan for k in range(3)
    } - missing_ids
    out = tmp_path / "report"
    summary = run_report(
        out,
        f"--inputs={scored['out']}",
        f"--connectivity_dir={conn}",
        f"--dataset={dataset}",
        "--bootstrap=50",
        "--max_failure_fraction=1",
    )
    dead = [json.loads(line) for line in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    page_dead = [d for d in dead if d["stage"] == "comparison"]
    assert len(page_dead) == 2 * (len(missing_ids) + len(without_graph))
    assert summary["comparison"]["set_aside"] == len(page_dead) and summary["comparison"]["written"]
    assert summary["comparison"]["episodes"] == 600 - len(page_dead)
    assert all(d["source"].endswith(".parquet") and "instr_id=" in d["record"] for d in page_dead)
    not_in_dataset = {
        re.search(r"instr_id='([^']+)'", d["record"]).group(1) for d in page_dead if "dataset" in d["reason"]
    }
    assert not_in_dataset == missing_ids
    assert all(last_scan in d["reason"] for d in page_dead if "dataset" not in d["reason"])


def refusal(capsys, out, *flags) -> str:
    """The one line a refused run prints (exit code 2)."""
    with pytest.raises(SystemExit) as exited:
        run_report(out, *flags)
    assert exited.value.code == 2
    return capsys.readouterr().err.strip()


def test_structural_problems_are_one_clear_line(scored, connectivity_dir, tmp_path, capsys):
    common = [f"--inputs={scored['out']}", f"--connectivity_dir={connectivity_dir}"]
    line = refusal(capsys, tmp_path / "a", *common, "--baseline=nobody")
    assert line == "error: report: --baseline=nobody is not one of the agents: random, seq2seq"
    assert "--confidence must be a number in (0, 1)" in refusal(capsys, tmp_path / "b", *common, "--confidence=1.5")
    line = refusal(capsys, tmp_path / "b2", *common, "--bootstrap=1")  # one replicate is no interval
    assert line.startswith("error: report: --bootstrap must be 0 (off) or from 40 to 10000 replicates")
    moved = tmp_path / "moved"  # a score folder whose summary names a dataset that is gone
    moved.mkdir()
    for f in scored["out"].glob("episodes-*.parquet"):
        (moved / f.name).write_bytes(f.read_bytes())
    summary = json.loads((scored["out"] / "summary.json").read_text())
    (moved / "summary.json").write_text(json.dumps({**summary, "dataset": [str(tmp_path / "gone.json")]}))
    line = refusal(capsys, tmp_path / "c", f"--inputs={moved}", f"--connectivity_dir={connectivity_dir}")
    assert re.fullmatch(
        r"error: report: .*summary.json: names the dataset .*gone.json, which does not exist .*; pass --dataset", line
    )
    # with --dataset the same folder reports
    done = run_report(
        tmp_path / "d", f"--inputs={moved}", f"--connectivity_dir={connectivity_dir}", f"--dataset={scored['dataset']}"
    )
    assert done["comparison"]["episodes"] == 600


# ----------------------------------------------------------------------------- a continuous (VLN-CE) dataset
CE_SPLIT = "vlnce/R2R_VLNCE_v1-2_preprocessed/val_unseen/val_unseen.json.gz"
CE_CMA = "vlnce/cwp_results/cma/stats_ep_ckpt_0_val_unseen_r0_w1.json"
CE_POSITIONS = "vlnce/third_party_positions/mln_ce_val_unseen_v1-2_positions.json"


@pytest.fixture(scope="module")
def continuous(shared_data, connectivity_dir, tmp_path_factory):
    """A score run on the R2R-CE val_unseen episodes the third-party agent has positions for (420), with CMA
    given as its simulator results (nothing to draw) and that agent as positions; then its report."""
    import gzip

    tmp = tmp_path_factory.mktemp("ce_comparison")
    positions = json.loads((shared_data / CE_POSITIONS).read_text())
    split = json.loads(gzip.decompress((shared_data / CE_SPLIT).read_bytes()))
    truth = json.loads(gzip.decompress((shared_data / CE_SPLIT.replace(".json.gz", "_gt.json.gz")).read_bytes()))
    kept = [e for e in split["episodes"] if str(e["episode_id"]) in positions]
    (tmp / "subset.json.gz").write_bytes(gzip.compress(json.dumps({"episodes": kept}).encode()))
    ids = {str(e["episode_id"]) for e in kept}
    (tmp / "subset_gt.json.gz").write_bytes(gzip.compress(json.dumps({k: truth[k] for k in ids}).encode()))
    cma = {k: v for k, v in json.loads((shared_data / CE_CMA).read_text()).items() if k in ids}
    (tmp / "cma.json").write_text(json.dumps(cma))
    scored = score.main(
        ["--runner=DirectRunner", f"--dataset={tmp / 'subset.json.gz'}", f"--predictions=cma={tmp / 'cma.json'}",
         f"--predictions=mln={shared_data / CE_POSITIONS}", f"--output_dir={tmp / 'score'}", "--bootstrap=200"]
    )  # fmt: skip
    assert scored["dead_letters"] == 0 and scored["reference_episodes"] == 420
    out = tmp / "report"
    summary = run_report(out, f"--inputs={tmp / 'score'}", f"--connectivity_dir={connectivity_dir}", "--bootstrap=200")
    return {"scored": scored, "summary": summary, "path": out / report.COMPARISON, "out": out}


def test_a_continuous_runs_page_shows_its_leaderboard_and_passes_in_chromium(continuous, tmp_path):
    summary = continuous["summary"]
    assert summary["comparison"]["written"] and summary["comparison"]["episodes"] == 840
    assert summary["dead_letters"] == 0
    text = continuous["path"].read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text) and "fetch(" not in text
    assert "Habitat (x, -z)" in text and "no positions to draw" in text
    leaderboard = text.split('id="leaderboard"')[1].split("</table>")[0]
    for row in continuous["scored"]["leaderboard"]:  # the page's intervals are the score job's
        cells = re.search(rf"<td>{row['agent']}</td><td>420</td>(.*?)</tr>", leaderboard).group(1)
        low, high = row["ndtw_ci"]
        assert f"{100 * row['ndtw']:.1f} <span" in cells and f"[{100 * low:.1f}, {100 * high:.1f}]" in cells
    browser = Browser(require_chromium(), height=1400)
    shots = SCREENSHOTS or str(tmp_path)
    try:
        browser.open(continuous["path"].as_uri())
        count = "document.getElementById('row-count').textContent"
        assert browser.evaluate(count) == "840 rows (first 500 shown)"
        # an episode drawn from above: the ground-truth path, its reference points, the agent with positions
        drawn = draw_episode(browser)
        assert drawn["references"] == 1 and drawn["agent_paths"] == 1 and drawn["edges"] > 20
        assert browser.evaluate("document.querySelectorAll('#drawing circle.reference-point').length") >= 2
        assert drawn["episode"] in drawn["caption"] and "ground-truth path" in drawn["caption"]
        assert "cma: " in drawn["caption"] and "simulator results only: no positions to draw" in drawn["caption"]
        browser.evaluate("document.getElementById('episode-table').scrollIntoView()")
        browser.screenshot(os.path.join(shots, "report_comparison_continuous.png"))
        assert browser.errors == []
        assert all(u.startswith(("file:", "data:", "about:")) for u in browser.requests), browser.requests
    finally:
        browser.close()
