import math
from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.datasets.alignments import parse_fgr2r
from vlnkit.navigation.graph import NavGraph
from vlnkit.probes.episodes import (
    STOP,
    ProbeConfig,
    agent_episode,
    append_sentence,
    arrival_heading,
    direction_targets,
    hop_matrix,
    load_objects,
    load_rooms,
    neighbour_geometry,
    object_targets,
    probe_episodes,
    regions_of,
    room_targets,
    truncation_candidates,
    wrap_degrees,
)
from vlnkit.probes.templates import REGIONS, ProbeInputError, choose, load_templates


def graph_of(points: dict[str, tuple[float, float]], edges: list[tuple[str, str]], scan="s") -> NavGraph:
    names = list(points)
    pos = np.array([[x, y, 1.5] for x, y in points.values()])
    idx = {n: k for k, n in enumerate(names)}
    e = np.array(sorted(tuple(sorted((idx[a], idx[b]))) for a, b in edges), dtype=np.int64).reshape(-1, 2)
    return NavGraph(scan=scan, viewpoints=tuple(names), positions=pos, edges=e)


def polar(deg, r=1.0):
    """A point at simulator heading `deg` (clockwise from +y) from the origin."""
    return (r * math.sin(math.radians(deg)), r * math.cos(math.radians(deg)))


# The agent arrives at "o" from "p" (south of it), so it faces +y (heading 0). One neighbour per region.
STAR = {
    "p": (0.0, -1.0),
    "o": (0.0, 0.0),
    "f": polar(5),
    "r": polar(60),
    "l": polar(-40),
    "br": polar(120),
    "bl": polar(-150),
}
STAR_GRAPH = graph_of(STAR, [("o", n) for n in STAR if n != "o"])


def simple_region(rel):
    """Independent statement of the spec's regions."""
    if abs(rel) <= 15:
        return "forward"
    if 15 < rel <= 90:
        return "right"
    if -90 <= rel < -15:
        return "left"
    if 90 < rel <= 165:
        return "back-right"
    if -165 <= rel < -90:
        return "back-left"
    return "backward"


@pytest.mark.parametrize(
    "rel, region",
    [
        (0, "forward"),
        (15, "forward"),
        (-15, "forward"),
        (15.001, "right"),
        (90, "right"),
        (90.001, "back-right"),
        (-90, "left"),
        (-90.001, "back-left"),
        (165, "back-right"),
        (-165, "back-left"),
        (165.001, "backward"),
        (-165.001, "backward"),
        (180, "backward"),
    ],
)
def test_region_boundaries(rel, region):
    assert regions_of([rel])[0] == region == simple_region(rel)


@given(st.floats(-2000, 2000, allow_nan=False))
def test_wrap_and_regions_match_a_simple_implementation(x):
    w = float(wrap_degrees(x))
    assert -180 < w <= 180
    assert math.isclose(math.remainder(w - x, 360), 0, abs_tol=1e-7)
    assert regions_of([w])[0] == simple_region(w)


def test_star_graph_relative_headings_positive_to_the_right():
    heading = arrival_heading(STAR_GRAPH, ["p", "o"], start_heading=2.0)
    assert heading == pytest.approx(0.0)
    nb, rel, regions = neighbour_geometry(STAR_GRAPH, "o", heading)
    got = {STAR_GRAPH.viewpoints[k]: (round(float(a), 6), r) for k, a, r in zip(nb, rel, regions)}
    assert got == {
        "p": (180.0, "backward"),
        "f": (5.0, "forward"),
        "r": (60.0, "right"),
        "l": (-40.0, "left"),
        "br": (120.0, "back-right"),
        "bl": (-150.0, "back-left"),
    }
    # Arriving from the east (travelling west, heading 270) turns everything by 90 degrees.
    g = graph_of({**STAR, "e": (1.0, 0.0)}, [("o", n) for n in STAR if n != "o"] + [("e", "o")])
    _, rel2, _ = neighbour_geometry(g, "o", arrival_heading(g, ["e", "o"], 0.0))
    assert sorted(np.round(rel2, 6)) == sorted(
        np.round(wrap_degrees(np.array([180, 5, 60, -40, 120, -150, 90]) + 90), 6)
    )


def test_arrival_heading_single_viewpoint_and_in_place_repeats():
    assert arrival_heading(STAR_GRAPH, ["o"], 7.0) == pytest.approx(7.0 - 2 * math.pi)
    assert arrival_heading(STAR_GRAPH, ["p", "o", "o"], 3.0) == pytest.approx(0.0)
    stacked = graph_of({"a": (0.0, 0.0), "b": (0.0, 0.0)}, [("a", "b")])  # vertical move: no horizontal direction
    assert arrival_heading(stacked, ["a", "b"], 1.25) == 1.25


