"""Hostile connectivity files: every malformed graph is refused with one reason naming file, viewpoint and field.

The hostile files are generated at test time from a real graph (one corruption each), so the
test covers the class of problem (bad numbers, wrong JSON types, wrong lengths, duplicates,
missing keys) and not one hand-made example.
"""

import copy
import json
import math
import re
import shutil

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transforms.deadletter import DEAD_LETTER
from transforms.r4r import JoinR4R
from transforms.read import ReadR2R
from vlnkit.fixtures.grid import write_environment
from vlnkit.navigation.graph import GraphError, GraphStore, NavGraph, list_scans

SCAN = "17DRP5sb8fy"  # a small real scan (48 viewpoints, 4 of them excluded)


@pytest.fixture(scope="module")
def real_entries(connectivity_dir):
    with open(f"{connectivity_dir}/{SCAN}_connectivity.json") as f:
        return json.load(f)


def test_all_90_real_graphs_load_under_strict_validation(connectivity_dir):
    scans = list_scans(connectivity_dir)
    assert len(scans) == 90
    store = GraphStore(connectivity_dir)
    sizes = [len(store.get(s)) for s in scans]
    assert all(n > 0 for n in sizes)
    assert sum(sizes) == 10567  # included viewpoints over all scans: nothing refused, nothing dropped


def _set(field, value, k=None):
    """A corruption: set `field` of viewpoint k (default: a middle included viewpoint) to `value`."""

    def apply(entries, k=k):
        k = len(entries) // 2 if k is None else k
        entries[k][field] = value(entries[k]) if callable(value) else value
        return k, field

    return apply


def _pose(index, value):
    def apply(entries):
        k = len(entries) // 3
        entries[k]["pose"][index] = value
        return k, "pose"

    return apply


def _unobstructed(index_from_end, value):
    def apply(entries):
        k = 1
        entries[k]["unobstructed"][-index_from_end] = value
        return k, "unobstructed"

    return apply


def _missing(field):
    def apply(entries):
        k = 2
        del entries[k][field]
        return k, field

    return apply


def _duplicate(entries):
    k = len(entries) - 1
    entries[k]["image_id"] = entries[0]["image_id"]
    return k, "image_id"


CORRUPTIONS = {
    # bad numbers in a pose (translation and rotation entries alike)
    "pose NaN": _pose(3, float("nan")),
    "pose Infinity": _pose(7, float("inf")),
    "pose -Infinity": _pose(11, float("-inf")),
    "pose NaN in rotation": _pose(0, float("nan")),
    "pose string number": _pose(3, "1.25"),
    "pose bool": _pose(7, True),
    "pose null": _pose(11, None),
    "pose nested list": _pose(3, [1.0]),
    "pose 400-digit int": _pose(3, 10**400),
    "pose too short": _set("pose", lambda e: e["pose"][:15]),
    "pose too long": _set("pose", lambda e: e["pose"] + [0.0]),
    "pose string": _set("pose", "1 0 0 0"),
    "pose object": _set("pose", {"x": 1}),
    # booleans must be JSON booleans
    "included string false": _set("included", "false"),
    "included string true": _set("included", "true"),
    "included int": _set("included", 1),
    "included null": _set("included", None),
    "unobstructed yes": _unobstructed(1, "yes"),
    "unobstructed int": _unobstructed(2, 1),
    "unobstructed null": _unobstructed(3, None),
    "unobstructed too short": _set("unobstructed", lambda e: e["unobstructed"][:-1]),
    "unobstructed too long": _set("unobstructed", lambda e: e["unobstructed"] + [False]),
    "unobstructed string": _set("unobstructed", "true,false"),
    # ids
    "image_id int": _set("image_id", 12345),
    "image_id empty": _set("image_id", ""),
    "image_id null": _set("image_id", None),
    "duplicate image_id": _duplicate,
    # structure
    "missing image_id": _missing("image_id"),
    "missing pose": _missing("pose"),
    "missing included": _missing("included"),
    "missing unobstructed": _missing("unobstructed"),
}


def _write(tmp_path, entries, scan=SCAN):
    path = tmp_path / f"{scan}_connectivity.json"
    path.write_text(json.dumps(entries))  # allow_nan: NaN / Infinity tokens, as a careless writer makes them
    return str(path)


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_each_corruption_is_refused_naming_file_viewpoint_and_field(name, real_entries, tmp_path):
    entries = copy.deepcopy(real_entries)
    k, field = CORRUPTIONS[name](entries)
    path = _write(tmp_path, entries)
    with pytest.raises(GraphError) as info:
        NavGraph.load(str(tmp_path), SCAN)
    message = str(info.value)
    assert message.startswith(path + ": "), message
    assert f"viewpoint #{k}" in message, message
    assert repr(field) in message or f"field {field!r}" in message, message
    # The store refuses the scan with the very same one reason on every request.
    store = GraphStore(str(tmp_path))
    reasons = set()
    for _ in range(3):
        with pytest.raises(GraphError) as again:
            store.get(SCAN)
        reasons.add(str(again.value))
    assert reasons == {message}
    assert str(store.error(SCAN)) == message


