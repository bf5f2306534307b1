"""Every command and code example of README.md and docs/ runs, in order, on small real data.

The pages are read in the order below and their ```bash and ```python blocks run one after the
other in one scratch project folder, so a page may use what an earlier block (or page) wrote, just
as a reader following the pages would. The scratch folder mirrors a checkout: `configs/` is the
repository's, and `../shared/data` is the real data (the `shared_data` fixture), so the commands are
tested exactly as printed. A block whose fence says `skip` (```bash skip) is not run: cloud runners,
installs, the test suite itself; the page says why next to it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Reading order: later pages use outputs of earlier ones (e.g. the report page draws the score run).
PAGES = [
    "README.md",
    "docs/design.md",
    "docs/architecture.md",
    "docs/jobs/build_r4r.md",
    "docs/jobs/score.md",
    "docs/jobs/random_baseline.md",
    "docs/jobs/perturb.md",
    "docs/jobs/paraphrase.md",
    "docs/jobs/build_compat.md",
    "docs/jobs/build_probes.md",
    "docs/jobs/score_probes.md",
    "docs/jobs/build_crafty.md",
    "docs/jobs/score_instructions.md",
    "docs/jobs/report.md",
    "docs/failure_semantics.md",
    "docs/rewards.md",
    "docs/cloud.md",
]
# Pages whose blocks another test runs (and compares against the jobs): not run twice.
TESTED_ELSEWHERE = {"docs/composing.md": "tests/test_composed_pipeline.py"}
RUNNABLE = {"bash", "python"}
# Fences that are shown, never run: output samples, file contents, diagrams.
SHOWN = {"", "text", "console", "yaml", "json", "jsonl", "cron", "mermaid", "csv"}
FENCE = re.compile(r"^(?P<indent> {0,3})```(?P<info>[^`]*)$")
BLOCK_TIMEOUT = 300
# Job pages whose command is marked skip because the job itself is broken; each says why on the page.
# Remove the entry (and the skip on the page) when the job is fixed.
KNOWN_BROKEN: dict[str, str] = {}  # page -> why its commands cannot run yet (none today)


def blocks(path: Path) -> list[tuple[int, str, list[str], str]]:
    """(line number, language, other info words, code) of every fenced block of a Markdown page."""
    out = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        words = m["info"].split()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path}:{start}: fence never closed")
        out.append((start, words[0] if words else "", words[1:], "\n".join(body) + "\n"))
        i += 1
    return out


@pytest.fixture(scope="module")
def project(tmp_path_factory, shared_data) -> Path:
    """A scratch checkout: project/ with configs/, and ../shared/data beside it."""
    root = tmp_path_factory.mktemp("docs")
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(shared_data, target_is_directory=True)
    project = root / "project"
    project.mkdir()
    (project / "configs").symlink_to(ROOT / "configs", target_is_directory=True)
    # `python` in the commands must be this interpreter, however it was installed. A wrapper that runs it by its
    # own path, not a symlink: a link to a virtual environment's python placed outside the environment does not
    # find the environment's pyvenv.cfg, and would run the base interpreter without the project's packages.
    bin_dir = root / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "python"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    wrapper.chmod(0o755)
    return project


def _script_dirs() -> list[str]:
    """Where this interpreter's installed commands (`vlnkit`, `vlnkit-build-r4r`, ...) live: the environment's
    bin folder, or the user scheme's for a `pip install --user`; a venv need not be activated to be tested."""
    dirs = [sysconfig.get_path("scripts")]
    with contextlib.suppress(KeyError):
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    return [d for d in dict.fromkeys(dirs) if d and os.path.isdir(d)]


def _env(project: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(project.parent / "bin"), *_script_dirs(), env.get("PATH", "")])
    env["MPLBACKEND"] = "Agg"
    return env


