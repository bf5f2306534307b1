import json

import pytest

from vlnkit.datasets.alignments import READERS, parse_fgr2r, reader, segment_ends, validate_segments
from vlnkit.datasets.r2r import RecordError
from vlnkit.fixtures.grid import write_environment


def fgr2r_record(record: dict) -> dict:
    """A synthetic R2R record turned into FGR2R format: three sub-instructions per instruction
    (two when the path is short), covering viewpoints [1, a], [a, b], [b, n] as FGR2R does."""
    path, n = record["path"], len(record["path"])
    cuts = [1, max(1, n // 3), max(1, (2 * n) // 3), n] if n >= 3 else [1, 1, n]
    texts, subs, views = [], [], []
    for v in range(len(record["instructions"])):
        chunk = [[cuts[k], cuts[k + 1]] for k in range(len(cuts) - 1)]
        words = [
            f"Walk to {path[c[1] - 1]}" if k < len(chunk) - 1 else f"stop at {path[-1]}" for k, c in enumerate(chunk)
        ]
        sentences = [w + (", then" if k == 0 and v % 2 else ".") for k, w in enumerate(words)]
        texts.append(" ".join(sentences) + " ")
        subs.append([[t.lower() for t in w.split()] for w in words])
        views.append(chunk)
    return {**record, "instructions": texts, "new_instructions": repr(subs), "chunk_view": views}


def write_fgr2r(directory, **kwargs):
    """(FGR2R file, connectivity dir) of the synthetic environment."""
    r2r_path, conn_dir = write_environment(str(directory), **kwargs)
    with open(r2r_path) as f:
        records = [fgr2r_record(r) for r in json.load(f)]
    path = f"{directory}/FGR2R_synthetic.json"
    with open(path, "w") as f:
        json.dump(records, f)
    return path, conn_dir


# A made-up record in FGR2R's layout (lemmatized, lower-cased tokens; 1-based chunk indices).
RECORD = {
    "distance": 9.5,
    "scan": "scanA",
    "path_id": 17,
    "path": ["a", "b", "c", "d"],
    "heading": 1.5,
    "instructions": [
        "Walk past the chairs, then turn left. Go up the stairs and wait by the plants. ",
        "Exit the room and stop.",
    ],
    "new_instructions": repr(
        [
            [
                ["walk", "past", "the", "chair"],
                ["then", "turn", "left"],
                ["go", "up", "the", "stair"],
                ["and", "wait", "by", "the", "plant"],
            ],
            [["exit", "the", "room"], ["and", "stop"]],
        ]
    ),
    "chunk_view": [[[1, 2], [2, 2], [2, 4], [4, 4]], [[1, 3], [3, 4]]],
}


def test_segment_ends_cut_the_original_text_at_sub_instruction_starts():
    text = RECORD["instructions"][0]
    subs = eval(RECORD["new_instructions"])[0]
    ends = segment_ends(text, subs)
    pieces = [text[a:b].strip() for a, b in zip([0] + ends[:-1], ends)]
    assert pieces == ["Walk past the chairs,", "then turn left.", "Go up the stairs", "and wait by the plants."]
    assert ends[-1] == len(text)


def test_segment_ends_reports_sub_instructions_that_are_not_in_the_text():
    with pytest.raises(ValueError, match="cannot locate the end of sub-instruction 0"):
        segment_ends("walk forward", [["walk"], ["zzzz", "qqqq"]])


def test_fgr2r_record_gives_one_alignment_per_instruction():
    out = list(parse_fgr2r(json.dumps([RECORD]), "f.json"))
    assert [a["instr_id"] for a in out] == ["17_0", "17_1"]
    a = out[0]
    assert a["source"] == "fgr2r" and a["scan"] == "scanA" and a["heading"] == 1.5 and a["path"] == list("abcd")
    assert [(s["first"], s["last"]) for s in a["segments"]] == [(0, 1), (1, 1), (1, 3), (3, 3)]
    assert a["instruction"][: a["segments"][1]["end"]].strip() == "Walk past the chairs, then turn left."
    assert [s["text"] for s in out[1]["segments"]] == ["Exit the room", "and stop."]


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"chunk_view": [[[1, 2]], [[1, 3], [3, 4]]]}, "4 sub-instructions but 1 'chunk_view' entries"),
        ({"chunk_view": [[[1, 2], [2, 2], [2, 9], [4, 4]], [[1, 3], [3, 4]]]}, "outside the path of 4"),
        ({"chunk_view": [[[1, 3], [2, 2], [2, 4], [4, 4]], [[1, 3], [3, 4]]]}, "before the previous one"),
        ({"new_instructions": "[[", "chunk_view": []}, "not a Python literal"),
        ({"chunk_view": [[[1, 4]]]}, "one entry per instruction"),
        # chunk_view numbers must be JSON integers: "2", 2.5, true and [2] are not coerced
        ({"chunk_view": [[[1, "2"], [2, 2], [2, 3], [4, 4]], [[1, 3], [3, 4]]]}, "pair of integers"),
        ({"chunk_view": [[[1, 2.5], [2, 2], [2, 3], [4, 4]], [[1, 3], [3, 4]]]}, "pair of integers"),
        ({"chunk_view": [[[True, 2], [2, 2], [2, 3], [4, 4]], [[1, 3], [3, 4]]]}, "pair of integers"),
        ({"chunk_view": [[[1, 2, 3], [2, 2], [2, 3], [4, 4]], [[1, 3], [3, 4]]]}, "pair of integers"),
        ({"chunk_view": [[[1, 2], [2, 2], [2, 3], [4, 4]], [[1, 3], "3-4"]]}, "pair of integers"),
    ],
)
def test_malformed_alignments_become_record_errors_naming_file_and_record(change, reason):
    out = list(parse_fgr2r(json.dumps([{**RECORD, **change}]), "f.json"))
    errors = [e for e in out if isinstance(e, RecordError)]
    assert errors and errors[0].source == "f.json" and "path_id=17" in errors[0].record
    assert reason in errors[0].reason


