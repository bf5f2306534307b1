"""The `summary.json` of the perturb and build_compat jobs, assembled from their summed tallies.

The transforms count (`transforms.perturb`, `transforms.compat`: per method, per language, per family);
`perturb_summary` and `build_compat_summary` turn the totals into each job's summary.
"""

from __future__ import annotations

from vlnkit.perturbations.compat import (
    GROUND_TRUTH,
    INSTRUCTION,
    TRAJECTORY,
    family_methods,
    method_quota,
)


def applicability(totals: dict, methods, instructions: int, prefix: str = "") -> dict:
    """Per method: instructions it applied to, the share of all instructions, rows emitted, reasons it did not.
    `prefix` ("language.<tag>.") reads one language's tallies instead of all instructions'."""
    out = {}
    for m in methods:
        reason = f"{prefix}{m}.not_applicable."
        applied = totals.get(f"{prefix}{m}.applied", 0)
        out[m] = {
            "applied": applied,
            "applicability": round(applied / instructions, 4) if instructions else None,
            "emitted": totals.get(f"{prefix}{m}.emitted", 0),
            "duplicates_skipped": totals.get(f"{prefix}{m}.duplicate", 0),
            "not_applicable": {k[len(reason) :]: v for k, v in sorted(totals.items()) if k.startswith(reason)},
        }
    return out


def by_language(totals: dict, methods, families=(INSTRUCTION, TRAJECTORY)) -> dict:
    """{language tag: {"instructions", "rows" per family, "methods_applicability"}} from the summed tallies
    (`vlnkit.datasets.languages.language_counts`, the per-language keys of `_Perturber.run`, and "rows.<tag>.<family>").
    `families` names the row counts: perturb's two, or build_compat's three (ground truth first)."""
    head = "instructions."
    out = {}
    for language in sorted(k[len(head) :] for k in totals if k.startswith(head)):
        n = totals[head + language]
        out[language] = {
            "instructions": n,
            "rows": {f: totals.get(f"rows.{language}.{f}", 0) for f in families},
            "methods_applicability": applicability(totals, methods, n, prefix=f"language.{language}."),
        }
    return out


def perturb_summary(static: dict, totals: dict, methods) -> dict:
    """The perturb job's `summary.json`: `static` (the run's settings) and its summed tallies: records and
    instructions read, rows per family, and how often each method applied, overall and per language."""
    instructions = totals.get("instructions", 0)
    return {
        **static,
        "records_read": totals.get("records_read", 0),
        "instructions": instructions,
        "dead_letters": totals.get("dead_letters", 0),
        "rows": {"instruction": totals.get("rows.instruction", 0), "trajectory": totals.get("rows.trajectory", 0)},
        "methods_applicability": applicability(totals, methods, instructions),
        "by_language": by_language(totals, methods),
    }


def build_compat_summary(static: dict, totals: dict, methods) -> dict:
    """The build_compat job's `summary.json`: `static` (the run's settings) and its summed tallies: the
    positives, each family's target, rows and shortfall against the 2:1:1 mix (`method_quota`), and how
    often each method applied, overall and per language."""
    row_families = (GROUND_TRUTH, INSTRUCTION, TRAJECTORY)
    rows = {
        k[len("rows.") :]: v for k, v in totals.items() if k.startswith("rows.") and k.split(".")[1] in row_families
    }
    positives = sum(v for k, v in rows.items() if k.startswith(GROUND_TRUTH + "."))
    available = {m: totals.get(f"available.{m}", 0) for m in methods}
    families = {}
    for family, fam_methods in family_methods(methods).items():
        quota, target = method_quota(positives, available, fam_methods)
        families[family] = {
            "target": target,
            "rows": sum(rows.get(f"{family}.{m}", 0) for m in fam_methods),
            "per_method": {
                m: {"available": available[m], "selected": rows.get(f"{family}.{m}", 0)} for m in fam_methods
            },
            "shortfall": target - quota * len(fam_methods) if fam_methods else target,
        }
    return {
        **static,
        "records_read": totals.get("records_read", 0),
        "instructions": totals.get("instructions", 0),
        "dead_letters": totals.get("dead_letters", 0),
        "positives": {
            "ground_truth": rows.get(f"{GROUND_TRUTH}.{GROUND_TRUTH}", 0),
            "paraphrase": rows.get(f"{GROUND_TRUTH}.paraphrase", 0),
        },
        "families": families,
        "methods_applicability": applicability(totals, methods, totals.get("instructions", 0)),
        "by_language": by_language(totals, methods, row_families),
    }
