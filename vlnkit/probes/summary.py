"""The `summary.json` of the build_probes and score_probes jobs, assembled from their summed tallies."""

from __future__ import annotations

from vlnkit.probes.scoring import skill_sort_key


def build_probes_summary(static: dict, totals: dict) -> dict:
    """The build_probes job's `summary.json`: `static` (the run's settings) and its summed tallies:
    alignments, candidates, episodes, pairs per probe and per skill, and the same per language."""
    pairs = {k.split(":", 1)[1]: v for k, v in totals.items() if k.startswith("pairs:")}
    by_probe: dict[str, int] = {}
    for skill, n in pairs.items():
        probe = skill.split(":", 1)[0]
        by_probe[probe] = by_probe.get(probe, 0) + n
    return {
        **static,
        "alignments": totals.get("alignments", 0),
        "candidates": totals.get("candidates", 0),
        "episodes": totals.get("episodes", 0),
        "pairs_per_probe": dict(sorted(by_probe.items())),
        "pairs_per_skill": dict(sorted(pairs.items(), key=lambda kv: skill_sort_key(kv[0]))),
        "by_language": by_language(totals),
        "dead_letters": totals.get("dead_letters", 0),
    }


def by_language(totals: dict) -> dict:
    """{language: {"alignments", "candidates", "episodes", "pairs", "not_applicable": {probe: candidates}}} from
    the "language:<tag>:<count>" tallies ("not_applicable.<probe>": probes without phrasings in the language)."""
    out: dict[str, dict] = {}
    head = "not_applicable."
    for key, n in sorted(totals.items()):
        if key.startswith("language:"):
            language, name = key[len("language:") :].rsplit(":", 1)
            counts = out.setdefault(
                language, {"alignments": 0, "candidates": 0, "episodes": 0, "pairs": 0, "not_applicable": {}}
            )
            if name.startswith(head):
                counts["not_applicable"][name[len(head) :]] = n
            else:
                counts[name] = n
    return dict(sorted(out.items()))


def score_probes_summary(static: dict, totals: dict, skills: dict, missing: list[str], missing_file: str) -> dict:
    """The score_probes job's `summary.json`: `static` (the run's settings), each skill's scores
    (`vlnkit.probes.scoring.summarize_skills`, in skill order), the episodes scored and renormalized,
    and the sorted ids of the episodes without agent output (listed in full in `missing_file`)."""
    return {
        **static,
        "skills": dict(sorted(skills.items(), key=lambda kv: skill_sort_key(kv[0]))),
        "episodes": totals.get("episodes", 0),
        "scored": totals.get("scored", 0),
        "renormalized": totals.get("renormalized", 0),
        "missing": len(missing),
        "missing_examples": missing[:20],
        "missing_file": missing_file,
        "dead_letters": totals.get("dead_letters", 0),
    }
