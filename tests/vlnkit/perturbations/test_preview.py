"""The preview command: marked changes that reproduce both texts, the applicability table, and
the same results as the perturb job's core calls (same pipeline, same per-record seeds)."""

import json
import re

import pytest

from vlnkit.perturbations.compat import NotApplicable, record_rng
from vlnkit.perturbations.instructions import PERTURB, Change
from vlnkit.perturbations.preview import main, mark

EDIT = re.compile(r"\[\[(?:\+(?P<ins>.*?)|-(?P<del>.*?)|(?P<old>.*?) -> (?P<new>.*?))\]\]", re.DOTALL)


def unmark(marked: str) -> tuple[str, str]:
    """(source, perturbed) read back from a marked text."""
    src = EDIT.sub(lambda m: m["del"] if m["del"] is not None else (m["old"] or ""), marked)
    out = EDIT.sub(lambda m: m["ins"] if m["ins"] is not None else (m["new"] or ""), marked)
    return src, out


def test_mark_shows_replacements_insertions_and_deletions():
    text = "Turn left and stop."
    changes = [Change(5, 9, "left", "right"), Change(9, 18, " and stop", ""), Change(19, 19, "", " Wait.")]
    assert mark(text, changes) == "Turn [[left -> right]][[- and stop]].[[+ Wait.]]"
    assert unmark(mark(text, changes)) == (text, "Turn right. Wait.")


def write(tmp_path, records):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(records))
    return str(path)


RECORDS = [
    {"scan": "s", "path_id": 1, "path": ["a", "b"], "heading": 0, "instructions": ["Turn left at the sofa.", "Wait."]},
    {"scan": "s", "path_id": 2, "path": ["a"], "heading": 0, "instructions": ["Go up the stairs."]},
    {"scan": "s", "path_id": 3, "heading": 0, "instructions": ["no path"]},  # invalid: counted, not dropped
]


def test_preview_with_the_tokenizer_only_pipeline(tmp_path, capsys):
    report = main([f"--dataset={write(tmp_path, RECORDS)}", "--spacy_model=blank:en", "--methods=direction_swap"])
    out = capsys.readouterr().out
    m = report["methods"]["direction_swap"]
    assert (report["instructions"], report["invalid_records"], m["applied"]) == (3, 1, 2)
    assert m["not_applicable"] == {"no_direction_word": 1}
    assert "   changes:   Go [[up -> down]] the stairs." in out
    assert re.search(r"^direction_swap +2 +66\.7% +swap 2 +no_direction_word 1$", out, re.MULTILINE)
    assert "3 instructions (0 unparsable, 1 invalid records)" in out


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--methods=random_walk"], "random_walk perturb paths, not instructions"),
        (["--methods=flip"], "unknown perturbation method 'flip'"),
        (["--methods=phrase_swap", "--spacy_model=blank:en"], "phrase_swap needs parser"),
        (["--spacy_model=no_such_model_xyz"], "'no_such_model_xyz' is not installed"),
    ],
)
def test_structural_problems_are_one_line_and_exit_2(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as exc:
        main([f"--dataset={write(tmp_path, RECORDS)}", *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and message in err[0]


def test_missing_file_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([f"--dataset={tmp_path}/nothing.json"])
    assert exc.value.code == 2 and "cannot read" in capsys.readouterr().err


@pytest.mark.real_data
def test_preview_of_val_seen_matches_the_core_and_marks_reproduce_both_texts(r2r_dir, val_seen, capsys):
    report = main([f"--dataset={r2r_dir}/R2R_val_seen.json", "--sample=4", "--seed=3"])
    out = capsys.readouterr().out
    assert report["instructions"] == 1021 and report["unparsable"] == 0
    for method, m in report["methods"].items():
        # The same per-record seeds as the job: tallies recomputed from the session's parse agree.
        results = [PERTURB[method](d, record_rng(3, method, i, 0)) for i, d in zip(val_seen.ids, val_seen.docs)]
        assert m["applied"] == sum(not isinstance(r, NotApplicable) for r in results), method
        assert len(m["samples"]) == 4
        for s in m["samples"]:
            assert unmark(s["marked"]) == (s["source"], s["perturbed"]) and s["perturbed"] != s["source"]
            assert f"-- {s['instr_id']} ({s['operation']})" in out
        assert re.search(rf"^{method} +{m['applied']} ", out, re.MULTILINE)