def _run(page: str, line: int, lang: str, code: str, project: Path) -> None:
    if lang == "bash":
        cmd = ["bash", "-euo", "pipefail", "-c", code]
    else:
        cmd = [sys.executable, "-c", code]
    proc = subprocess.run(cmd, cwd=project, env=_env(project), capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
    if proc.returncode != 0:
        raise AssertionError(
            f"{page}:{line}: the {lang} block failed with exit code {proc.returncode}\n--- block\n{code}"
            f"--- stdout (tail)\n{proc.stdout[-3000:]}\n--- stderr (tail)\n{proc.stderr[-3000:]}"
        )


@pytest.mark.parametrize("page", PAGES)
def test_page_runs(page, project):
    path = ROOT / page
    ran = 0
    for line, lang, flags, code in blocks(path):
        if lang not in RUNNABLE or "skip" in flags:
            continue
        _run(page, line, lang, code, project)
        ran += 1
    if (page.startswith("docs/jobs/") or page == "README.md") and page not in KNOWN_BROKEN:
        assert ran, f"{page}: no runnable example; a job page shows at least one command that runs"


def test_every_page_is_tested_and_every_fence_is_known():
    pages = {"README.md"} | {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")}
    assert pages == set(PAGES) | set(TESTED_ELSEWHERE), "add new pages to PAGES (in reading order)"
    for page in PAGES:
        for line, lang, flags, _ in blocks(ROOT / page):
            assert lang in RUNNABLE | SHOWN, f"{page}:{line}: unknown fence language {lang!r}"
            assert set(flags) <= {"skip"}, f"{page}:{line}: unknown fence flags {flags}"
            assert not (flags and lang not in RUNNABLE), f"{page}:{line}: only bash/python blocks can be skipped"


def test_readme_setup_is_the_two_commands_ci_runs():
    """The README's set-up block is exactly install + test, and .ci/run runs exactly that test command."""
    setup = [b for b in blocks(ROOT / "README.md") if "pip install" in b[3]]
    assert len(setup) == 1
    _, lang, flags, code = setup[0]
    assert (lang, flags) == ("bash", ["skip"])
    commands = [c for c in code.splitlines() if c.strip() and not c.lstrip().startswith("#")]
    # Install: the package, then the Java part a job runs (METEOR's jar, fetched at install time).
    assert commands == ['python -m pip install -e ".[test]" && python -m vlnkit.parts', "python -m pytest -q"]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[0] in ci and commands[1] in ci


SKIP_ROW = re.compile(r"^\| \[(?P<page>[^\]]+)\]\([^)]*\) \| `(?P<start>.+)` \| (?P<why>.+) \|$", re.M)


def test_readme_lists_exactly_the_blocks_not_run():
    """README's table of blocks that are not run names each skipped block (page and first line), with a reason."""
    listed = {(m["page"], m["start"]) for m in SKIP_ROW.finditer((ROOT / "README.md").read_text(encoding="utf-8"))}
    skipped = {
        (page, code.splitlines()[0])
        for page in PAGES
        for _, lang, flags, code in blocks(ROOT / page)
        if lang in RUNNABLE and "skip" in flags
    }
    assert skipped - listed == set(), "skipped blocks missing from README's table"
    assert listed - skipped == set(), "README's table lists blocks that are not skipped"


def test_blocks_parser(tmp_path):
    page = tmp_path / "sample.md"
    page.write_text("a\n```bash\necho 1\n```\n\n```python skip\nx = 1\n```\n```\nout\n```\n")
    assert blocks(page) == [(2, "bash", [], "echo 1\n"), (6, "python", ["skip"], "x = 1\n"), (9, "", [], "out\n")]
    page.write_text("```bash\necho 1\n")
    with pytest.raises(AssertionError, match="never closed"):
        blocks(page)


LINK = re.compile(r"\]\((?!https?://|mailto:)(?P<target>[^)#\s]*)(?:#(?P<anchor>[^)\s]*))?\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # a "# comment" in a code block is not a heading
    return {_slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_links_between_pages_resolve():
    for page in PAGES:
        path = ROOT / page
        for m in LINK.finditer(path.read_text(encoding="utf-8")):
            target = (path.parent / m["target"]).resolve() if m["target"] else path
            assert target.exists(), f"{page}: link to missing {m['target']}"
            if m["anchor"] and target.suffix == ".md":
                assert m["anchor"] in _anchors(target), f"{page}: no heading #{m['anchor']} in {m['target'] or page}"


def test_slug():
    assert _slug("R4R (path joining)") == "r4r-path-joining"
    assert _slug("The `score` job: flags") == "the-score-job-flags"


def test_results_summary_figures_are_those_of_their_sections():
    """Each figure of RESULTS.md's summary table (a ratio like 1.18x or 0.53, a time like 5.1 s) is one of the
    section its row links to, rounded as written: the table cannot keep a figure its section has replaced."""
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    sections = {_slug(m[1]): m[2] for m in re.finditer(r"^## ([^\n]+)\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)}
    rows = re.findall(r"^\| \[[^\]]+\]\(#([^)]+)\) \| (.+) \| (.+) \|$", text, flags=re.M)
    assert len(rows) > 15
    figure = re.compile(r"(\d[\d,]*(?:\.(\d+))?) ?(x|s|us|ms)?\b")

    def figures(where: str) -> list[tuple[float, int, str]]:
        """(value, decimal places, unit) of the times and ratios in `where` (not counts and sizes, which say
        what was measured); a ratio with or without its "x" (a column may say what it divides) has unit ""."""
        where = re.sub(r"(\d[\d.]*)-(\d[\d.]*) ?(x|s)\b", r"\1\3 \2\3", where)  # a range: 0.48-0.77x
        found = [(m[1].replace(",", ""), len(m[2] or ""), m[3] or "") for m in figure.finditer(where)]
        return [(float(v), places, unit.strip("x")) for v, places, unit in found if unit or places]

    for anchor, headline, ratio in rows:
        written = figures(sections[anchor])
        for value, places, unit in figures(f"{headline} {ratio}"):
            assert any(u == unit and round(v, places) == value for v, _, u in written), (anchor, value, unit)
