"""The metric rows of a score summary table, shared by score and random_baseline (rates in %, distances in m)."""

from __future__ import annotations

from vlnkit.evaluation.metrics import METRICS

RATES = ("sr", "osr", "spl", "sed", "cls", "ndtw", "sdtw")


def summary_rows(summary: dict) -> list[tuple[str, object]]:
    rows = []
    for m in METRICS:
        v = summary["metrics"].get(m)
        if v is None:
            rows.append((m.upper(), "n/a"))
        elif m in RATES:
            rows.append((f"{m.upper()} (%)", round(100 * v, 2)))
        else:
            rows.append((f"{m.upper()} (m)", v))
    return rows
