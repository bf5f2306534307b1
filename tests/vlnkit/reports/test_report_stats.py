"""Report statistics: checked against plain numpy / Counter, hand-worked examples and merge properties."""

import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.datasets.r2r import parse_r2r
from vlnkit.datasets.r4r import JoinConfig, join_paths
from vlnkit.navigation.graph import GraphStore, NavGraph
from vlnkit.reports.stats import (
    DATASET,
    PARAPHRASES,
    PERTURBATIONS,
    SCORE_SUMMARY,
    SCORES,
    ReportInputError,
    count_partial,
    dataset_partial,
    detect_kind,
    display_bins,
    drawing_spec,
    finalize,
    hist_quantile,
    infer_connector,
    input_label,
    merge,
    paraphrases_partial,
    partial_from_arrays,
    sample_key,
    scores_partial,
)


# --------------------------------------------------------------------------- a tiny hand-made graph
def line_graph():
    """a - b - c - d on the x axis at 0, 1, 3, 6 m, plus e off to the side of b (unconnected to others)."""
    ids = ["a", "b", "c", "d", "e"]
    x = [0.0, 1.0, 3.0, 6.0, 1.0]
    y = [0.0, 0.0, 0.0, 0.0, 2.0]
    edges = {("a", "b"), ("b", "c"), ("c", "d"), ("b", "e")}
    entries = []
    for i, v in enumerate(ids):
        pose = [0.0] * 16
        pose[3], pose[7] = x[i], y[i]
        entries.append(
            {
                "image_id": v,
                "pose": pose,
                "included": True,
                "unobstructed": [(v, u) in edges or (u, v) in edges for u in ids],
            }
        )
    return NavGraph.from_connectivity("line", entries)


def test_detect_kind_by_name_and_columns():
    assert detect_kind("out/paths-00000-of-00002.parquet") == DATASET
    assert detect_kind("x/episodes-00001-of-00002.parquet", ["instr_id", "scan", "ne", "sr", "path"]) == SCORES
    assert detect_kind("p/perturbations-00000-of-00001.parquet") == PERTURBATIONS
    assert detect_kind("p/paraphrases-00000-of-00001.parquet") == PARAPHRASES
    assert detect_kind("R2R_val_seen.json") == DATASET
    assert detect_kind("R4R.jsonl") == DATASET
    assert detect_kind("score/summary.json") == SCORE_SUMMARY
    # Unknown name, decided by columns
    assert detect_kind("mine.parquet", ["instr_id", "language", "bleu", "kept", "paraphrase"]) == PARAPHRASES
    with pytest.raises(ReportInputError, match="lacks columns"):
        detect_kind("out/episodes-00000-of-00001.parquet", ["instr_id", "scan"])
    with pytest.raises(ReportInputError, match="cannot tell"):
        detect_kind("mine.parquet", ["a", "b"])
    with pytest.raises(ReportInputError, match="not a report input"):
        detect_kind("notes.txt")


def test_input_label():
    assert input_label("/d/r2r/R2R_val_seen.json", DATASET) == "R2R_val_seen"
    assert input_label("/out/r4r_val_seen/paths-00000-of-00001.parquet", DATASET) == "r4r_val_seen"
    assert input_label("/out/agent_a/episodes-00000-of-00001.parquet", SCORES) == "agent_a"


def test_hand_worked_partial_and_finalize():
    p = partial_from_arrays("s", "L", {"steps": np.array([1, 2, 2, 5, np.nan])}, {"steps": 1.0})
    q = finalize(p)["s"]["L"]["quantities"]["steps"]
    assert q["n"] == 4 and q["nulls"] == 1
    assert q["mean"] == 2.5 and q["min"] == 1 and q["max"] == 5
    assert q["median"] == 2.0
    assert q["hist"] == [[1, 1], [2, 2], [5, 1]]


