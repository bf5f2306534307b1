"""The evaluation sets of ../shared/data/speaker that checks/SOURCE.md names, as raw strings.

Each set: (ids, hypotheses, references) with references per item, exactly as the reference
implementation is fed them there.
"""

from __future__ import annotations

import json
from pathlib import Path

ZHAO = "zhao2023_coop_human_eval/human_eval_dataset.json"
HUMAN = "human-reference"
ACGG = [
    "origin_seen",
    "origin_unseen",
    "BERT300_seen",
    "BERT300",
    "BLEU300_seen",
    "BLEU300",
    "VLN200_seen",
    "VLN200_unseen",
]


def _held_out(record) -> int:
    """Which of the 3 references zhao2023's human row shows: the last part of its instr_id."""
    return int(record["instr_id"].rsplit("_", 1)[1])


def zhao_sets(speaker: Path, common: bool) -> dict[str, tuple[list, list, list]]:
    """`coop75/<system>` (own references; the human row against its 2 others) or
    `coop75_common2refs/<system>` (every system against the same 2 references per path)."""
    data = json.loads((speaker / ZHAO).read_text())
    held = {pid: _held_out(r) for pid, r in data[HUMAN].items()}
    sets = {}
    for system, records in data.items():
        ids, hyps, refs = [], [], []
        for pid, r in records.items():
            own = list(r["instructions"])
            if common or system == HUMAN:
                own = [x for k, x in enumerate(data[HUMAN][pid]["instructions"]) if k != held[pid]]
            ids.append(pid)
            hyps.append(r["generated_instr"])
            refs.append(own)
        sets[system] = (ids, hyps, refs)
    return sets


def acgg_set(speaker: Path, name: str) -> tuple[list, list, list]:
    rows = json.loads((speaker / "acgg" / "pairs" / f"{name}.json").read_text())
    return [r["image_id"] for r in rows], [r["test"] for r in rows], [list(r["refs"]) for r in rows]


def t5_greedy_set(speaker: Path) -> tuple[list, list, list]:
    rows = json.loads((speaker / "hear" / "speaker_t5_clip_greedy_val_seen_success_loc.json").read_text())
    return list(rows), [r["generated_instr"] for r in rows.values()], [list(r["instructions"]) for r in rows.values()]


def shortest_acgg(speaker: Path, n: int) -> list[dict]:
    """The n records of acgg/pairs/origin_seen.json with the fewest characters (test + refs): a real set
    small enough for SPICE's jar (a few sentences a second) in a test."""
    rows = json.loads((speaker / "acgg" / "pairs" / "origin_seen.json").read_text())
    return sorted(rows, key=lambda r: (len(r["test"]) + sum(map(len, r["refs"])), r["image_id"]))[:n]
