"""What a paraphrase run will send to a translator, counted before anything is paid for.

Cloud Translation is paid per character, so the paraphrase job prints this plan (characters and
requests per pivot, translations already in the cache, estimated cost) before the pipeline starts,
and stops when it costs more than the user's cap. It reads the dataset and the translation cache, so
it lives here, with them, not in the job.
"""

from __future__ import annotations

import math

from vlnkit.datasets.r2r import RecordError
from vlnkit.datasets.rxr import parse_dataset
from vlnkit.io import fileio
from vlnkit.paraphrases.cache import TranslationCache, translation_backend
from vlnkit.paraphrases.pivots import instruction_sources, pivots_for
from vlnkit.paraphrases.translation import GOOGLE, OFFLINE_DEMO, codepoints, estimate_cost_usd


def translation_plan(files: list[str], s: dict) -> dict:
    """What the run will send, counted in the driver before anything is paid for.

    Per pivot: the distinct texts not yet in the translation cache, their characters both ways (the
    way back costs about as much as the way out; its exact size is known only after) and the
    fewest requests that carry them within the per-request limits (workers may split batches
    further, so this is a lower bound).

        >>> s = {"translation_cache": None, "languages": ("de",), "translator": "google",
        ...      "source_language": "en", "max_segments_per_request": 2, "max_codepoints_per_request": 30000,
        ...      "usd_per_million_chars": 20.0}
        >>> p = plan_texts({"Go left.", "Stop."}, s)
        >>> p["per_pivot"]["de"], p["estimated_requests"]
        ({'uncached_texts': 2, 'characters': 26, 'requests': 2}, 2)
    """
    texts: set[tuple[str, str]] = set()
    for path in files:
        try:
            data = fileio.read_bytes(path)
        except OSError:  # unreadable (e.g. a truncated .gz): the run's reader makes it a dead letter naming it
            continue
        for item in parse_dataset(data, path):
            if not isinstance(item, RecordError):
                texts.update((src, text) for _, text, _, src in instruction_sources(item, s["source_language"]))
    return plan_texts(texts, s)


def plan_texts(texts: set, s: dict) -> dict:
    """The plan of `texts`: (source language, text) pairs, or texts in --source_language. A text is sent to
    every pivot but its own language (`vlnkit.paraphrases.pivots.pivots_for`)."""
    cache = TranslationCache(s["translation_cache"]) if s["translation_cache"] else None
    pairs = {(s["source_language"], t) if isinstance(t, str) else t for t in texts}
    per_pivot = {}
    cached = 0
    google = s["translator"] == GOOGLE
    backend = translation_backend(
        s["translator"],
        *((s.get("translate_model"), s.get("translate_location"), s.get("translate_endpoint")) if google else ()),
    )
    for lang in s["languages"]:
        to_pivot = [(src, t) for src, t in pairs if lang in pivots_for((lang,), src)]
        todo = [t for src, t in to_pivot if cache is None or cache.get((backend, src, lang, t)) is None]
        cached += len(to_pivot) - len(todo)
        forward = sum(codepoints(t) for t in todo)
        requests = max(
            math.ceil(len(todo) / s["max_segments_per_request"]),
            math.ceil(forward / s["max_codepoints_per_request"]),
        )
        per_pivot[lang] = {"uncached_texts": len(todo), "characters": 2 * forward, "requests": 2 * requests}
    characters = sum(p["characters"] for p in per_pivot.values())
    cost = 0.0 if s["translator"] == OFFLINE_DEMO else estimate_cost_usd(characters, s["usd_per_million_chars"])
    return {
        "distinct_texts": len(pairs),
        "pivots": len(s["languages"]),
        "per_pivot": per_pivot,
        "cached_forward_translations": cached,
        "estimated_characters": characters,
        "estimated_requests": sum(p["requests"] for p in per_pivot.values()),
        "estimated_cost_usd": round(cost, 2),
        "estimated_cost_usd_exact": cost,
    }


def plan_rows(p: dict, s: dict) -> list[tuple[str, object]]:
    """The plan as the rows of the table the job prints before it sends anything."""
    price = (
        "free (offline-demo: not a real translator)"
        if s["translator"] == OFFLINE_DEMO
        else (f"${p['estimated_cost_usd']:,.2f} at ${s['usd_per_million_chars']}/million characters")
    )
    rows = [
        ("translator", s["translator"]),
        ("distinct instruction texts", p["distinct_texts"]),
        ("pivot languages", ",".join(s["languages"])),
        ("forward translations already cached", p["cached_forward_translations"]),
    ]
    for lang, v in p["per_pivot"].items():
        rows.append(
            (f"  {lang}: characters, requests", f"{v['characters']:,} chars, {v['requests']:,} requests (uncached)")
        )
    rows += [
        ("characters to send (estimate, both ways)", f"{p['estimated_characters']:,}"),
        ("requests (estimate, at least)", f"{p['estimated_requests']:,}"),
        ("estimated cost", price),
    ]
    if s.get("max_cost_usd") is not None:
        rows.append(("cost cap (--max_cost_usd)", f"${s['max_cost_usd']:,.2f}"))
    return rows