def test_a_corrupted_excluded_viewpoint_is_refused_too(real_entries, tmp_path):
    # Excluded viewpoints do not become graph nodes, but a file that lies about them is still malformed.
    entries = copy.deepcopy(real_entries)
    k = next(i for i, e in enumerate(entries) if not e["included"])
    entries[k]["pose"][3] = float("nan")
    _write(tmp_path, entries)
    with pytest.raises(GraphError, match=rf"viewpoint #{k} .*'pose' value 3 must be a finite number, got nan"):
        NavGraph.load(str(tmp_path), SCAN)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("{}", "expected a non-empty JSON list of viewpoints, got dict"),
        ("[]", "expected a non-empty JSON list of viewpoints, got an empty list"),
        ('"x"', "expected a non-empty JSON list of viewpoints, got str"),
        ("[1, 2]", "viewpoint #0 must be a JSON object, got int"),
        ("[" * 100000 + "]" * 100000, "cannot build the graph"),
        ("[{", "not valid JSON"),
    ],
)
def test_a_file_that_is_not_a_viewpoint_list_is_refused(text, reason, tmp_path):
    (tmp_path / f"{SCAN}_connectivity.json").write_text(text)
    with pytest.raises(GraphError, match=re.escape(reason)):
        GraphStore(str(tmp_path)).get(SCAN)


def test_the_distances_of_a_valid_file_are_unchanged(real_entries, connectivity_dir):
    # Independent check on the real file: an edge weight is the euclidean distance of the pose translations.
    g = NavGraph.from_connectivity(SCAN, real_entries)
    xyz = {e["image_id"]: (e["pose"][3], e["pose"][7], e["pose"][11]) for e in real_entries}
    u, v = g.edges[0]
    a, b = g.viewpoints[u], g.viewpoints[v]
    assert g.distance(a, b) <= math.dist(xyz[a], xyz[b]) + 1e-12
    assert min(g.edge_weights) > 0 and all(math.isfinite(w) for w in g.edge_weights)


def test_graphs_built_in_code_get_the_same_checks():
    import numpy as np

    with pytest.raises(GraphError, match="finite"):
        NavGraph("s", ("a", "b"), np.array([[0.0, 0, 0], [np.nan, 0, 0]]), np.array([[0, 1]]))
    with pytest.raises(GraphError, match="duplicate"):
        NavGraph("s", ("a", "a"), np.zeros((2, 3)), np.array([[0, 1]]))
    with pytest.raises(GraphError, match="outside"):
        NavGraph("s", ("a", "b"), np.zeros((2, 3)), np.array([[0, 2]]))


# ----------------------------------------------------------------------------- through the jobs' transforms
@pytest.fixture()
def env_with_one_refused_scan(tmp_path):
    """A synthetic two-scan environment whose second scan's file has a NaN in one pose."""
    r2r_path, conn_dir = write_environment(str(tmp_path), scans=2, paths_per_scan=8, seed=4)
    records = json.loads(open(r2r_path).read())
    bad_scan = records[-1]["scan"]
    path = f"{conn_dir}/{bad_scan}_connectivity.json"
    entries = json.loads(open(path).read())
    entries[7]["pose"][7] = float("nan")
    with open(path, "w") as f:
        json.dump(entries, f)
    reason = f"{path}: viewpoint #7 (image_id {entries[7]['image_id']!r}): field 'pose' value 7 must be a finite number, got nan"
    return r2r_path, conn_dir, records, bad_scan, reason


def test_build_r4r_join_dead_letters_every_record_of_a_refused_scan(env_with_one_refused_scan, tmp_path):
    r2r_path, conn_dir, records, bad_scan, reason = env_with_one_refused_scan
    good_dir = tmp_path / "good"
    shutil.copytree(conn_dir, good_dir)
    bad = [r for r in records if r["scan"] == bad_scan]
    assert bad and len(bad) < len(records)
    expected_dead = sorted((f"#{records.index(r)} (path_id={r['path_id']!r})", reason) for r in bad)
    with TestPipeline() as p:
        read = p | ReadR2R([r2r_path], require_distance=True)
        join = read["records"] | JoinR4R(conn_dir)
        assert_that(
            join[DEAD_LETTER] | beam.Map(lambda d: (d["record"], d["reason"])),
            equal_to(expected_dead),
            label="every record of the refused scan, with the one reason",
        )
        assert_that(
            join["joined"] | beam.FlatMap(lambda batch: [r["scan"] for r in batch]) | beam.Distinct(),
            equal_to([records[0]["scan"]]),
            label="only the good scan joins",
        )