def test_direction_filter_on_the_star_keeps_every_region():
    _, _, regions = neighbour_geometry(STAR_GRAPH, "o", 0.0)
    assert [r for r, _ in direction_targets(regions)] == list(REGIONS)


@pytest.mark.parametrize(
    "angles, kept",
    [
        ([0, 60], []),  # two neighbours: never two others outside
        ([0, 60, -60], ["forward", "right", "left"]),
        ([-30, -50, 60], ["right"]),  # left has only one neighbour outside it
        ([-30, -50, 60, 170], ["right", "left", "backward"]),
    ],
)
def test_direction_filter_needs_one_inside_and_two_outside(angles, kept):
    pts = {"o": (0.0, 0.0), **{f"n{k}": polar(a) for k, a in enumerate(angles)}}
    g = graph_of(pts, [("o", n) for n in pts if n != "o"])
    _, _, regions = neighbour_geometry(g, "o", 0.0)
    assert sorted(r for r, _ in direction_targets(regions)) == sorted(kept)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-179, 180), min_size=1, max_size=7), st.randoms(use_true_random=False))
def test_direction_probes_do_not_depend_on_neighbour_order(angles, rnd):
    names = [f"n{k}" for k in range(len(angles))]
    order = names[:]
    rnd.shuffle(order)

    def targets(order):
        pts = {"o": (0.0, 0.0), **{n: polar(angles[int(n[1:])], 1 + int(n[1:]) / 10) for n in order}}
        g = graph_of(pts, [("o", n) for n in order])
        nb, _, regions = neighbour_geometry(g, "o", 0.3)
        return {r: sorted(g.viewpoints[k] for k in nb[m]) for r, m in direction_targets(regions)}

    t = targets(order)
    assert t == targets(names)
    for region, correct in t.items():  # independent check of the filter
        inside = [
            n for n in names if simple_region(float(wrap_degrees(angles[int(n[1:])] - math.degrees(0.3)))) == region
        ]
        assert correct == sorted(inside) and len(inside) >= 1 and len(names) - len(inside) >= 2


# Rooms on a line a - b - c - d, with e hanging off b.
LINE = graph_of(
    {"a": (0, 0), "b": (0, 1), "c": (0, 2), "d": (0, 3), "e": (1, 1)}, [("a", "b"), ("b", "c"), ("c", "d"), ("b", "e")]
)
ROOMS = {"a": "hallway", "b": "hallway", "c": "kitchen", "d": "bedroom", "e": "hallway"}


def bfs_hops(graph, start):
    dist = {start: 0}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for k in graph.neighbours[graph.idx(u)]:
            v = graph.viewpoints[k]
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def simple_room_targets(graph, here, rooms, max_hops):
    out = []
    for room in sorted(set(rooms.values()) - {rooms[here]}):
        h = min(d for v, d in bfs_hops(graph, here).items() if rooms.get(v) == room)
        if h > max_hops:
            continue
        correct = [
            graph.viewpoints[k]
            for k in graph.neighbours[graph.idx(here)]
            if min(d for v, d in bfs_hops(graph, graph.viewpoints[k]).items() if rooms.get(v) == room) == h - 1
        ]
        out.append((room, h, sorted(correct)))
    return out


@pytest.mark.parametrize("here, max_hops", [("b", 1), ("b", 2), ("a", 3), ("d", 3), ("e", 2)])
def test_room_targets_match_breadth_first_search(here, max_hops):
    got = room_targets(LINE, LINE.idx(here), ROOMS, hop_matrix(LINE), max_hops)
    assert [(r, h, sorted(LINE.viewpoints[k] for k in c)) for r, h, c in got] == simple_room_targets(
        LINE, here, ROOMS, max_hops
    )


def test_room_targets_hand_checked():
    got = room_targets(LINE, LINE.idx("b"), ROOMS, hop_matrix(LINE), 2)
    assert [(r, h, [LINE.viewpoints[k] for k in c]) for r, h, c in got] == [
        ("bedroom", 2, ["c"]),
        ("kitchen", 1, ["c"]),
    ]
    assert room_targets(LINE, LINE.idx("b"), {"a": "hallway"}, hop_matrix(LINE), 2) == []  # b unlabelled


