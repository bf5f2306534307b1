"""Aligning RxR words to path viewpoints by time: hand-worked traces, properties against a brute-force
oracle, and the RxR-format fixtures made from R2R val_unseen (whose traces record the true assignment)."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.datasets.alignments import validate_segments
from vlnkit.datasets.pose_traces import PoseTraceError, load_pose_trace, parse_pose_trace, pose_trace_path
from vlnkit.fixtures.rxr import read_jsonl, write_rxr_fixtures
from vlnkit.io.dead_letters import RecordError
from vlnkit.probes.episodes import truncation_candidates
from vlnkit.probes.pose_alignment import (
    AlignmentError,
    _start_times,
    align_guide,
    rxr_alignments,
    trace_path_indices,
    word_viewpoints,
)


def trace(panos, times, path="t.npz"):
    return parse_pose_trace({"pano": np.array(panos).reshape(-1, 1), "time": np.array(times, float)}, path)


def guide(words, path=("a", "b", "c", "d"), text=None, **extra):
    timed = [{"word": w} if t is None else {"start_time": t, "word": w, "end_time": t + 0.3} for w, t in words]
    return {
        "instruction_id": 5,
        "path_id": 1,
        "scan": "s",
        "split": "val_unseen",
        "path": list(path),
        "heading": 1.0,
        "language": "en-US",
        "instruction": " ".join(w for w, _ in words) if text is None else text,
        "timed_instruction": timed,
        **extra,
    }


TRACE = trace(["a", "a", "b", "c", "c"], [0, 1, 2, 3, 5])


def test_hand_worked_alignment():
    words = [("Walk", 0.2), ("ahead", 1.5), ("then", None), ("left", 2.0), ("and", 3.9), ("stop.", 6.0)]
    record = align_guide(guide(words), TRACE)
    assert [(s["text"], s["end"], s["first"], s["last"]) for s in record["segments"]] == [
        ("Walk ahead then", 16, 0, 0),  # "then" has no time: it inherits "ahead"'s viewpoint
        ("left", 21, 0, 1),  # spoken at t=2.0 exactly, the snapshot at b
        ("and stop.", 30, 1, 3),  # the last segment runs to the end of the path (d is never reached)
    ]
    assert (record["source"], record["instr_id"], record["language"]) == ("rxr", "5", "en-US")


def test_untimed_first_words_and_words_before_the_first_snapshot():
    late = trace(["b", "c"], [1.0, 2.0])
    record = align_guide(guide([("Go", None), ("now", 0.5), ("on", 1.5), ("up", 2.5)]), late)
    assert [(s["text"], s["first"], s["last"]) for s in record["segments"]] == [("Go now on", 0, 1), ("up", 1, 3)]


def test_word_timed_before_its_predecessor_keeps_the_predecessors_viewpoint():
    at = word_viewpoints(np.array([0.5, 3.5, 1.0, 4.0]), TRACE.time, trace_path_indices(TRACE, list("abcd")))
    assert at.tolist() == [0, 2, 2, 2]


def test_guide_stepping_back_keeps_the_furthest_position_and_repeated_viewpoints_move_on():
    assert trace_path_indices(trace(list("abac"), range(4)), list("abc")).tolist() == [0, 1, 1, 2]
    assert trace_path_indices(trace(list("abac"), range(4)), list("abac")).tolist() == [0, 1, 2, 3]


def test_snapshot_off_the_path_names_the_trace_file_and_viewpoint():
    with pytest.raises(PoseTraceError, match=r"^t\.npz: snapshot 1 \(t=1 s\) is at 'z', not on the path"):
        align_guide(guide([("Go", 0.5)]), trace(["a", "z"], [0, 1]))


def test_no_timed_word_is_an_alignment_error():
    with pytest.raises(AlignmentError, match="no word"):
        align_guide(guide([("Go", None), ("on", None)]), TRACE)


def test_malformed_times_count_as_missing():
    assert np.isnan(_start_times([{"start_time": "1"}, {"start_time": True}, {"start_time": math.inf}, 7])).all()


def test_text_that_differs_from_the_timed_words_is_aligned_by_tokens():
    words = [("Walk", 0.2), ("ahead,", 1.5), ("then", 2.5), ("left.", 3.5)]
    record = align_guide(guide(words, text="Walk  ahead , then\nleft ."), TRACE)
    assert [(s["text"], s["first"], s["last"]) for s in record["segments"]] == [
        ("Walk  ahead ,", 0, 0),
        ("then", 0, 1),
        ("left .", 1, 3),
    ]


def test_records_feed_the_probe_candidates():
    words = [("Walk", 0.2), ("ahead.", 1.5), ("Turn", 2.2), ("left.", 2.5), ("Stop.", 4.0)]
    candidates = truncation_candidates(align_guide(guide(words), TRACE))
    assert [(c["path"], c["prefix"], c["prefix_next"]) for c in candidates] == [
        (["a"], "Walk ahead.", "Walk ahead. Turn left."),
        (["a", "b"], "Walk ahead. Turn left.", "Walk ahead. Turn left. Stop."),
    ]


def test_missing_trace_is_a_dead_letter_naming_the_file(tmp_path):
    out = list(rxr_alignments([guide([("Go", 0.5)], _source="g.jsonl.gz")], str(tmp_path)))
    expected = pose_trace_path(str(tmp_path), "val_unseen", 5)
    assert out == [RecordError(expected, "instruction_id=5", "pose trace not found")]


def test_guide_without_times_is_a_dead_letter_naming_the_guide_file(tmp_path):
    path = pose_trace_path(str(tmp_path), "val_unseen", 5)
    (tmp_path / "rxr_val_unseen").mkdir()
    np.savez(path, pano=np.array([["a"]]), time=np.zeros((1, 1), np.float32))
    bad = guide([("Go", None)], _source="g.jsonl.gz")
    good = guide([("Go", 0.5)])
    out = list(rxr_alignments([bad, good], str(tmp_path)))
    assert out[0] == RecordError("g.jsonl.gz", "instruction_id=5", "no word of 'timed_instruction' has a start_time")
    assert out[1]["segments"] == [{"text": "Go", "end": 2, "first": 0, "last": 3}]


# ---------------------------------------------------------------------------- properties
@st.composite
def traces_and_words(draw):
    n = draw(st.integers(1, 7))
    path = [f"v{j}" for j in range(n)]
    runs = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=12))  # viewpoints visited, in any order
    gaps = draw(st.lists(st.integers(0, 3), min_size=len(runs), max_size=len(runs)))
    panos = [path[j] for j in runs]
    times = np.cumsum(np.array(gaps, float) * 0.5)
    words = draw(st.lists(st.one_of(st.none(), st.floats(-1.0, 8.0)), min_size=1, max_size=15))
    if all(w is None for w in words):
        words[0] = 0.0
    return path, panos, times, words


def oracle_viewpoints(path, panos, times, starts):
    """Brute force: walk the snapshots keeping the furthest path position; per word, the last snapshot
    at or before its time; untimed words (and earlier-timed ones) the running maximum."""
    position, current = [], 0
    for p in panos:
        ahead = [j for j, v in enumerate(path) if v == p and j >= current]
        current = ahead[0] if ahead else current
        position.append(current)
    at = []
    for t in starts:
        if t is None:
            at.append(None)
            continue
        snap = max([i for i, s in enumerate(times) if s <= t], default=0)
        at.append(position[snap])
    first = next(a for a in at if a is not None)
    out, best = [], -1
    for a in at:
        best = max(best, first if a is None else a)
        out.append(best)
    return out


@settings(max_examples=150, deadline=None)
@given(traces_and_words())
def test_segments_are_in_order_within_and_covering_the_path(case):
    path, panos, times, starts = case
    words = [(f"w{i}", t) for i, t in enumerate(starts)]
    record = align_guide(guide(words, path=path), trace(panos, times))
    segments = record["segments"]
    assert validate_segments(segments, len(path)) is None
    assert segments[0]["first"] == 0 and segments[-1]["last"] == len(path) - 1
    assert all(b["first"] == a["last"] <= b["last"] for a, b in zip(segments, segments[1:]))
    assert " ".join(s["text"] for s in segments) == record["instruction"]
    assert segments[-1]["end"] == len(record["instruction"])
    expected = oracle_viewpoints(path, panos, list(times), starts)
    got = word_viewpoints(
        _start_times(guide(words, path=path)["timed_instruction"]), times, trace_path_indices(trace(panos, times), path)
    )
    assert got.tolist() == expected


# ---------------------------------------------------------------------------- the fixtures
@pytest.fixture(scope="module")
def fixtures(r2r_dir, connectivity_dir, tmp_path_factory):
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:60]
    return write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp_path_factory.mktemp("rxr")))


@pytest.mark.real_data
def test_alignment_recovers_the_words_viewpoints_recorded_in_the_fixture_traces(fixtures):
    guides = read_jsonl(fixtures.guide)
    for line, record in zip(guides, rxr_alignments(guides, fixtures.pose_traces)):
        assert isinstance(record, dict), record
        trace_ = load_pose_trace(pose_trace_path(fixtures.pose_traces, "val_unseen", line["instruction_id"]))
        truth = trace_.arrays["text_mask"].argmax(axis=0)  # where each word was spoken
        starts = _start_times(line["timed_instruction"])
        got = word_viewpoints(starts, trace_.time, trace_path_indices(trace_, line["path"]))
        timed = ~np.isnan(starts)
        assert (got[timed] == truth[timed]).all()
        # an untimed word takes its predecessor's viewpoint (the first timed word's at the start)
        for i in np.flatnonzero(~timed):
            assert got[i] == (got[i - 1] if i else got[np.argmax(timed)])
        assert validate_segments(record["segments"], len(line["path"])) is None
        assert record["instr_id"] == str(line["instruction_id"]) and record["language"] == line["language"]
