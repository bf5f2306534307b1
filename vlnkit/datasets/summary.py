"""The build_r4r job's `summary.json`, assembled from its summed tallies (`build_r4r_summary`)."""

from __future__ import annotations

from vlnkit.datasets.r4r import summarize


def build_r4r_summary(static: dict, totals: dict) -> dict:
    """The build_r4r job's `summary.json`: `static` (the run's settings) and its summed tallies: records
    read, the pairs the join considered and what filtered them, and the joined dataset's statistics
    (`vlnkit.datasets.r4r.summarize`)."""
    considered = totals.get("pairs_considered", 0)
    return {
        **static,
        "records_read": totals.get("records_read", 0),
        "dead_letters": totals.get("dead_letters", 0),
        "join": {
            "pairs_considered": considered,
            "filtered_distance": considered - totals.get("passed_distance", 0),
            "filtered_heading": totals.get("filtered_heading", 0),
            "valid_pairs": totals.get("valid_pairs", 0),
            "chains_valid": totals.get("chains_valid", 0),
            "chains_capped": totals.get("chains_capped", 0),
        },
        "dataset": summarize(totals),
    }
