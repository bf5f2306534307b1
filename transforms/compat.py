"""Assembling a compatibility training set from PCollections (the rules live in `vlnkit.perturbations.compat`).

`AssembleCompat`: {"records" | "items", "perturbations", optional "paraphrases"} -> {"rows": COMPAT
rows, "items", "available", "dead_letter"}. It is the assembly step of `pipelines.build_compat`,
lifted out so a pipeline can feed it straight from `Perturb` and `RoundTripParaphrase` with no
files in between (see the project's docs/composing.md).

Positives are every instruction with its path (ground truth) and every kept paraphrase with its
source's path. Negatives: positives/2 instruction perturbations and positives/2 trajectory
perturbations, split equally over the requested methods of each family and chosen by a seeded hash
of (method, instr_id), so any runner picks the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import apache_beam as beam

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.gather import flatten
from transforms.perturb import instruction_items
from vlnkit.perturbations.compat import (
    GROUND_TRUTH,
    compat_row,
    family_methods,
    family_of,
    method_quota,
    select_negatives,
)

AVAILABLE = "available"


def ground_truth(item: dict) -> dict:
    """An instruction item (`transforms.perturb.instruction_items`) -> its positive COMPAT row."""
    row = {"instr_id": item["source_instr_id"], **item}
    return compat_row(row, 1, GROUND_TRUTH, GROUND_TRUTH)


def is_kept_paraphrase(row: dict) -> bool:
    """A paraphrase row that counts as a positive: kept, with a non-empty text."""
    return bool(row.get("kept")) and isinstance(row.get("paraphrase"), str) and bool(row["paraphrase"])


def join_paraphrases(element):
    """(instr_id, {items, paraphrases}) -> positive rows, or dead letters for paraphrases of unknown ids.

    Texts are sorted so the rows do not depend on the order the join delivers them in.
    """
    instr_id, groups = element
    items, paraphrases = list(groups["items"]), sorted(groups["paraphrases"])
    if not items:
        for _ in paraphrases:
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                dead_letter("paraphrase", "", f"instr_id={instr_id}", f"no instruction {instr_id!r} in --dataset"),
            )
        return
    for text in paraphrases:
        row = {**items[0], "instr_id": instr_id, "instruction": text}  # its source's scan, path and language
        yield compat_row(row, 1, GROUND_TRUTH, "paraphrase")


def choose(kv, positives: int, available: dict, methods, seed: int):
    """(method, its candidate perturbation rows) -> its share of negatives as COMPAT rows (label 0)."""
    method, candidates = kv
    family = family_of(method)
    quota, _ = method_quota(positives, available, family_methods(methods)[family])
    for row in select_negatives(seed, list(candidates), quota):
        yield compat_row({**row, "instr_id": row["source_instr_id"]}, 0, family, method)


@dataclass
class AssembleCompat(beam.PTransform):
    """Instructions, perturbations and (optionally) paraphrases -> a 2:1:1 compatibility set.

    Takes a dict of PCollections:
      `records`: R2R record dicts (path_id, scan, path, instructions, ...), or instead
      `items`: instruction items {source_instr_id, scan, path, instruction} as
        `transforms.perturb.instruction_items` makes them;
      `perturbations`: PERTURBATIONS rows, e.g. `Perturb(...)["rows"]` (one per instruction and method);
      `paraphrases` (optional): paraphrase rows {instr_id, paraphrase, kept, ...}, e.g.
        `RoundTripParaphrase(...)["rows"]`; only kept rows with a text become positives.
    Returns a dict of PCollections:
      `rows`: COMPAT rows (`vlnkit.perturbations.schemas.COMPAT`: instr_id, scan, language, path, instruction,
        label, family, method; a paraphrase has its source instruction's language);
      `items`: the instruction items used;
      `available`: (method, number of candidate perturbations);
      `dead_letter`: paraphrases whose instr_id is not among the instructions.

        compat = {"records": records, "perturbations": perturbed["rows"]} | AssembleCompat(methods, seed=0)
    """

    methods: tuple[str, ...]
    seed: int = 0

    def expand(self, inputs):
        inputs = dict(inputs)
        if "items" in inputs:
            items = inputs["items"]
        elif "records" in inputs:
            items = inputs["records"] | "Instructions" >> beam.FlatMap(instruction_items)
        else:
            raise ValueError("AssembleCompat needs 'records' or 'items' among its inputs")
        if "perturbations" not in inputs:
            raise ValueError("AssembleCompat needs 'perturbations' among its inputs")
        p = items.pipeline
        positives = [items | "GroundTruth" >> beam.Map(ground_truth)]
        dead = []
        if inputs.get("paraphrases") is not None:
            kept = (
                inputs["paraphrases"]
                | "Kept" >> beam.Filter(is_kept_paraphrase)
                | "KeyParaphrase" >> beam.Map(lambda r: (str(r["instr_id"]), r["paraphrase"]))
            )
            keyed_items = items | "KeyItems" >> beam.Map(lambda i: (i["source_instr_id"], i))
            para = (
                {"items": keyed_items, "paraphrases": kept}
                | "JoinParaphrases" >> beam.CoGroupByKey()
                | "ParaphraseRows" >> beam.FlatMap(join_paraphrases).with_outputs(DEAD_LETTER, main="rows")
            )
            positives.append(para.rows)
            dead.append(para[DEAD_LETTER])
        positives = tuple(positives) | "Positives" >> beam.Flatten()

        by_method = inputs["perturbations"] | "KeyByMethod" >> beam.Map(lambda r: (r["method"], r))
        available = by_method | "Available" >> beam.combiners.Count.PerKey()
        n_positive = positives | "CountPositives" >> beam.combiners.Count.Globally()
        negatives = (
            by_method
            | "GroupByMethod" >> beam.GroupByKey()
            | "Choose"
            >> beam.FlatMap(
                choose,
                positives=beam.pvalue.AsSingleton(n_positive),
                available=beam.pvalue.AsDict(available),
                methods=self.methods,
                seed=self.seed,
            )
        )
        rows = (positives, negatives) | "AllRows" >> beam.Flatten()
        return {
            "rows": rows,
            "items": items,
            AVAILABLE: available,
            DEAD_LETTER: flatten(dead, p, "CompatDeadLetters"),  # none without paraphrases
        }