def test_score_path_dead_letters_every_prediction_on_a_refused_scan(env_with_one_refused_scan, tmp_path):
    r2r_path, conn_dir, records, bad_scan, reason = env_with_one_refused_scan
    preds = [
        {"instr_id": f"{r['path_id']}_{k}", "trajectory": r["path"]}
        for r in records
        for k in range(len(r["instructions"]))
    ]
    pred_path = tmp_path / "preds.json"
    pred_path.write_text(json.dumps(preds))
    expected_dead = sorted(
        f"{r['path_id']}_{k}" for r in records if r["scan"] == bad_scan for k in range(len(r["instructions"]))
    )
    from pipelines import score

    out = tmp_path / "out"
    summary = score.main(
        [
            "--runner=DirectRunner",
            f"--predictions={pred_path}",
            f"--dataset={r2r_path}",
            f"--connectivity_dir={conn_dir}",
            f"--output_dir={out}",
            "--max_failure_fraction=1",
        ]
    )
    dead = [json.loads(line) for line in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    on_bad_scan = [d for d in dead if reason in d["reason"]]
    assert sorted({d["reason"] for d in on_bad_scan}) == [reason]
    named = " ".join(d["record"] for d in on_bad_scan)
    assert all(instr_id in named for instr_id in expected_dead)
    assert summary["dead_letters"] >= len(expected_dead) / max(1, len(records[0]["instructions"]))


# ----------------------------------------------------------------------------- property: any one corruption anywhere
BAD_BOOLEANS = ["false", "true", 0, 1, 1.0, None, [], {}, "yes"]
BAD_NUMBERS = [float("nan"), float("inf"), float("-inf"), 10**400, -(10**400), "1.0", True, False, None, [], {}]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_single_bad_value_anywhere_is_refused_naming_its_viewpoint(real_entries, data):
    entries = copy.deepcopy(real_entries)
    k = data.draw(st.integers(0, len(entries) - 1), label="viewpoint")
    field = data.draw(st.sampled_from(["pose", "included", "unobstructed", "image_id"]), label="field")
    if field == "pose":
        m = data.draw(st.integers(0, 15), label="pose index")
        entries[k]["pose"][m] = data.draw(st.sampled_from(BAD_NUMBERS), label="value")
        expected = f"field 'pose' value {m} must be a finite number"
    elif field == "included":
        entries[k]["included"] = data.draw(st.sampled_from(BAD_BOOLEANS), label="value")
        expected = "field 'included' must be a JSON boolean"
    elif field == "unobstructed":
        m = data.draw(st.integers(0, len(entries) - 1), label="entry")
        entries[k]["unobstructed"][m] = data.draw(st.sampled_from(BAD_BOOLEANS), label="value")
        expected = f"field 'unobstructed' entry {m} must be a JSON boolean"
    else:
        j = data.draw(st.integers(0, len(entries) - 1).filter(lambda j: j != k), label="other")
        entries[k]["image_id"] = entries[j]["image_id"]
        first, k = sorted((k, j))  # the later of the two is the repeat
        expected = f"field 'image_id' repeats the id of viewpoint #{first}"
    with pytest.raises(GraphError) as info:
        NavGraph.from_connectivity(SCAN, entries, source="f.json")
    message = str(info.value)
    assert message.startswith(f"f.json: viewpoint #{k} "), message
    assert expected in message, message


def test_random_baseline_and_perturb_dead_letter_every_record_of_a_refused_scan(env_with_one_refused_scan):
    from transforms.perturb import PerturbTrajectories
    from transforms.random_walks import RandomBaseline
    from transforms.read import ReadDataset

    r2r_path, conn_dir, records, bad_scan, reason = env_with_one_refused_scan
    expected = sorted(
        (f"#{records.index(r)} (path_id={r['path_id']!r})", reason) for r in records if r["scan"] == bad_scan
    )
    with TestPipeline() as p:
        dataset = p | ReadDataset([r2r_path])
        pool = p | "Pool" >> beam.Create([2, 3, 4])
        walks = dataset["records"] | RandomBaseline(conn_dir, pool, 200, seed=1)
        assert_that(
            walks[DEAD_LETTER] | "RB" >> beam.Map(lambda d: (d["record"], d["reason"])),
            equal_to(expected),
            label="random baseline",
        )
        perturbed = dataset["records"] | PerturbTrajectories(conn_dir, ["random_walk"])
        assert_that(
            perturbed[DEAD_LETTER] | "PT" >> beam.Map(lambda d: (d["record"], d["reason"])),
            equal_to(expected),
            label="perturb",
        )