def test_object_targets_distance_angle_and_neighbour_count():
    i = STAR_GRAPH.idx("o")
    objects = [
        ("sofa", math.radians(55), 2.0),  # 5 degrees from r
        ("sofa", math.radians(-25), 1.0),  # 15 degrees from l: included at the boundary
        ("lamp", math.radians(60), 3.5),  # too far
        ("plant", math.radians(90), 1.0),  # 30 degrees from r: no neighbour within 15
    ]
    got = object_targets(STAR_GRAPH, i, objects)
    assert [(n, sorted(STAR_GRAPH.viewpoints[k] for k in c)) for n, c in got] == [("sofa", ["l", "r"])]
    two = graph_of({"o": (0, 0), "x": polar(0), "y": polar(90)}, [("o", "x"), ("o", "y")])
    one = graph_of({"o": (0, 0), "x": polar(0)}, [("o", "x")])
    assert len(object_targets(two, 0, [("tv", 0.0, 1.0)])) == 1
    assert object_targets(one, 0, [("tv", 0.0, 1.0)]) == []


def alignment(path, segments, text, heading=0.0):
    return {
        "source": "test",
        "instr_id": "5_0",
        "path_id": 5,
        "scan": "s",
        "path": path,
        "heading": heading,
        "instruction": text,
        "segments": segments,
    }


def test_truncation_candidates_exclude_the_last_boundary():
    text = "Go north. Turn right. Stop."
    segs = [
        {"text": "Go north.", "end": 9, "first": 0, "last": 1},
        {"text": "Turn right.", "end": 21, "first": 1, "last": 2},
        {"text": "Stop.", "end": 27, "first": 2, "last": 2},
    ]
    cands = truncation_candidates(alignment(["p", "o", "r"], segs, text))
    assert [(c["segment"], c["num_segments"]) for c in cands] == [(0, 3), (1, 3)]
    assert [(c["candidate_id"], c["path"], c["prefix"], c["prefix_next"]) for c in cands] == [
        ("5_0:0", ["p", "o"], "Go north.", "Go north. Turn right."),
        ("5_0:1", ["p", "o", "r"], "Go north. Turn right.", "Go north. Turn right. Stop."),
    ]


def test_probe_episodes_on_the_star():
    cand = truncation_candidates(
        alignment(
            ["p", "o", "f"],
            [
                {"text": "walk north", "end": 10, "first": 0, "last": 1},
                {"text": "and stop", "end": 19, "first": 1, "last": 2},
            ],
            "walk north and stop",
        )
    )[0]
    config = ProbeConfig(probes=("stop", "direction", "room", "object"), seed=3)
    eps = probe_episodes(cand, STAR_GRAPH, config, rooms=None, objects={"o": [("sofa", math.radians(62), 1.0)]})
    pairs = {}
    for e in eps:
        pairs.setdefault(e["pair_id"], {})[e["variant"]] = e
        assert e["candidates"][-1] == STOP and set(e["correct"]) <= set(e["candidates"])
        assert e["episode_id"] == f"{e['pair_id']}:{e['variant']}"
    assert all(set(p) == {"intervention", "control"} for p in pairs.values())
    stop = pairs["5_0:0:stop:stop"]
    assert stop["intervention"]["correct"] == [STOP] and stop["control"]["instruction"] == "walk north and stop"
    assert stop["control"]["appended"] == "and stop"
    assert stop["intervention"]["instruction"] in {f"walk north. {s}" for s in config.templates["stop"]}
    left = pairs["5_0:0:direction:left"]
    assert left["intervention"]["correct"] == ["l"] and left["control"]["instruction"] == "walk north"
    assert left["intervention"]["skill"] == "direction:left"
    assert pairs["5_0:0:object:sofa"]["intervention"]["correct"] == ["r"]
    assert len(pairs) == 1 + 6 + 1  # no room probes without room labels
    # The same seed and ids give the same episodes; the phrasing depends only on them.
    assert eps == probe_episodes(cand, STAR_GRAPH, config, None, {"o": [("sofa", math.radians(62), 1.0)]})
    assert agent_episode(left["intervention"])["instr_id"] == "5_0:0:direction:left:intervention"


def test_probe_episodes_room_pairs_name_hops():
    cand = truncation_candidates(
        alignment(
            ["a", "b"],
            [{"text": "x", "end": 1, "first": 0, "last": 1}, {"text": "y", "end": 3, "first": 1, "last": 1}],
            "x y",
        )
    )[0]
    eps = probe_episodes(cand, LINE, ProbeConfig(probes=("room",), room_max_hops=2), rooms=ROOMS)
    assert sorted({(e["pair_id"], e["hops"]) for e in eps}) == [
        ("5_0:0:room:bedroom:2hop", 2),
        ("5_0:0:room:kitchen:1hop", 1),
    ]


