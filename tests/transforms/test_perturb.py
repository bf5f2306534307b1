"""The Perturb transform against the core functions called directly, plus dead letters."""

import json

import apache_beam as beam
import spacy
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.deadletter import DEAD_LETTER
from transforms.perturb import Perturb, instruction_items
from transforms.read import ReadR2R
from vlnkit.fixtures.grid import write_environment
from vlnkit.navigation.graph import GraphStore
from vlnkit.perturbations import instructions as instruction_perturbations
from vlnkit.perturbations import trajectories as trajectory_perturbations
from vlnkit.perturbations.compat import NotApplicable, perturbation_row, record_rng
from vlnkit.perturbations.nlp import load_pipeline

METHODS = ("direction_swap", "random_walk", "path_reversal", "viewpoint_swap")


def environment(tmp_path):
    r2r_path, conn_dir = write_environment(str(tmp_path), scans=2, paths_per_scan=6, seed=2, instructions=2)
    records = json.loads(open(r2r_path).read())
    for r in records:  # give half the instructions direction words
        r["instructions"][0] = "Turn left, go up the stairs and walk into the Kitchen. " + r["instructions"][0]
    records.append({**records[0], "path_id": 999, "scan": "no_such_scan"})
    with open(r2r_path, "w") as f:
        json.dump(records, f)
    return r2r_path, conn_dir, records


def expected_rows(records, conn_dir, seed, per_instruction):
    nlp, store, out = spacy.blank("en"), GraphStore(conn_dir), []
    for r in records:
        for item in instruction_items(r):
            # A record whose scan has no graph still gets instruction perturbations (they need no graph).
            for method in METHODS if r["scan"] != "no_such_scan" else ("direction_swap",):
                seen = set()
                for v in range(per_instruction):
                    rng = record_rng(seed, method, item["source_instr_id"], v)
                    if method == "direction_swap":
                        res = instruction_perturbations.direction_swap(nlp(item["instruction"]), rng)
                    else:
                        res = trajectory_perturbations.PERTURB[method](store.get(r["scan"]), item["path"], rng)
                    key = getattr(res, "text", None) or getattr(res, "path", None)
                    if isinstance(res, NotApplicable) or key in seen:
                        continue
                    seen.add(key)
                    out.append(perturbation_row(item, res, v))
    return out


def canon(row):
    return json.dumps(row, sort_keys=True)


def test_perturb_transform_matches_the_core(tmp_path):
    r2r_path, conn_dir, records = environment(tmp_path)
    expected = [canon(r) for r in expected_rows(records, conn_dir, seed=4, per_instruction=2)]
    directions = [json.loads(e) for e in expected if '"direction_swap"' in e]
    # Only the instructions given direction words; "left" has two swaps, the rest one: 1 or 2 distinct variants.
    assert all(d["source_instr_id"].endswith("_0") for d in directions)
    assert len({d["source_instr_id"] for d in directions}) == 13 and 13 < len(directions) < 26
    with TestPipeline() as p:
        recs = (p | ReadR2R([r2r_path]))["records"]
        out = recs | Perturb(METHODS, "blank:en", conn_dir, per_instruction=2, seed=4)
        assert_that(out["rows"] | beam.Map(canon), equal_to(expected), label="rows")
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: (d["stage"], "no_such_scan_connectivity.json" in d["reason"])),
            equal_to([("graph", True)]),
            label="dead",
        )


INSTRUCTION_ONLY = ("direction_swap", "entity_swap", "phrase_swap")
HAND_WRITTEN = [
    "Walk past the kitchen table and turn left at the bedroom door. Wait by the sofa.",
    "Go up the stairs. Turn right into the hallway. Stop in front of the bathroom.",
    "Exit the bedroom and walk towards the dining table, then wait near the couch.",
]


def test_one_megabyte_instruction_is_a_dead_letter_and_the_batch_goes_on(tmp_path):
    """spaCy refuses texts over nlp.max_length (1,000,000 characters) inside nlp.pipe, for the whole
    batch: the oversized instruction must become one dead letter, every other one still perturbed."""
    nlp = load_pipeline(None, INSTRUCTION_ONLY)
    huge = ("Turn left and walk past the sofa. " * 30_000)[: nlp.max_length + 1]
    assert len(huge) > 1_000_000
    records = [
        {"scan": "s", "path_id": k, "path": ["a", "b"], "heading": 0.0, "distance": 1.0, "instructions": [t]}
        for k, t in enumerate(HAND_WRITTEN)
    ]
    records[1]["instructions"] = [huge, HAND_WRITTEN[1]]  # same record: its other instruction still runs
    path = tmp_path / "big.json"
    path.write_text(json.dumps(records))
    expected = []
    for r in records:
        for item in instruction_items(r):
            if item["instruction"] == huge:
                continue
            doc = nlp(item["instruction"])
            for method in INSTRUCTION_ONLY:
                res = instruction_perturbations.PERTURB[method](doc, record_rng(0, method, item["source_instr_id"], 0))
                if not isinstance(res, NotApplicable):
                    expected.append(canon(perturbation_row(item, res, 0)))
    assert len(expected) >= 3 * 3 - 1  # hand-written so that (nearly) every method applies
    with TestPipeline() as p:
        recs = (p | ReadR2R([str(path)]))["records"]
        out = recs | Perturb(INSTRUCTION_ONLY, None, None)
        assert_that(out["rows"] | beam.Map(canon), equal_to(expected), label="rows")
        assert_that(
            out[DEAD_LETTER]
            | beam.Map(lambda d: (d["stage"], d["record"], str(path) in d["source"], "max_length" in d["reason"])),
            equal_to([("parse", "#1 (instr_id='1_0')", True, True)]),
            label="dead",
        )


def test_a_method_that_raises_on_one_instruction_dead_letters_only_that_one(tmp_path, monkeypatch):
    """Whatever raises while perturbing one instruction: a dead letter for it, the batch goes on."""
    swap = instruction_perturbations.PERTURB["direction_swap"]

    def fragile(doc, rng):
        if "BOOM" in doc.text:
            raise KeyError("cannot handle this one")
        return swap(doc, rng)

    monkeypatch.setitem(instruction_perturbations.PERTURB, "direction_swap", fragile)
    texts = ["Turn left at the sofa.", "Go up the BOOM stairs.", "Walk into the kitchen."]
    records = [
        {"scan": "s", "path_id": k, "path": ["a", "b"], "heading": 0.0, "instructions": [t]}
        for k, t in enumerate(texts)
    ]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(records))
    with TestPipeline() as p:
        out = (p | ReadR2R([str(path)]))["records"] | Perturb(["direction_swap"], "blank:en", None)
        assert_that(out["rows"] | beam.Map(lambda r: r["source_instr_id"]), equal_to(["0_0", "2_0"]), label="rows")
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: (d["stage"], d["record"], d["reason"])),
            equal_to([("perturb", "#1 (instr_id='1_0')", "KeyError: 'cannot handle this one'")]),
            label="dead",
        )