def test_missing_alignment_fields_and_bad_r2r_fields_are_errors():
    no_chunks = {k: v for k, v in RECORD.items() if k != "chunk_view"}
    out = list(parse_fgr2r(json.dumps([no_chunks, {"scan": "x"}]), "f.json"))
    assert [e.reason for e in out] == ["missing field 'chunk_view'", "missing field 'path_id'"]


def test_validate_segments_and_reader_registry():
    assert validate_segments([], 3) == "no sub-instructions"
    assert validate_segments([{"first": 0, "last": 2, "end": 5}], 3) is None
    assert reader("fgr2r") is READERS["fgr2r"] is parse_fgr2r
    with pytest.raises(ValueError, match="unknown alignment format"):
        reader("rxr")


def test_synthetic_fgr2r_reads_cleanly(tmp_path):
    path, _ = write_fgr2r(tmp_path, scans=1, paths_per_scan=5, seed=2)
    out = list(parse_fgr2r(open(path).read(), path))
    assert len(out) == 15 and not any(isinstance(a, RecordError) for a in out)
    for a in out:
        assert a["segments"][-1]["last"] == len(a["path"]) - 1
        assert a["instruction"][: a["segments"][0]["end"]].strip().startswith("Walk to ")


@pytest.mark.real_data
def test_hand_checked_fgr2r_val_unseen_records(shared_data):
    path = shared_data / "fgr2r" / "FGR2R_val_unseen.json"
    alignments = {a["instr_id"]: a for a in parse_fgr2r(path.read_bytes(), str(path))}
    assert len(alignments) == 2349 and not any(isinstance(a, RecordError) for a in alignments.values())
    a = alignments["4332_1"]  # chunk_view [[1, 2], [2, 3], [3, 4]]; checked by reading the file
    assert [s["text"] for s in a["segments"]] == [
        "Walk straight toward the bar with the chairs/stool.",
        "Turn left and go straight until you get to three tables with chairs.",
        "Turn left and wait near the couch.",
    ]
    assert [(s["first"], s["last"]) for s in a["segments"]] == [(0, 1), (1, 2), (2, 3)]
    b = alignments["4332_0"]  # chunk_view [[1, 4], [4, 4]]: the first sub-instruction covers the whole path
    assert [s["text"] for s in b["segments"]] == ["Walk to the other end of the lobby", "and wait near the exit."]


@pytest.mark.real_data
def test_fgr2r_val_seen_record_with_a_missing_sub_instruction_list_is_reported(shared_data):
    path = shared_data / "fgr2r" / "FGR2R_val_seen.json"
    out = list(parse_fgr2r(path.read_bytes(), str(path)))
    errors = [e for e in out if isinstance(e, RecordError)]
    # path_id 757 has 4 instructions but only 3 sub-instruction lists in the released file.
    assert [(e.record, e.reason) for e in errors] == [
        ("#238 (path_id=757)", "'new_instructions' must list one entry per instruction (4)")
    ]
    assert len(out) - len(errors) == 1021 - 4