def test_append_sentence_and_choose():
    assert append_sentence("walk to the lobby", "Stop here.") == "walk to the lobby. Stop here."
    assert append_sentence("walk to the lobby,", "Stop here.") == "walk to the lobby. Stop here."
    assert append_sentence("Go up!", "Stop.") == "Go up! Stop."
    phrasings = ["a", "b", "c"]
    picks = [choose(phrasings, 1, f"id{k}") for k in range(200)]
    assert picks == [choose(phrasings, 1, f"id{k}") for k in range(200)] and set(picks) == set(phrasings)
    assert picks != [choose(phrasings, 2, f"id{k}") for k in range(200)]


def test_templates_file_overrides_and_validation(tmp_path):
    good = tmp_path / "t.yaml"
    good.write_text("stop: [Halt.]\ndirection:\n  left: [Veer left.]\nroom: ['Find the {room}.']\n")
    t = load_templates(str(good))
    assert t["stop"] == ["Halt."] and t["direction"]["left"] == ["Veer left."] and t["direction"]["right"]
    bad = tmp_path / "b.yaml"
    bad.write_text("room: ['Find it.']\n")
    with pytest.raises(ProbeInputError, match="must contain {room}"):
        load_templates(str(bad))
    bad.write_text("jump: ['x']\n")
    with pytest.raises(ProbeInputError, match="keys among"):
        load_templates(str(bad))


def test_room_and_object_tables(tmp_path):
    (tmp_path / "rooms.csv").write_text("scan,viewpoint,room\ns,a,kitchen\ns,b,hallway\n")
    assert load_rooms(str(tmp_path / "rooms.csv")) == {"s": {"a": "kitchen", "b": "hallway"}}
    (tmp_path / "objects.jsonl").write_text(
        '{"scan": "s", "viewpoint": "a", "object": "tv", "heading": 1.0, "distance": 2}\n'
    )
    assert load_objects(str(tmp_path / "objects.jsonl")) == {"s": {"a": [("tv", 1.0, 2.0)]}}
    (tmp_path / "o.tsv").write_text("scan\tviewpoint\tobject\theading\tdistance\ns\ta\ttv\tnorth\t2\n")
    with pytest.raises(ProbeInputError, match=r"o.tsv line 2: 'heading' must be a float"):
        load_objects(str(tmp_path / "o.tsv"))
    (tmp_path / "r.csv").write_text("scan,viewpoint\ns,a\n")
    with pytest.raises(ProbeInputError, match="lacks column"):
        load_rooms(str(tmp_path / "r.csv"))
    (tmp_path / "r2.csv").write_text("scan,viewpoint,room\ns,a,kitchen\ns,a,bath\n")
    with pytest.raises(ProbeInputError, match="line 3: viewpoint 'a' of scan 's' already labelled"):
        load_rooms(str(tmp_path / "r2.csv"))


@pytest.mark.real_data
def test_truncation_of_hand_checked_fgr2r_records(shared_data, connectivity_dir):
    from vlnkit.navigation.graph import GraphStore

    path = shared_data / "fgr2r" / "FGR2R_val_unseen.json"
    a = next(x for x in parse_fgr2r(path.read_bytes(), str(path)) if x["instr_id"] == "4332_1")
    cands = truncation_candidates(a)
    # chunk_view [[1, 2], [2, 3], [3, 4]]: boundaries after viewpoints 2 and 3 (the last, 4, is excluded).
    assert [c["path"] for c in cands] == [a["path"][:2], a["path"][:3]]
    assert cands[0]["prefix"] == "Walk straight toward the bar with the chairs/stool."
    assert cands[1]["prefix"].endswith("three tables with chairs.") and cands[1]["prefix"].startswith("Walk straight")
    graph = GraphStore(connectivity_dir).get(a["scan"])
    eps = probe_episodes(cands[1], graph, ProbeConfig(probes=("stop", "direction")))
    assert all(e["path"] == a["path"][:3] for e in eps)
    heading = graph.heading_of_step(a["path"][1], a["path"][2])
    assert eps[0]["arrival_heading"] == pytest.approx(heading)
    # The viewpoint the agent came from is a candidate and lies behind it.
    prev = a["path"][1]
    k = eps[0]["candidates"].index(prev)
    assert abs(eps[0]["neighbour_rel_heading"][k]) > 165
