"""The layout list and the drawing of docs/architecture.md, held to the folders and modules that exist, as
tests/test_layers.py holds the floor table to the imports: every subpackage of `vlnkit/` is named in the
drawing and in the layout list, and every module of `pipelines/` in both (a job by its name, any other
module as `<name>.py` in the list)."""

from __future__ import annotations

import re

from pipelines.cli import JOBS
from tests.conftest import ROOT

ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def _block(after: str) -> str:
    """The first ```text block after the line `after`."""
    start = ARCHITECTURE.index("```text", ARCHITECTURE.index(after))
    return ARCHITECTURE[start : ARCHITECTURE.index("```\n", start + 7)]


DRAWING = _block("# Architecture")
LAYOUT = _block("## Layout")
SUBPACKAGES = sorted(p.parent.name for p in (ROOT / "vlnkit").glob("*/__init__.py"))
PIPELINE_MODULES = sorted(p.stem for p in (ROOT / "pipelines").glob("*.py") if p.stem != "__init__")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z_0-9]+", text))


def test_every_vlnkit_subpackage_is_in_the_drawing_and_the_layout_list():
    listed = re.search(r"\(subpackages ([^;)]*)", LAYOUT).group(1)
    assert [p for p in SUBPACKAGES if p not in _words(listed)] == []
    assert [p for p in SUBPACKAGES if f"{p}/" not in DRAWING] == []


def test_every_pipeline_module_is_in_the_drawing_and_the_layout_list():
    drawn = DRAWING[DRAWING.index("pipelines/") : DRAWING.index("transforms/")]
    assert [m for m in PIPELINE_MODULES if m not in _words(drawn) and m not in JOBS] == []
    listed = LAYOUT[LAYOUT.index("pipelines/") : LAYOUT.index("configs/")]
    missing = [m for m in PIPELINE_MODULES if (m if m in JOBS else f"{m}.py") not in listed]
    assert missing == []


def test_nothing_listed_is_gone():
    listed = LAYOUT[LAYOUT.index("pipelines/") : LAYOUT.index("configs/")]
    named = set(re.findall(r"\b([a-z_0-9]+)\.py\b", listed))
    assert sorted(named - set(PIPELINE_MODULES)) == []
    drawn = DRAWING[DRAWING.index("pipelines/") : DRAWING.index("transforms/")]
    assert "verdict (JobError, RunFailed)" in drawn  # the verdict's rule is the core's (vlnkit/runs)
