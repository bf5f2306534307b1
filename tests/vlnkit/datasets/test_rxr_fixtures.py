"""RxR-format fixtures from R2R: the README's sample entries read with the same function and checked against
SOURCE.md, and fixtures of the same format field for field, consistent with their graphs and pose traces."""

import json
import math

import numpy as np
import pytest
import spacy

from vlnkit.datasets.pose_traces import load_pose_trace, pose_trace_path
from vlnkit.datasets.rxr_fixtures import (
    FOLLOWER_FIELDS,
    FOLLOWER_METRICS,
    GUIDE_FIELDS,
    LANGUAGES,
    r2r_instr_id,
    read_jsonl,
    rxr_instruction_id,
    write_rxr_fixtures,
)
from vlnkit.evaluation.metrics import score
from vlnkit.navigation.graph import NavGraph
from vlnkit.perturbations.direction_lexicons import lexicon_for
from vlnkit.perturbations.instructions import direction_swap

pytestmark = pytest.mark.real_data


@pytest.fixture(scope="module")
def sample(shared_data):
    folder = shared_data / "rxr_sample"
    return read_jsonl(str(folder / "rxr_sample_guide.jsonl.gz")), read_jsonl(
        str(folder / "rxr_sample_follower.jsonl.gz")
    )


@pytest.fixture(scope="module")
def records(r2r_dir):
    return json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:40]


@pytest.fixture(scope="module")
def fixtures(records, connectivity_dir, tmp_path_factory):
    files = write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp_path_factory.mktemp("rxr")))
    return files, read_jsonl(files.guide), read_jsonl(files.follower)


def test_sample_entries_state_what_source_md_says(sample, connectivity_dir):
    (guide,), (follower,) = sample
    assert (guide["split"], guide["scan"], guide["path_id"], guide["instruction_id"]) == (
        "val_seen",
        "2n8kARJN3HM",
        11,
        26,
    )
    assert guide["language"] == "en-IN" and len(guide["path"]) == 5
    assert guide["timed_instruction"] == [{"start_time": 0.4, "word": "Okay,", "end_time": 1.0}]
    assert follower["instruction_id"] == 26 and len(follower["path"]) == 6
    m = follower["metrics"]
    assert m["ndtw"] == pytest.approx(math.exp(-m["dtw"] / (3 * 5)), rel=1e-12)
    assert m["sdtw"] == m["ndtw"] and m["sr"] == 1.0 and m["ne"] == 0
    graph = NavGraph.load(connectivity_dir, "2n8kARJN3HM")
    ours = score(guide["path"], follower["path"], graph, metrics=FOLLOWER_METRICS)
    assert ours["dtw"] == pytest.approx(1.5760, abs=1e-4) and ours["spl"] == pytest.approx(0.94822, abs=1e-5)
    assert abs(ours["dtw"] - m["dtw"]) < 0.03  # another graph revision: close, not equal (SOURCE.md)
    assert ours["ne"] == 0 and ours["sr"] == 1.0


def kinds(line: dict) -> dict:
    return {k: type(v) for k, v in line.items()}


def test_fixtures_have_the_sample_format_field_for_field(sample, fixtures):
    (guide,), (follower,) = sample
    _, guides, followers = fixtures
    assert kinds(guide) == GUIDE_FIELDS and list(guide) == list(GUIDE_FIELDS)
    assert kinds(follower) == {**FOLLOWER_FIELDS} and list(follower) == list(FOLLOWER_FIELDS)
    for line in guides:
        assert list(line) == list(guide) and kinds(line) == kinds(guide)
        assert line["split"] == "val_unseen" and line["language"] in LANGUAGES
        for word in line["timed_instruction"]:
            assert list(word) in (["start_time", "word", "end_time"], ["word"])
    for line in followers:
        assert list(line) == list(follower) and list(line["metrics"]) == list(follower["metrics"])


def test_instruction_ids_are_one_to_one_with_r2r_addresses(r2r_dir):
    ids = []
    for split in ("train", "val_seen", "val_unseen", "test"):
        for r in json.loads((r2r_dir / f"R2R_{split}.json").read_text()):
            for k in range(len(r["instructions"])):
                ids.append(rxr_instruction_id(r["path_id"], k))
                assert r2r_instr_id(ids[-1]) == f"{r['path_id']}_{k}"
    assert len(set(ids)) == len(ids) and max(ids) < 1_000_000  # fits RxR's {instruction_id:06} file names
    with pytest.raises(ValueError, match="does not fit"):
        rxr_instruction_id(7, 10)