def test_all_null_quantity_is_reported_not_dropped():
    q = finalize(partial_from_arrays("s", "L", {"ne": np.array([np.inf, np.nan])}, {"ne": 0.25}))["s"]["L"]
    assert q["quantities"]["ne"]["n"] == 0 and q["quantities"]["ne"]["nulls"] == 2
    assert q["quantities"]["ne"]["mean"] is None and q["quantities"]["ne"]["median"] is None


values = st.lists(st.floats(min_value=0, max_value=60, allow_nan=False), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(values, st.integers(min_value=1, max_value=5), st.sampled_from([0.01, 0.25, 1.0]))
def test_merge_of_any_split_equals_whole(xs, parts, width):
    whole = partial_from_arrays("s", "L", {"q": np.array(xs)}, {"q": width})
    pieces = [partial_from_arrays("s", "L", {"q": np.array(xs[k::parts])}, {"q": width}) for k in range(parts)]
    merged_fwd, merged_rev = {}, {}
    for piece in pieces:
        merge(merged_fwd, piece)
    for piece in reversed(pieces):
        merge(merged_rev, piece)
    for merged in (merged_fwd, merged_rev):
        assert merged.keys() == whole.keys()
        for key, value in whole.items():
            assert merged[key] == pytest.approx(value, rel=1e-12, abs=1e-9), key


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 300), st.floats(0.05, 0.95)), min_size=1, max_size=50), min_size=1, max_size=3
    ),
    st.sampled_from([0.01, 0.25, 0.5]),
)
def test_display_bins_match_numpy_histogram(series, width):
    # Values strictly inside fine bins, so the independent np.histogram sees no edge ties.
    data = [np.array([(k + u) * width for k, u in s]) for s in series]
    fine = [
        finalize(partial_from_arrays("s", "L", {"q": d}, {"q": width}), {"q": width})["s"]["L"]["quantities"]["q"][
            "hist"
        ]
        for d in data
    ]
    edges, counts = display_bins(fine, width)
    assert len(edges) - 1 <= 40
    for d, c in zip(data, counts):
        expected, _ = np.histogram(d, bins=edges)
        assert c.tolist() == expected.tolist()
        assert c.sum() == len(d)


def test_integer_display_bins_are_centred_and_exact():
    fine = [[[3, 2], [5, 1]], [[4, 7]]]
    edges, counts = display_bins(fine, 1.0, integer=True)
    assert edges.tolist() == [2.5, 3.5, 4.5, 5.5]
    assert counts[0].tolist() == [2, 0, 1] and counts[1].tolist() == [0, 7, 0]


@given(st.lists(st.integers(0, 50), min_size=1, max_size=99).filter(lambda xs: len(xs) % 2 == 1))
def test_integer_median_is_exact(xs):
    hist = sorted(Counter(xs).items())
    assert hist_quantile([list(h) for h in hist], 1.0, 0.5) == float(np.median(xs))


def test_counts_and_paraphrases_against_counter():
    fams = ["instruction", "trajectory", "trajectory", "instruction"]
    meths = ["direction_swap", "random_walk", "random_walk", "entity_swap"]
    p = count_partial(PERTURBATIONS, "x", zip(fams, meths))
    expected = Counter(f"{f}/{m}" for f, m in zip(fams, meths))
    assert {k[3]: v for k, v in p.items()} == dict(expected)
    langs, kept, bleu = ["de", "fr", "de", "de"], [True, False, False, True], [0.3, 0.9, 0.1, 0.5]
    t = finalize(paraphrases_partial("para", langs, kept, bleu))[PARAPHRASES]["para"]
    assert t["counts"] == {"de/kept": 2, "de/rows": 3, "fr/rows": 1}
    assert t["quantities"]["bleu"]["mean"] == pytest.approx(np.mean(bleu))


def test_scores_partial_counts_nulls_per_metric():
    cols = {"ne": np.array([0.0, 2.5, np.nan]), "sr": np.array([1.0, 1.0, 0.0])}
    t = finalize(scores_partial("agent", cols))[SCORES]["agent"]
    assert t["counts"]["episodes"] == 3
    assert t["quantities"]["ne"]["nulls"] == 1 and t["quantities"]["ne"]["mean"] == 1.25
    assert t["quantities"]["sr"]["mean"] == pytest.approx(2 / 3)


