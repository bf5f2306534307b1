import json

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms.deadletter import DEAD_LETTER
from transforms.r4r import JoinR4R
from transforms.read import DedupeBy, ReadR2R
from vlnkit.datasets.r2r import public
from vlnkit.datasets.r4r import JoinConfig, join_paths
from vlnkit.fixtures.grid import write_environment
from vlnkit.navigation.graph import GraphStore


def expected_joins(r2r_path, conn_dir, config):
    with open(r2r_path) as f:
        records = json.load(f)
    store = GraphStore(conn_dir)
    out = []
    for scan in sorted({r["scan"] for r in records}):
        joined, _ = join_paths(store.get(scan), [r for r in records if r["scan"] == scan], config)
        out += joined
    return out


def strip(record):
    return json.dumps(public(record), sort_keys=True)


def test_join_transform_matches_the_core_join(tmp_path):
    r2r_path, conn_dir = write_environment(str(tmp_path), scans=2, paths_per_scan=25, seed=3)
    config = JoinConfig(distance_threshold=2.5, heading_threshold=1.5)
    expected = [strip(r) for r in expected_joins(r2r_path, conn_dir, config)]
    assert expected
    with TestPipeline() as p:
        read = p | ReadR2R([r2r_path], require_distance=True)
        join = read["records"] | JoinR4R(conn_dir, config)
        assert_that(
            join["joined"] | beam.FlatMap(lambda batch: batch) | beam.Map(strip), equal_to(expected), label="joined"
        )
        assert_that(join[DEAD_LETTER], equal_to([]), label="no dead letters")


def test_unknown_viewpoints_missing_scans_and_duplicates_are_dead_lettered(tmp_path):
    r2r_path, conn_dir = write_environment(str(tmp_path), scans=1, paths_per_scan=5, seed=1)
    with open(r2r_path) as f:
        records = json.load(f)
    bad_viewpoint = {**records[0], "path_id": 900, "path": records[0]["path"][:-1] + ["nowhere"]}
    bad_scan = {**records[1], "path_id": 901, "scan": "no_such_scan"}
    duplicate = {**records[2]}
    (tmp_path / "extra.jsonl").write_text("\n".join(json.dumps(r) for r in (bad_viewpoint, bad_scan, duplicate)))
    with TestPipeline() as p:
        read = p | ReadR2R([r2r_path, str(tmp_path / "extra.jsonl")], require_distance=True)
        unique = read["records"] | DedupeBy(lambda r: r["path_id"], "path_id")
        join = unique["records"] | JoinR4R(conn_dir, JoinConfig())
        dead = (unique[DEAD_LETTER], join[DEAD_LETTER]) | beam.Flatten()
        reasons = dead | beam.Map(lambda d: (d["stage"], d["record"].split(" ")[0], d["reason"].split(" ")[0]))
        assert_that(
            reasons,
            equal_to(
                [
                    ("dedupe", "#2", "duplicate"),
                    ("graph", "#0", "viewpoint"),
                    ("graph", "#1", f"{conn_dir}/no_such_scan_connectivity.json:"),
                ]
            ),
        )


def test_negative_distances_and_non_adjacent_steps_are_dead_lettered(tmp_path):
    r2r_path, conn_dir = write_environment(str(tmp_path), scans=1, paths_per_scan=6, seed=2)
    with open(r2r_path) as f:
        records = json.load(f)
    jump = {**records[0], "path_id": 900, "path": [records[0]["path"][0], records[0]["path"][2]]}
    negative = {**records[1], "path_id": 901, "distance": -4.0}
    (tmp_path / "extra.jsonl").write_text("\n".join(json.dumps(r) for r in (jump, negative)))
    good = expected_joins(r2r_path, conn_dir, JoinConfig())
    with TestPipeline() as p:
        read = p | ReadR2R([r2r_path, str(tmp_path / "extra.jsonl")], require_distance=True)
        join = read["records"] | JoinR4R(conn_dir, JoinConfig())
        dead = (read[DEAD_LETTER], join[DEAD_LETTER]) | beam.Flatten()
        assert_that(
            dead | beam.Map(lambda d: (d["stage"], d["record"], d["reason"].rsplit(" (consecutive", 1)[0])),
            equal_to(
                [
                    (
                        "graph",
                        "#0 (path_id=900)",
                        f"path step 0 -> 1 ({jump['path'][0]!r} -> {jump['path'][1]!r}) is not an edge of scan {jump['scan']!r}",
                    ),
                    ("read", "#1 (path_id=901)", "'distance' must be a finite number >= 0, got -4.0"),
                ]
            ),
            label="dead letters",
        )
        assert_that(
            join["joined"] | beam.FlatMap(lambda batch: batch) | beam.Map(strip),
            equal_to([strip(r) for r in good]),
            label="the bad records join nothing",
        )
