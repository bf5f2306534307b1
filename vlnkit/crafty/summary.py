"""The build_crafty job's `summary.json`, from its static settings and summed tallies."""

from __future__ import annotations


def build_crafty_summary(static: dict, totals: dict) -> dict:
    """Settings, then what was made: paths, instructions, fallback instructions (no object seen), word
    statistics, the Appraiser's size, and the dead letters."""
    instructions = totals.get("instructions", 0)
    words = totals.get("words", 0)
    return {
        **static,
        "records_read": totals.get("records_read", 0),
        "paths": totals.get("paths", 0),
        "instructions": instructions,
        "fallback_instructions": totals.get("fallback", 0),
        "mean_words": round(words / instructions, 3) if instructions else None,
        "mean_landmarks_named": round(totals.get("landmarks_named", 0) / instructions, 3) if instructions else None,
        "appraiser": {
            "scans": totals.get("appraiser_scans", 0),
            "panoramas": totals.get("appraiser_panoramas", 0),
            "categories": totals.get("appraiser_categories", 0),
        },
        "dead_letters": totals.get("dead_letters", 0),
    }