def test_dataset_partial_hand_worked():
    g = line_graph()
    records = [
        {
            "path_id": 1,
            "scan": "line",
            "path": ["a", "b", "c", "d"],
            "instructions": ["go left", "walk to the end now"],
        },
        {"path_id": 2, "scan": "line", "path": ["e", "b", "a"], "instructions": ["one"]},
        {"path_id": 3, "scan": "line", "path": ["a", "zzz"], "instructions": ["bad"], "_source": "f.json"},
        {"path_id": 4, "scan": "nope", "path": ["a"], "instructions": ["bad"]},
    ]
    partial, bad = dataset_partial("L", records, GraphStore("/nonexistent", {"line": g}))
    assert [reason for _, reason in bad][0].startswith("viewpoint 'zzz'")
    assert "nope" in bad[1][1]
    t = finalize(partial)[DATASET]["L"]
    assert t["counts"] == {"instructions": 3, "instructions.en": 3, "paths": 2}
    q = t["quantities"]
    assert q["steps"]["hist"] == [[2, 1], [3, 1]]
    assert q["length_m"]["mean"] == pytest.approx((6.0 + (2.0 + 1.0)) / 2)
    # independent: shortest a->d is 6 m; e->a is e-b (2 m) + b-a (1 m) = 3 m
    assert q["shortest_m"]["mean"] == pytest.approx((6.0 + 3.0) / 2)
    assert q["words"]["hist"] == [[1, 1], [2, 1], [5, 1]]


def test_sample_key_is_stable_and_seeded():
    assert sample_key(0, "L", 7) == sample_key(0, "L", 7)
    assert sample_key(0, "L", 7) != sample_key(1, "L", 7)
    assert sample_key(0, "L", 7) != sample_key(0, "L", 8)


def test_infer_connector_hand_worked():
    g = line_graph()
    # joined path a-b-c-d with a connector of length 2 (b -> c) found uniquely
    assert infer_connector(g, ["a", "b", "c", "d"], 2.0) == ["b", "c"]
    assert infer_connector(g, ["a", "b", "c", "d"], 0.0) is None  # a_last == b_first: nothing to draw
    assert infer_connector(g, ["a", "b", "c", "d"], 4.5) is None  # no such segment


@pytest.mark.real_data
def test_connectors_on_real_r4r_joins(r2r_dir, connectivity_dir):
    """The exact connector (from the source paths) on real R4R joins, and the inferred one when unique."""
    records = [r for r in parse_r2r((r2r_dir / "R2R_val_seen.json").read_bytes(), "val_seen") if isinstance(r, dict)]
    store = GraphStore(connectivity_dir)
    by_scan = {}
    for r in records:
        by_scan.setdefault(r["scan"], []).append(r)
    by_id = {r["path_id"]: r for r in records}
    checked = inferred = 0
    for scan in sorted(by_scan)[:6]:
        graph = store.get(scan)
        joined, _ = join_paths(graph, by_scan[scan], JoinConfig(3.0))
        for j in joined[:10]:
            a, b = by_id[j["first_path_id"]], by_id[j["second_path_id"]]
            ref = {**j, "label": "r4r", "instructions": 1}
            spec = drawing_spec({"reference": ref, "sources": [a, b]}, graph)
            c = spec["connector"]
            # Joined path = A[:-1] + C + B[1:] (docs/design.md): the connector sits right where A ends.
            assert j["path"] == a["path"][:-1] + c + b["path"][1:]
            guess = infer_connector(graph, j["path"], graph.distance(a["path"][-1], b["path"][0]))
            if guess is not None:
                inferred += 1
                assert guess == c
            checked += 1
    assert checked > 0 and inferred > 0
    json.dumps(spec)  # drawing specs are plain data
