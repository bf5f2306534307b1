"""The report of a score_instructions run, end to end on zhao2023's human evaluation (13 systems x 75
R2R val_seen paths, one human follower per instruction): the job's published folder in, its three pages
out, every number on them checked against the job's summary or computed here from the raw file."""

from __future__ import annotations

import html
import io
import json
import re
import shutil

import numpy as np
import pytest
from PIL import Image

from pipelines import report, score_instructions
from vlnkit.reports import plots
from vlnkit.reports.instruction_pages import AGREEMENT, SIDE_BY_SIDE, SYSTEMS, systems_page
from vlnkit.reports.stats import sample_key

pytestmark = pytest.mark.real_data

DRAW = 2


@pytest.fixture(scope="module")
def made(tmp_path_factory, shared_data, connectivity_dir):
    tmp = tmp_path_factory.mktemp("report_instructions")
    data = shared_data / "speaker" / "zhao2023_coop_human_eval" / "human_eval_dataset.json"
    scored = score_instructions.main(
        ["--runner=DirectRunner", f"--predictions=zhao={data}", "--bootstrap=40", f"--output_dir={tmp / 'zhao'}"]
    )
    summary = report.main(
        [
            "--runner=DirectRunner",
            f"--inputs={tmp / 'zhao'}",
            f"--connectivity_dir={connectivity_dir}",
            f"--output_dir={tmp / 'report'}",
            f"--draw={DRAW}",
            "--seed=3",
        ]
    )
    pages = {name: (tmp / "report" / name).read_text(encoding="utf-8") for name in (SYSTEMS, AGREEMENT, SIDE_BY_SIDE)}
    raw = json.loads(data.read_text())
    return {"tmp": tmp, "scored": scored, "summary": summary, "pages": pages, "raw": raw, "out": tmp / "report"}


def check_png(path, kind=None):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    Image.open(io.BytesIO(data)).verify()
    if kind:
        assert Image.open(io.BytesIO(data)).size == plots.expected_pixels(kind)
    assert np.asarray(Image.open(io.BytesIO(data)).convert("L")).std() > 5  # something was drawn


def rows_of(page: str, table_id: str) -> list[list[str]]:
    """The cells of a table of a page, as text."""
    body = page.split(f'id="{table_id}"')[1].split("</table>")[0]
    return [
        [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", tr)] for tr in re.findall(r"<tr>(.*?)</tr>", body)
    ][1:]


def test_the_report_publishes_three_pages_linked_from_its_index(made):
    summary, out = made["summary"], made["out"]
    info = summary["instructions"]
    assert info["systems"] == 13 and info["instructions"] == 975 and info["outcomes"] == 13
    assert info["paths_shown"] == DRAW and info["drawings_failed"] == [] and summary["dead_letters"] == 0
    assert sorted(info["pages"]) == sorted([SYSTEMS, AGREEMENT, SIDE_BY_SIDE])
    index = (out / report.INDEX).read_text(encoding="utf-8")
    manifest = json.loads((out / "manifest.json").read_text())
    published = {o["path"].rsplit("/", 1)[-1] for o in manifest["outputs"]}
    for name, page in made["pages"].items():
        assert f'href="{name}"' in index and name in published
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) and "<script" not in page
    # the systems' file was read (recorded as an input of the report), as the score job's summary names it
    assert any(i["path"].endswith("human_eval_dataset.json") for i in manifest["inputs"])


def test_the_systems_page_holds_every_corpus_score_interval_and_tie_mark(made):
    scored, page = made["scored"], made["pages"][SYSTEMS]
    metrics = ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "cider_d", "rouge_l"]
    assert sorted(m for m in scored["by_system"]["human-reference"] if m != "items") == metrics
    # one forest plot (SVG) per metric, every system a row, the human row marked and hollow
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert len(svgs) == len(metrics)
    for svg, metric in zip(svgs, [m for m in scored["by_system"]["human-reference"] if m != "items"]):
        assert metric.upper() in svg and svg.count("<circle") == 13
        assert re.search(r'<circle[^>]*fill="#fff"[^>]*><title>human-reference \(human\)', svg)
        s = scored["by_system"]["speaker-lstm_greedy"][metric]
        assert f"speaker-lstm_greedy: {100 * s['score']:.4g} " in svg
    rows = rows_of(page, "table-leaderboard")
    assert [r[1] for r in rows] == [r["system"] for r in scored["leaderboard"]]
    for row, want in zip(rows, scored["leaderboard"]):
        assert row[0] == ("\u2248" if want["tied_with_above"] else "") + str(want["rank"])
        assert row[2] == ("human" if want["system"] == "human-reference" else "generated") and row[3] == "75"
        s = scored["by_system"][want["system"]]["cider_d"]
        lo, hi = s["interval"]
        assert row[4 + metrics.index("cider_d")] == f"{100 * s['score']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def test_the_agreement_page_holds_the_jobs_tau_b_and_each_systems_mean_outcome(made):
    scored, page, raw = made["scored"], made["pages"][AGREEMENT], made["raw"]
    rows = {(r[0], r[1]): r for r in rows_of(page, "table-agreement")}
    assert len(rows) == sum(len(v) for v in scored["agreement"].values()) == 6 * 6
    for outcome, by_metric in scored["agreement"].items():
        for metric, tau in by_metric.items():
            s, i = tau["system"], tau["instance"]
            assert rows[(outcome, metric)] == [
                outcome,
                metric,
                f"{s['tau_b']:+.3f}",
                f"[{s['interval'][0]:+.3f}, {s['interval'][1]:+.3f}]",
                "13",
                f"{i['tau_b']:+.3f}",
                f"[{i['interval'][0]:+.3f}, {i['interval'][1]:+.3f}]",
                "975",
            ]
    # the followers' mean outcomes, computed here from the raw file (SOURCE.md: the paper's nDTW table)
    means = {r[0]: r for r in rows_of(page, "table-outcomes")}
    outcomes = list(scored["agreement"])
    for system, records in raw.items():
        ndtw = np.mean([r["human_scores"]["ndtw"] for r in records.values()])
        assert float(means[system][1 + outcomes.index("ndtw")]) == pytest.approx(ndtw, rel=1e-3)
    for outcome in outcomes:
        figure = made["out"] / "figures" / f"instructions_agreement_{outcome}.png"
        check_png(figure, "agreement")
        assert f'href="figures/{figure.name}"' in page


