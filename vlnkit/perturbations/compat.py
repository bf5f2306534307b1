"""Hard-negative training data: what perturbations share (seeded choices, "not applicable"), their
Parquet schemas, and the 2:1:1 mixing of compatibility sets (docs/design.md, "Instruction perturbations",
"Trajectory perturbations", "Determinism").

Every random choice draws from `record_rng(seed, ...keys)`, a generator seeded from the global seed
and the record's own id, so the output never depends on worker, bundle or process order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlnkit.datasets.languages import R2R_LANGUAGE
from vlnkit.hashing import stable_hash, stable_rng

INSTRUCTION_METHODS = ("direction_swap", "entity_swap", "phrase_swap")
TRAJECTORY_METHODS = ("random_walk", "path_reversal", "viewpoint_swap")
ALL_METHODS = INSTRUCTION_METHODS + TRAJECTORY_METHODS
INSTRUCTION, TRAJECTORY, GROUND_TRUTH = "instruction", "trajectory", "ground_truth"
# Mixing weights of a compatibility set: ground truth : instruction negatives : trajectory negatives.
MIX = {GROUND_TRUTH: 2, INSTRUCTION: 1, TRAJECTORY: 1}


@dataclass(frozen=True)
class NotApplicable:
    """A method that cannot perturb this record (no direction word, one entity, a dead end...), and why."""

    method: str
    reason: str


def family_of(method: str) -> str:
    if method in INSTRUCTION_METHODS:
        return INSTRUCTION
    if method in TRAJECTORY_METHODS:
        return TRAJECTORY
    raise ValueError(f"unknown perturbation method {method!r}; known: {', '.join(ALL_METHODS)}")


def parse_methods(text: str | list[str]) -> tuple[str, ...]:
    """A comma-separated method list, validated, in the canonical order; ValueError names the bad one."""
    names = [m.strip() for m in (text.split(",") if isinstance(text, str) else text) if m.strip()]
    if not names:
        raise ValueError("no perturbation method given")
    for name in names:
        family_of(name)
    return tuple(m for m in ALL_METHODS if m in names)


def record_rng(seed: int, *keys) -> np.random.Generator:
    """A generator determined only by the global seed and the record's keys (id, method, copy).

    >>> record_rng(5, "random_walk", "12_0", 0).random() == record_rng(5, "random_walk", "12_0", 0).random()
    True
    """
    return stable_rng(*keys, seed=seed)


def perturbation_row(item: dict, result, variant: int) -> dict:
    """One PERTURBATIONS row: an instruction item ({source_instr_id, scan, path, instruction, language}) and a
    result (an item without `language` is an R2R one: English)."""
    instruction_family = hasattr(result, "text")
    return {
        "source_instr_id": item["source_instr_id"],
        "scan": item["scan"],
        "language": item.get("language", R2R_LANGUAGE),
        "family": INSTRUCTION if instruction_family else TRAJECTORY,
        "method": result.method,
        "operation": result.operation,
        "variant": variant,
        "instruction": result.text if instruction_family else item["instruction"],
        "path": list(item["path"]) if instruction_family else list(result.path),
        "source_instruction": item["instruction"],
        "source_path": list(item["path"]),
        "changes": [c.to_dict() for c in result.changes] if instruction_family else [],
        "changed_positions": [] if instruction_family else list(result.changed_positions),
    }


def compat_row(row: dict, label: int, family: str, method: str) -> dict:
    """One COMPAT row; a row without `language` is an R2R one (English)."""
    return {
        "instr_id": row["instr_id"],
        "scan": row["scan"],
        "language": row.get("language", R2R_LANGUAGE),
        "instruction": row["instruction"],
        "path": list(row["path"]),
        "label": label,
        "family": family,
        "method": method,
    }


# ---------------------------------------------------------------------------- 2:1:1 mixing
def method_quota(positives: int, available: dict[str, int], methods: tuple[str, ...]) -> tuple[int, int]:
    """Negatives to take from each method of one family, and the family's target.

    The family's target is positives * 1/2 (the 2:1:1 mix); it is split equally over the family's
    methods, so each takes target // len(methods). When a method has fewer candidates than that,
    every method of the family takes only as many as the scarcest one has: the methods stay equal,
    and the shortfall is reported (never hidden by over-sampling another method).
    """
    if not methods:
        return 0, 0
    target = positives * MIX[INSTRUCTION] // MIX[GROUND_TRUTH]
    per_method = target // len(methods)
    return min([per_method] + [available.get(m, 0) for m in methods]), target


def selection_key(seed: int, row: dict) -> int:
    """Rank of a candidate negative within its method: the lowest keys are taken (any runner, same set)."""
    return stable_hash("compat", row["method"], row["source_instr_id"], row["variant"], seed=seed)


def select_negatives(seed: int, candidates: list[dict], quota: int) -> list[dict]:
    """The `quota` candidates of one method with the smallest selection keys."""
    return sorted(candidates, key=lambda r: (selection_key(seed, r), r["source_instr_id"], r["variant"]))[:quota]


def family_methods(methods) -> dict[str, tuple[str, ...]]:
    """The requested methods of each family, in request order.

    >>> family_methods(["random_walk", "direction_swap"])["trajectory"]
    ('random_walk',)
    """
    return {
        INSTRUCTION: tuple(m for m in methods if m in INSTRUCTION_METHODS),
        TRAJECTORY: tuple(m for m in methods if m in TRAJECTORY_METHODS),
    }
