"""The comparison page in a real browser (headless Chromium over the DevTools protocol) on real agents."""

from __future__ import annotations

import os
import re

import pytest

from tests.vlnkit.comparison.real_agents import load_val_unseen
from tests.vlnkit.reports.browser import Browser, draw_episode, require_chromium
from vlnkit.comparison.config import BootstrapConfig
from vlnkit.reports.comparison_page import comparison_page

pytestmark = pytest.mark.real_data

SCREENSHOTS = os.environ.get("VLNKIT_SCREENSHOTS")  # a folder to keep the screenshots in, for looking at them


@pytest.fixture(scope="module")
def page_file(shared_data, r2r_dir, connectivity_dir, tmp_path_factory):
    data = load_val_unseen(str(shared_data), str(r2r_dir), connectivity_dir)
    references = {i: r["path"] for i, r in data["references"].items()}
    text = comparison_page(
        data["table"], references, data["graphs"], bootstrap=BootstrapConfig(replicates=300), title="R2R val_unseen"
    )
    path = tmp_path_factory.mktemp("page") / "comparison.html"
    path.write_text(text, encoding="utf-8")
    return path


def test_page_is_self_contained(page_file):
    text = page_file.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # no external scripts, styles, images
    assert "@import" not in text and "fetch(" not in text and "XMLHttpRequest" not in text
    assert text.count("<svg") >= 5 + 3  # five forest panels, three breakdowns, the drawing
    assert "\u2248" not in text.split('id="leaderboard"')[1].split("</table>")[0]  # all differ on SPL: no tie marks


def test_tie_marks(shared_data, r2r_dir, connectivity_dir):
    data = load_val_unseen(str(shared_data), str(r2r_dir), connectivity_dir)
    table = {k: list(v) for k, v in data["table"].items()}
    rows = [i for i, a in enumerate(table["agent"]) if a == "random"]
    for name, values in table.items():  # an identical copy of the random agent, which must tie with it
        values += [values[i] for i in rows] if name != "agent" else ["random again"] * len(rows)
    references = {i: r["path"] for i, r in data["references"].items()}
    text = comparison_page(
        table, references, data["graphs"], bootstrap=BootstrapConfig(replicates=200, baseline="stop")
    )
    leaderboard = text.split('id="leaderboard"')[1].split("</table>")[0]
    ranks = re.findall(r"<tr>(<td[^>]*>\u2248?\d+</td>)<td>([^<]+)</td>", leaderboard)
    assert [(re.sub("<[^>]+>", "", cell), agent) for cell, agent in ranks] == [
        ("1", "shortest"),
        ("2", "random"),
        ("\u22483", "random again"),  # not significantly different from the agent above
        ("4", "stop"),
    ]
    assert "Differences against stop" in text


def test_page_in_chromium(page_file, tmp_path):
    browser = Browser(require_chromium())
    try:
        url = page_file.as_uri()
        browser.open(url)
        shots = SCREENSHOTS or str(tmp_path)
        browser.screenshot(os.path.join(shots, "comparison_page.png"))
        assert browser.evaluate("document.querySelectorAll('table.lb tbody tr').length") == 3
        assert browser.evaluate("document.querySelector('table.lb tbody tr td:nth-child(2)').textContent") == "shortest"
        assert browser.evaluate("document.getElementById('row-count').textContent") == "7047 rows (first 500 shown)"
        # filter by agent, then scan and outcome
        agent = "document.getElementById('filter-agent')"
        browser.evaluate(f"{agent}.value = 'random'; {agent}.dispatchEvent(new Event('change'))")
        shown = "[...document.querySelectorAll('#episode-rows tbody tr')]"
        assert browser.evaluate(f"{shown}.every(tr => tr.dataset.agent === 'random')")
        assert browser.evaluate("document.getElementById('row-count').textContent").startswith("2349 rows")
        outcome = "document.getElementById('filter-outcome')"
        browser.evaluate(f"{outcome}.value = 'success'; {outcome}.dispatchEvent(new Event('change'))")
        successes = browser.evaluate("document.getElementById('row-count').textContent")
        assert successes == "374 rows"  # SR 15.9% of 2,349
        assert browser.evaluate(f"{shown}.every(tr => tr.children[3].textContent === 'success')")
        scan = "document.getElementById('filter-scan')"
        first_scan = browser.evaluate(f"{scan}.options[1].value")
        browser.evaluate(f"{scan}.value = '{first_scan}'; {scan}.dispatchEvent(new Event('change'))")
        assert browser.evaluate(f"{shown}.every(tr => tr.children[1].textContent === '{first_scan}')")
        # sorting by nDTW, descending after a second click
        header = "document.querySelector('#episode-rows th[data-col=\"6\"]')"
        browser.evaluate(f"{header}.click()")
        browser.evaluate(f"{header}.click()")  # the table was rebuilt: the expression finds the new header
        values = browser.evaluate(f"{shown}.map(tr => parseFloat(tr.children[6].textContent))")
        assert values == sorted(values, reverse=True) and len(values) > 1
        # choosing an episode draws the reference and every agent's path on its scan
        drawn = draw_episode(browser)
        assert drawn["references"] == 1 and drawn["agent_paths"] == 3
        assert drawn["edges"] > 20  # the scan's edges
        assert drawn["episode"] in drawn["caption"]
        assert browser.evaluate("document.querySelector('#episode-rows tr.sel').dataset.episode") == drawn["episode"]
        browser.evaluate("document.getElementById('episode-table').scrollIntoView()")
        browser.screenshot(os.path.join(shots, "comparison_page_episode.png"))
        assert browser.errors == []
        assert all(u.startswith(("file:", "data:", "about:")) for u in browser.requests), browser.requests
    finally:
        browser.close()
