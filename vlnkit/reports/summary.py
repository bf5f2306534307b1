"""The report job's `summary.json`, assembled from its merged tables and what it drew (`report_summary`)."""

from __future__ import annotations

import os

from vlnkit.reports.stats import DATASET, SCORES


def report_summary(
    static: dict, tables: dict, inputs, figures: list[str], notes: dict, seed: int, index: str, page: dict | None
) -> dict:
    """`static` (the job's name) and what the report read and made: input files per kind and their data set
    labels, each dataset's counts and each score set's episodes (from the merged `tables`), the figures and
    path drawings written (`figures`, and the drawings that failed in `notes`), the dead letters, the
    `index` page and, when one was made, the comparison `page`.

    >>> s = report_summary({"job": "report"}, {}, [], ["figures/path_1.png"], {}, 0, "out/index.html", None)
    >>> s["drawings"], s["dead_letters"], "comparison" in s
    (1, 0, False)
    """
    dead = tables.get("dead_letters", {})
    summary = {
        **static,
        "inputs": {kind: sum(1 for i in inputs if i.kind == kind) for kind in sorted({i.kind for i in inputs})},
        "labels": sorted({i.label for i in inputs}),
        "datasets": {k: v["counts"] for k, v in tables.get(DATASET, {}).items()},
        "score_sets": {k: v["counts"].get("episodes", 0) for k, v in tables.get(SCORES, {}).items()},
        "figures": figures,
        "drawings": sum(1 for f in figures if os.path.basename(f).startswith("path_")),
        "drawings_failed": notes.get("drawings_failed", []),
        "dead_letters": sum(d["counts"].get("records", 0) for d in dead.values()),
        "seed": seed,
        "index": index,
    }
    if page is not None:
        summary["comparison"] = page
    return summary
