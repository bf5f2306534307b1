"""RxR guide files in the report (dataset statistics per instruction and language, the comparison page of
an RxR score output drawn in Chromium) and refused by build_r4r, on a fixture made from 40 R2R records."""

import json
from collections import Counter

import pytest

from pipelines import build_r4r, report, score
from tests.pipelines.test_report_comparison import run_report
from tests.vlnkit.reports.browser import Browser, draw_episode, require_chromium
from vlnkit.fixtures.rxr import read_jsonl, write_rxr_fixtures

pytestmark = pytest.mark.real_data
RECORDS = 40


@pytest.fixture(scope="module")
def rxr(r2r_dir, connectivity_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rxr_report")
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:RECORDS]
    r2r_file = tmp / "R2R_val_unseen_40.json"
    r2r_file.write_text(json.dumps(records))
    files = write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp), pose_traces=False)
    summary = score.main(
        [
            "--runner=DirectRunner",
            f"--dataset={files.guide}",
            f"--predictions=human={files.follower}",
            f"--connectivity_dir={connectivity_dir}",
            f"--output_dir={tmp / 'score'}",
        ]
    )
    assert summary["dead_letters"] == 0
    return tmp, records, r2r_file, files


def test_report_counts_rxr_instructions_and_languages_and_measures_each_path_once(rxr, connectivity_dir):
    tmp, records, r2r_file, files = rxr
    guides = read_jsonl(files.guide)
    out = tmp / "stats"
    summary = run_report(out, f"--inputs={files.guide},{r2r_file}", f"--connectivity_dir={connectivity_dir}")
    languages = Counter(g["language"] for g in guides)
    assert set(languages) == {"en-IN", "en-US", "hi-IN", "te-IN"}
    want = {"instructions": len(guides), "paths": RECORDS, **{f"instructions.{k}": n for k, n in languages.items()}}
    assert summary["datasets"]["rxr_val_unseen_guide"] == want and summary["dead_letters"] == 0
    assert summary["datasets"]["R2R_val_unseen_40"] == {
        "instructions": len(guides),
        "instructions.en": len(guides),
        "paths": RECORDS,
    }
    # The paths are the R2R records' (one per path_id, however many instructions share it): equal statistics.
    tables = json.loads((out / "report_tables.json").read_text())["tables"]["dataset"]
    ours, theirs = tables["rxr_val_unseen_guide"]["quantities"], tables["R2R_val_unseen_40"]["quantities"]
    for quantity in ("steps", "length_m", "shortest_m"):
        assert ours[quantity] == theirs[quantity], quantity
    assert ours["words"]["n"] == len(guides)
    assert "hi-IN" in (out / report.INDEX).read_text(encoding="utf-8")


def test_comparison_page_of_an_rxr_score_output_draws_rxr_episodes(rxr, connectivity_dir, tmp_path):
    tmp, _, _, files = rxr
    guides = read_jsonl(files.guide)
    out = tmp / "page"
    summary = run_report(out, f"--inputs={tmp / 'score'}", f"--connectivity_dir={connectivity_dir}", "--bootstrap=50")
    assert summary["comparison"]["written"] and summary["comparison"]["episodes"] == len(guides)
    assert summary["dead_letters"] == 0  # every RxR instr_id found its guide line's path
    browser = Browser(require_chromium(), height=1400)
    try:
        browser.open((out / report.COMPARISON).as_uri())
        shown = "[...document.querySelectorAll('#episode-rows tbody tr')]"
        ids = browser.evaluate(f"{shown}.map(tr => tr.dataset.episode)")
        assert len(ids) == len(guides) and set(ids) == {str(g["instruction_id"]) for g in guides}
        drawn = draw_episode(browser)
        assert drawn["references"] == 1 and drawn["agent_paths"] == 1
        assert drawn["episode"] == ids[1] and ids[1] in drawn["caption"]
        assert browser.errors == []
    finally:
        browser.close()


@pytest.mark.parametrize("kind", ["guide", "follower"])
def test_build_r4r_refuses_an_rxr_file_with_one_line(rxr, connectivity_dir, tmp_path, capsys, kind):
    _, _, _, files = rxr
    path = getattr(files, kind)
    with pytest.raises(SystemExit) as exc:
        build_r4r.main(
            [
                "--runner=DirectRunner",
                f"--dataset={path}",
                f"--connectivity_dir={connectivity_dir}",
                f"--output_dir={tmp_path / 'r4r'}",
            ]
        )
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{path} is an RxR {kind} file" in err and "build_r4r joins R2R-format paths" in err
    assert not list((tmp_path / "r4r").rglob("_SUCCESS")) and not list((tmp_path / "r4r").rglob("paths-*"))