def test_fixtures_keep_r2r_paths_and_english_texts(records, fixtures):
    _, guides, _ = fixtures
    by_id = {f"{r['path_id']}_{k}": (r, t) for r in records for k, t in enumerate(r["instructions"])}
    assert len(guides) == len(by_id) and {r2r_instr_id(g["instruction_id"]) for g in guides} == set(by_id)
    for g in guides:
        r, text = by_id[r2r_instr_id(g["instruction_id"])]
        assert (g["path"], g["scan"], g["heading"], g["path_id"]) == (r["path"], r["scan"], r["heading"], r["path_id"])
        if g["language"].startswith("en"):
            assert g["instruction"] == text
        assert [w["word"] for w in g["timed_instruction"]] == g["instruction"].split()
    assert {g["language"] for g in guides} == set(LANGUAGES)


def test_hindi_and_telugu_lines_have_direction_words_to_swap(fixtures):
    _, guides, _ = fixtures
    found = 0
    for g in guides:
        if g["language"] in ("hi-IN", "te-IN") and " left" in g["instruction"].lower():
            pytest.fail(f"{g['instruction_id']}: English 'left' left in a {g['language']} line")
        if g["language"] in ("hi-IN", "te-IN"):
            lexicon = lexicon_for(g["language"])
            doc = spacy.blank(lexicon.language)(g["instruction"])
            result = direction_swap(doc, np.random.default_rng(0), language=g["language"])
            found += hasattr(result, "changes")
    assert found >= 10


def test_some_words_have_no_times_and_every_line_has_timed_words(fixtures):
    _, guides, _ = fixtures
    words = [w for g in guides for w in g["timed_instruction"]]
    untimed = sum("start_time" not in w for w in words) / len(words)
    assert 0.005 < untimed < 0.08
    assert all(any("start_time" in w for w in g["timed_instruction"]) for g in guides)


def test_words_are_spoken_while_the_guide_stands_at_their_viewpoint(fixtures):
    files, guides, _ = fixtures
    for g in guides:
        trace = load_pose_trace(pose_trace_path(files.pose_traces, "val_unseen", g["instruction_id"]))
        arrays = trace.arrays
        k, m = len(g["path"]), len(g["timed_instruction"])
        assert arrays["image_mask"].shape == (k, 128, 256) and arrays["text_mask"].shape == (k, m)
        assert arrays["feature_weights"].shape == (k, 36) and arrays["extrinsic_matrix"].shape == (len(trace), 16)
        assert (arrays["text_mask"].sum(axis=0) == 1).all()
        spoken_at = arrays["text_mask"].argmax(axis=0)
        assert (np.diff(spoken_at) >= 0).all()
        # the camera stands at the viewpoint of each snapshot (translation of the extrinsic matrix)
        assert set(trace.pano.tolist()) == set(g["path"])
        for i, word in enumerate(g["timed_instruction"]):
            if "start_time" in word:
                for t in (word["start_time"], word["end_time"]):
                    at = np.searchsorted(trace.time, t, side="right") - 1
                    assert trace.pano[at] == g["path"][spoken_at[i]]


def test_follower_metrics_are_the_toolkits_and_obey_rxrs_definitions(fixtures, connectivity_dir):
    _, guides, followers = fixtures
    kinds_seen = set()
    for g, f in zip(guides, followers):
        graph = NavGraph.load(connectivity_dir, g["scan"])
        assert f["instruction_id"] == f["demonstration_id"] == g["instruction_id"]
        assert f["metrics"] == score(g["path"], f["path"], graph, metrics=FOLLOWER_METRICS)
        m = f["metrics"]
        assert m["ndtw"] == pytest.approx(math.exp(-m["dtw"] / (3 * len(g["path"]))), rel=1e-12)
        assert m["sr"] == float(m["ne"] < 3.0) and m["sdtw"] == m["sr"] * m["ndtw"]
        kinds_seen.add("same" if f["path"] == g["path"] else "longer" if len(f["path"]) > len(g["path"]) else "short")
    assert kinds_seen == {"same", "longer", "short"}


def test_generation_is_reproducible(records, connectivity_dir, fixtures, tmp_path):
    files, _, _ = fixtures
    again = write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp_path), pose_traces=False)
    assert open(again.guide, "rb").read() == open(files.guide, "rb").read()
    assert open(again.follower, "rb").read() == open(files.follower, "rb").read()
