"""Figures: valid PNGs of the documented size, byte-identical on a rerun, drawn from real graphs."""

import io

import numpy as np
import pytest
from PIL import Image

from vlnkit.datasets.r2r import parse_r2r
from vlnkit.navigation.graph import GraphStore
from vlnkit.reports import plots
from vlnkit.reports.html import Figure, Section, Table, assemble, render_page
from vlnkit.reports.stats import (
    METRIC_WIDTHS,
    dataset_partial,
    finalize,
    merge,
    paraphrases_partial,
    perturbations_partial,
    scores_partial,
)


def check_png(data: bytes, kind: str) -> None:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    image = Image.open(io.BytesIO(data))
    image.verify()
    assert image.size == plots.expected_pixels(kind)
    pixels = np.asarray(Image.open(io.BytesIO(data)).convert("L"))
    assert pixels.std() > 5  # something was drawn, not a blank canvas


@pytest.fixture(scope="module")
def real(r2r_dir, connectivity_dir):
    records = [r for r in parse_r2r((r2r_dir / "R2R_val_seen.json").read_bytes(), "val_seen") if isinstance(r, dict)]
    return records, GraphStore(connectivity_dir)


@pytest.fixture(scope="module")
def tables(real):
    records, store = real
    partial, bad = dataset_partial("R2R_val_seen", records, store)
    assert not bad
    half, _ = dataset_partial("half", records[::2], store)
    merge(partial, half)
    rng = np.random.default_rng(0)
    for label in ("agent_a", "agent_b"):
        cols = {m: rng.uniform(0, 1 if m in plots.RATE_METRICS else 20, size=200) for m in METRIC_WIDTHS}
        merge(partial, scores_partial(label, cols))
    merge(
        partial,
        perturbations_partial("pert", ["trajectory"] * 3 + ["instruction"], ["random_walk"] * 3 + ["direction_swap"]),
    )
    merge(partial, paraphrases_partial("para", ["de", "fr", "de"], [True, False, False], [0.4, 0.9, 0.1]))
    return finalize(partial)


def test_every_summary_figure_is_a_valid_png_and_deterministic(tables):
    made = {
        "dataset": lambda: plots.dataset_figure(tables["dataset"]),
        "scores": lambda: plots.score_histograms(tables["scores"]),
        "score_means": lambda: plots.score_means_figure(tables["scores"]),
        "perturbations": lambda: plots.perturbations_figure(
            {k: v["counts"] for k, v in tables["perturbations"].items()}
        ),
        "paraphrases": lambda: plots.paraphrases_figure(tables["paraphrases"], (0.25, 0.7)),
    }
    for kind, draw in made.items():
        first = draw()
        check_png(first, kind)
        assert draw() == first, kind


def test_shared_edges_hand_worked():
    assert plots.shared_edges(["a", "b", "c", "d"], ["a", "b", "x", "d", "c"]) == {frozenset("ab"), frozenset("cd")}
    assert plots.shared_edges(["a", "a", "b"], ["b", "a"]) == {frozenset("ab")}  # direction and repeats ignored
    assert plots.shared_edges(["a"], ["a"]) == set()


def test_path_drawings_on_real_graphs(real):
    records, store = real
    ref = records[0]
    graph = store.get(ref["scan"])
    # an agent that follows the first half of the reference, then wanders to a neighbour
    agent = ref["path"][:3] + [graph.viewpoints[graph.neighbours[graph.idx(ref["path"][2])][0]]]
    specs = [
        {"path": ref["path"], "title": "reference only"},
        {"path": ref["path"], "title": "scored", "agent": agent, "metrics": {"ne": 1.5, "sr": 1.0, "ndtw": 0.7}},
        {"path": ref["path"], "title": "joined", "connector": ref["path"][1:3]},
        {"path": ref["path"], "first": ref["path"][:3], "second": ref["path"][2:], "connector": [ref["path"][2]]},
    ]
    for spec in specs:
        png = plots.path_figure(graph, spec)
        check_png(png, "path")
        assert plots.path_figure(graph, spec) == png


def test_assembled_page_links_every_figure_and_table(tables, real):
    records, store = real
    episodes = [
        {"reference": {**records[k], "label": "R2R_val_seen", "instructions": 3}, "score": None} for k in (0, 1)
    ]
    files, page, notes = assemble(
        tables,
        episodes,
        store,
        summaries={"random": {"count": 10, "metrics": {"sr": 0.1, "ne": 9.0}}},
        inputs=[["x.json", "dataset", "R2R_val_seen", "inputs"]],
        order=["R2R_val_seen", "half"],
    )
    assert notes["drawings_failed"] == []
    assert {"figures/path_00.png", "figures/path_01.png", "figures/dataset_statistics.png"} <= set(files)
    assert {"figures/score_distributions.png", "figures/score_comparison.png"} <= set(files)
    for name in files:
        assert f'href="{name}"' in page
    for table_id in ("table-dataset", "table-scores", "table-perturbations", "table-paraphrases", "table-inputs"):
        assert f'id="{table_id}"' in page and f'href="#{table_id}"' in page
    assert "random" in page  # a summary-only score set joins the comparison


def test_render_page_escapes_text():
    page = render_page(
        "<t>",
        "a & b",
        [
            Section(
                "s", "S <1>", "x", [Figure("f.png", "cap <i>", b"\x89PNG")], [Table("t", "T", ["<c>"], [[1.0, None]])]
            )
        ],
    )
    assert "&lt;t&gt;" in page and "a &amp; b" in page and "<c>" not in page and "n/a" in page
