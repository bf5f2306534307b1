"""The paraphrase job's `summary.json`, assembled from its summed tallies (`paraphrase_summary`).

The transforms count (`transforms.paraphrase`: rows, kept and failed per pivot and per source
language, rejection reasons, translation calls); this module turns the totals into the summary.
"""

from __future__ import annotations

from vlnkit.datasets.languages import primary_language
from vlnkit.paraphrases.pivots import pivots_for
from vlnkit.paraphrases.translation import OFFLINE_DEMO, estimate_cost_usd


def _per_language(totals: dict, languages, prefix: str = "") -> dict:
    return {
        lang: {
            "rows": totals.get(f"{prefix}rows.{lang}", 0),
            "kept": totals.get(f"{prefix}kept.{lang}", 0),
            "failed": totals.get(f"{prefix}failed.{lang}", 0),
        }
        for lang in languages
    }


def _reasons(totals: dict, prefix: str = "") -> dict:
    head = f"{prefix}reason."
    return {k[len(head) :]: v for k, v in sorted(totals.items()) if k.startswith(head)}


def by_source_language(totals: dict, languages) -> dict:
    """Per language of the instructions (R2R: --source_language; RxR: each record's tag): instructions,
    the pivots they went through (all but their own language), rows, kept, failed, and per pivot."""
    head, tail = "source.", ".instructions"
    out = {}
    for tag in sorted(k[len(head) : -len(tail)] for k in totals if k.startswith(head) and k.endswith(tail)):
        prefix = f"source.{tag}."
        pivots = pivots_for(languages, primary_language(tag))
        per_pivot = _per_language(totals, pivots, prefix=prefix)
        out[tag] = {
            "instructions": totals[prefix + "instructions"],
            "pivots": list(pivots),
            "rows": sum(v["rows"] for v in per_pivot.values()),
            "kept": sum(v["kept"] for v in per_pivot.values()),
            "failed": sum(v["failed"] for v in per_pivot.values()),
            "per_language": per_pivot,
        }
    return out


def paraphrase_summary(static: dict, totals: dict) -> dict:
    """The paraphrase job's `summary.json`: `static` (the run's settings) and what its tallies, summed
    over every worker, say: rows, kept paraphrases per pivot and per source language, the reasons
    candidates were rejected, the translation calls and their cost, and the R4R composition.

    >>> s = paraphrase_summary({"languages": ["de"], "translator": "offline-demo", "usd_per_million_chars": 20.0,
    ...     "compose_from": None}, {"records_read": 1, "instructions": 2, "rows.de": 2, "kept.de": 1,
    ...     "reason.kept": 1, "reason.bleu_below_min": 1})
    >>> s["rows"], s["kept"], s["reasons"], s["translation"]["cost_usd"]
    (2, 1, {'bleu_below_min': 1, 'kept': 1}, 0.0)
    """
    languages = static["languages"]
    t = {k[len("translate.") :]: v for k, v in totals.items() if k.startswith("translate.")}
    requests = t.get("requests", 0)
    chars = t.get("characters_sent", 0)
    per_lang = _per_language(totals, languages)
    summary = {
        **static,
        "records_read": totals.get("records_read", 0),
        "instructions": totals.get("instructions", 0),
        "distinct_texts": totals.get("texts", 0),
        "rows": sum(v["rows"] for v in per_lang.values()),
        "kept": sum(v["kept"] for v in per_lang.values()),
        "per_language": per_lang,
        "by_source_language": by_source_language(totals, languages),
        "reasons": _reasons(totals),
        "translation": {
            "calls": requests,
            "segments_sent": t.get("segments_sent", 0),
            "segments_per_call": t.get("segments_sent", 0) / requests if requests else None,
            "characters_sent": chars,
            "retries": t.get("retries", 0),
            "failed_segments": t.get("failed_segments", 0),
            "cache_hits": t.get("cache_hits", 0),
            "cache_misses": t.get("cache_misses", 0),
            "cost_usd": 0.0
            if static["translator"] == OFFLINE_DEMO
            else round(estimate_cost_usd(chars, static["usd_per_million_chars"]), 2),
        },
        "dead_letters": totals.get("dead_letters", 0),
    }
    if static["compose_from"]:
        r4r_lang = _per_language(totals, languages, prefix="r4r_")
        summary["r4r"] = {
            "instructions": totals.get("r4r_instructions", 0),
            "rows": sum(v["rows"] for v in r4r_lang.values()),
            "kept": sum(v["kept"] for v in r4r_lang.values()),
            "per_language": r4r_lang,
            "reasons": _reasons(totals, prefix="r4r_"),
        }
    return summary