def test_instructions_side_by_side_beside_the_paths_drawing(made):
    page, raw = made["pages"][SIDE_BY_SIDE], made["raw"]
    paths = sorted({p for records in raw.values() for p in records}, key=lambda p: sample_key(3, "zhao", p))[:DRAW]
    for k, path_id in enumerate(paths):
        assert f'<h2 id="path-{k}">Path {path_id}</h2>' in page
        rows = rows_of(page, f"table-path-{k}")
        any_record = raw["speaker-lstm_greedy"][path_id]
        assert [r[1] for r in rows[:3]] == any_record["instructions"]  # the three references
        shown = {r[0]: r for r in rows[3:]}
        assert sorted(shown) == sorted(raw)
        for system, records in raw.items():
            assert shown[system][1] == records[path_id]["generated_instr"]
            assert shown[system][-1] == f"{records[path_id]['human_scores']['spl']:.4g}"  # spl, the last outcome
        drawing = made["out"] / "figures" / f"instructions_path_{k:02d}.png"
        check_png(drawing, "path")
        assert f"{any_record['scan']}" in page.split(f'id="path-{k}"')[1].split("</section>")[0]


def test_metrics_are_data_a_new_column_gets_its_forest_plot(made):
    """Whatever metrics the summary holds (METEOR, SPICE, ...) are drawn and tabled, in its order."""
    summary = json.loads(json.dumps(made["scored"]))
    for k, row in enumerate(summary["by_system"].values()):
        row["spice"] = {"score": 0.1 + k / 100, "interval": [0.05, 0.2 + k / 100]}
    page = systems_page(summary, "t")
    assert len(re.findall(r"<svg", page)) == 7 and "SPICE x100" in page
    assert rows_of(page, "table-leaderboard")[0][-1] == scored_cell(summary, summary["leaderboard"][0]["system"])


def scored_cell(summary, system):
    s = summary["by_system"][system]["spice"]
    return f"{100 * s['score']:.1f} [{100 * s['interval'][0]:.1f}, {100 * s['interval'][1]:.1f}]"


def test_a_run_whose_files_have_moved_is_refused_in_one_line(made, connectivity_dir, tmp_path, capsys):
    moved = tmp_path / "moved"
    shutil.copytree(made["tmp"] / "zhao" / "current", moved, symlinks=False)
    summary = json.loads((moved / "summary.json").read_text())
    summary["options"]["predictions"] = [f"zhao={tmp_path / 'gone.json'}"]
    (moved / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(SystemExit) as exc:
        report.main(
            [
                "--runner=DirectRunner",
                f"--inputs={moved}",
                f"--connectivity_dir={connectivity_dir}",
                f"--output_dir={tmp_path / 'out'}",
            ]
        )
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "gone.json" in err and "names a file of the run that is not there" in err


def test_a_run_without_outcomes_or_paths_says_so_on_its_pages(made):
    """A SPICE-layout run (no human_scores, no paths): no tau-b table or figures, and each path says why it
    is not drawn, instead of an empty table or a missing figure."""
    from vlnkit.reports.instruction_pages import agreement_page, side_by_side_page

    summary = {**made["scored"], "agreement": {}}
    page, figures = agreement_page(summary, {}, "t")
    assert figures == {} and "table-agreement" not in page and "carry no human outcomes" in html.unescape(page)
    example = {"path_id": "1", "scan": None, "references": ["go left"], "rows": []}
    side = side_by_side_page(summary, [example], {"1": "no path to draw"}, "t")
    assert "Not drawn: no path to draw." in side and "<img" not in side
    assert rows_of(side, "table-path-0") == [["reference 1", "go left", *[""] * 6]]


def test_the_pages_open_in_chromium_with_every_figure_and_no_request(made):
    from tests.vlnkit.reports.browser import Browser, require_chromium

    browser = Browser(require_chromium(), height=1400)
    try:
        for name, svgs in ((SYSTEMS, 6), (AGREEMENT, 0), (SIDE_BY_SIDE, 0)):
            browser.open((made["out"] / name).as_uri())
            assert browser.evaluate("document.querySelectorAll('svg').length") == svgs
            images = "[...document.images]"
            assert browser.evaluate(f"{images}.length") == {SYSTEMS: 0, AGREEMENT: 6, SIDE_BY_SIDE: DRAW}[name]
            assert browser.evaluate(f"{images}.every(i => i.complete && i.naturalWidth > 0)")
        assert browser.errors == []
        assert all(u.startswith(("file:", "data:", "about:")) for u in browser.requests), browser.requests
    finally:
        browser.close()
