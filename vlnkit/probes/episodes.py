"""Behavioral probes: skill-specific intervention episodes built from truncated trajectories.

(Over 300 lines on purpose: the four probe kinds share the candidate and geometry code above them, and
splitting them apart would spread one episode's construction over several files. The phrasings, per
language, are `vlnkit.probes.templates`.)

A *candidate* is an instruction cut at a sub-instruction boundary (every boundary but the last,
which usually says to stop): the trajectory up to the boundary viewpoint and the text before it.
A *probe* appends one short skill instruction to a candidate ("Turn left and walk forward.") and
names the subset of next actions (neighbour viewpoints or STOP) that obeys it. Each probe is a
pair of episodes sharing `pair_id`: the `intervention` (text appended) and its `control`
(for stop: the next sub-instruction appended instead; for the others: nothing appended), so a
scorer can measure how much the appended text moves the agent.

The appended sentence is in the instruction's language (`vlnkit.probes.templates.templates_for`: English
for R2R, Fine-Grained R2R and RxR's en-IN/en-US; Hindi and Telugu for RxR's hi-IN/te-IN, in their own
scripts); a probe with no phrasings in that language is not applicable there (`unphrased_probes`).

Geometry follows the simulator convention (docs/design.md): headings in radians clockwise from +y (atan2(dx, dy)); a neighbour's
relative heading is its step heading minus the arrival heading, in degrees wrapped to (-180, 180],
positive to the right.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from vlnkit.datasets.languages import R2R_LANGUAGE, primary_language
from vlnkit.datasets.trajectories import collapse_repeats
from vlnkit.io import fileio
from vlnkit.navigation.graph import NavGraph, simulator_heading
from vlnkit.probes.templates import (
    PROBES,
    REGIONS,
    ProbeInputError,
    choose,
    load_templates,
    templates_for,
    validate_templates,
)

STOP = "STOP"
INTERVENTION, CONTROL = "intervention", "control"


# ---------------------------------------------------------------------------- geometry
def wrap_degrees(x):
    """Angles in degrees wrapped to (-180, 180] (scalar or array)."""
    return 180.0 - np.mod(180.0 - np.asarray(x, dtype=np.float64), 360.0)


def regions_of(rel_degrees) -> np.ndarray:
    """Region name of each relative heading (degrees in (-180, 180], positive to the right)."""
    rel = np.asarray(rel_degrees, dtype=np.float64)
    a = np.abs(rel)
    conditions = [
        a <= 15,
        (rel > 15) & (rel <= 90),
        (rel < -15) & (rel >= -90),
        (rel > 90) & (rel <= 165),
        (rel < -90) & (rel >= -165),
    ]
    return np.select(conditions, list(REGIONS[:5]), default=REGIONS[5])


def arrival_heading(graph: NavGraph, path: list[str], start_heading: float) -> float:
    """Heading of travel on arrival at the path's last viewpoint (radians, simulator convention).

    The direction of the last step that moves horizontally (in-place repeats are skipped);
    `start_heading` (the record's `heading`) when the path never moves.
    """
    idx = graph.indices(collapse_repeats(path))
    if len(idx) >= 2:
        steps = np.diff(graph.positions[idx, :2], axis=0)
        moving = np.flatnonzero(np.hypot(steps[:, 0], steps[:, 1]) > 1e-9)
        if len(moving):
            dx, dy = steps[moving[-1]]
            return simulator_heading(float(dx), float(dy))
    return float(start_heading) % (2 * math.pi)


def neighbour_geometry(graph: NavGraph, viewpoint: str, heading: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(neighbour indices, relative headings in degrees, region names) around `viewpoint` facing `heading`."""
    i = graph.idx(viewpoint)
    nb = graph.neighbours[i]
    d = graph.positions[nb, :2] - graph.positions[i, :2]
    step = np.arctan2(d[:, 0], d[:, 1])
    rel = wrap_degrees(np.degrees(step - heading))
    return nb, rel, regions_of(rel)


# ---------------------------------------------------------------------------- candidates
def truncation_candidates(alignment: dict) -> list[dict]:
    """One candidate per sub-instruction boundary except the last (see the module docstring)."""
    segments, text, path = alignment["segments"], alignment["instruction"], alignment["path"]
    out = []
    for k in range(len(segments) - 1):
        seg, nxt = segments[k], segments[k + 1]
        out.append(
            {
                "candidate_id": f"{alignment['instr_id']}:{k}",
                "segment": k,
                "num_segments": len(segments),
                "source": alignment["source"],
                "instr_id": alignment["instr_id"],
                "path_id": alignment["path_id"],
                "scan": alignment["scan"],
                "path": path[: seg["last"] + 1],
                "heading": alignment["heading"],
                "prefix": text[: seg["end"]].strip(),
                "prefix_next": text[: nxt["end"]].strip(),
                "language": alignment.get("language") or R2R_LANGUAGE,
            }
        )
    return out


# Sentence ends: "." (English, Telugu), "!", "?", and the Devanagari danda "।" of Hindi.
SENTENCE_ENDS = ".!?।"
FULL_STOPS = {"hi": "।"}  # how a language closes a sentence when the prefix does not ("." otherwise)


def append_sentence(prefix: str, sentence: str, language: str = R2R_LANGUAGE) -> str:
    """`prefix` closed as a sentence of `language`, then `sentence`.

    >>> append_sentence("walk to the lobby", "Stop here.")
    'walk to the lobby. Stop here.'
    >>> append_sentence("बाएं मुड़िए", "यहीं रुकिए।", "hi-IN")
    'बाएं मुड़िए। यहीं रुकिए।'
    """
    prefix = prefix.rstrip().rstrip(",;:-").rstrip()
    if not prefix:
        return sentence
    if prefix[-1] not in SENTENCE_ENDS:
        prefix += FULL_STOPS.get(primary_language(language), ".")
    return f"{prefix} {sentence}"


# ---------------------------------------------------------------------------- filters
def direction_targets(regions: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """(region, mask of neighbours in it) for each region with >= 1 neighbour in it and >= 2 outside it."""
    out = []
    for region in REGIONS:
        mask = regions == region
        inside = int(mask.sum())
        if inside >= 1 and len(mask) - inside >= 2:
            out.append((region, mask))
    return out


def hop_matrix(graph: NavGraph) -> np.ndarray:
    """(n, n) numbers of edges on the fewest-edges path (inf where unreachable)."""
    from scipy.sparse.csgraph import shortest_path  # here: the probe kinds above are read by --help

    return shortest_path(graph.adjacency, method="D", directed=False, unweighted=True)


def room_targets(
    graph: NavGraph, i: int, rooms: dict[str, str], hops: np.ndarray, max_hops: int = 1
) -> list[tuple[str, int, np.ndarray]]:
    """(room type, hops, correct neighbour indices) for each room type other than the current one.

    A room type T at hop distance h (the fewest edges from here to a viewpoint labelled T) with
    1 <= h <= max_hops gives a probe whose correct actions are the neighbours from which T is
    h - 1 edges away. Unlabelled viewpoints are ignored; an unlabelled current viewpoint has none.
    """
    here = rooms.get(graph.viewpoints[i])
    if here is None:
        return []
    nb = graph.neighbours[i]
    if len(nb) == 0:
        return []
    by_type: dict[str, list[int]] = defaultdict(list)
    for v, room in rooms.items():
        k = graph.index.get(v)
        if k is not None and room != here:
            by_type[room].append(k)
    out = []
    for room in sorted(by_type):
        members = np.asarray(by_type[room])
        to_room = hops[:, members].min(axis=1)  # hop distance of every node to the room type
        h = to_room[i]
        if not (1 <= h <= max_hops):
            continue
        correct = nb[to_room[nb] == h - 1]
        if len(correct):
            out.append((room, int(h), correct))
    return out


def object_targets(
    graph: NavGraph,
    i: int,
    objects: list[tuple[str, float, float]],
    max_distance: float = 3.0,
    max_angle_deg: float = 15.0,
) -> list[tuple[str, np.ndarray]]:
    """(object name, correct neighbour indices) for objects within `max_distance` metres of the viewpoint
    that have a neighbour within `max_angle_deg` of their heading; the viewpoint needs >= 2 neighbours.

    Objects of the same name are one target; its correct set is the union over its near instances.
    """
    nb = graph.neighbours[i]
    if len(nb) < 2 or not objects:
        return []
    d = graph.positions[nb, :2] - graph.positions[i, :2]
    step = np.arctan2(d[:, 0], d[:, 1])
    near: dict[str, np.ndarray] = {}
    for name, heading, distance in objects:
        if distance > max_distance:
            continue
        ok = np.abs(wrap_degrees(np.degrees(step - heading))) <= max_angle_deg
        if ok.any():
            near[name] = near.get(name, np.zeros(len(nb), dtype=bool)) | ok
    return [(name, nb[near[name]]) for name in sorted(near)]


# ---------------------------------------------------------------------------- user tables
def _table_rows(path: str, columns: tuple[str, ...]):
    """(line number, row dict) from a CSV/TSV file with a header, or JSON Lines."""
    try:
        text = fileio.read_bytes(path).decode("utf-8")
    except Exception as exc:
        raise ProbeInputError(f"{path}: cannot read ({exc})") from exc
    first = text.lstrip()[:1]
    if first == "{":
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise ProbeInputError(f"{path} line {n}: invalid JSON ({exc})") from exc
                yield n, row
        return
    dialect = "excel-tab" if "\t" in text.split("\n", 1)[0] else "excel"
    reader = csv.DictReader(io.StringIO(text), dialect=dialect)
    missing = set(columns) - set(reader.fieldnames or [])
    if missing:
        raise ProbeInputError(f"{path}: header lacks column(s) {sorted(missing)}; expected {list(columns)}")
    for n, row in enumerate(reader, start=2):
        yield n, row


def _field(path, n, row, name, kind=str):
    if not isinstance(row, dict) or name not in row or row[name] in (None, ""):
        raise ProbeInputError(f"{path} line {n}: missing {name!r}")
    try:
        value = kind(row[name])
    except (TypeError, ValueError):
        raise ProbeInputError(f"{path} line {n}: {name!r} must be a {kind.__name__}, got {row[name]!r}") from None
    if kind is float and not math.isfinite(value):
        raise ProbeInputError(f"{path} line {n}: {name!r} must be finite")
    return value


ROOM_COLUMNS = ("scan", "viewpoint", "room")
OBJECT_COLUMNS = ("scan", "viewpoint", "object", "heading", "distance")


def load_rooms(path: str) -> dict[str, dict[str, str]]:
    """Room labels: {scan: {viewpoint: room type}} from a table with columns scan, viewpoint, room."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for n, row in _table_rows(path, ROOM_COLUMNS):
        scan, vp = _field(path, n, row, "scan"), _field(path, n, row, "viewpoint")
        room = _field(path, n, row, "room").strip()
        if out[scan].setdefault(vp, room) != room:
            raise ProbeInputError(
                f"{path} line {n}: viewpoint {vp!r} of scan {scan!r} already labelled {out[scan][vp]!r}"
            )
    return dict(out)


def load_objects(path: str) -> dict[str, dict[str, list[tuple[str, float, float]]]]:
    """Visible objects: {scan: {viewpoint: [(name, heading rad, distance m)]}} from a table with columns
    scan, viewpoint, object, heading (radians, simulator convention), distance (metres)."""
    out: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for n, row in _table_rows(path, OBJECT_COLUMNS):
        scan, vp = _field(path, n, row, "scan"), _field(path, n, row, "viewpoint")
        name = _field(path, n, row, "object").strip()
        heading, distance = _field(path, n, row, "heading", float), _field(path, n, row, "distance", float)
        if distance < 0:
            raise ProbeInputError(f"{path} line {n}: 'distance' must be >= 0")
        out[scan][vp].append((name, heading, distance))
    return {s: dict(v) for s, v in out.items()}


# ---------------------------------------------------------------------------- episodes
@dataclass
class ProbeConfig:
    probes: tuple[str, ...] = PROBES
    seed: int = 0
    templates: dict = field(default_factory=lambda: load_templates(None))
    room_max_hops: int = 1
    object_max_distance: float = 3.0
    object_max_angle: float = 15.0

    def __post_init__(self) -> None:
        unknown = set(self.probes) - set(PROBES)
        if unknown or not self.probes:
            raise ValueError(f"probes must be a non-empty subset of {PROBES}, got {list(self.probes)}")
        if self.room_max_hops < 1:
            raise ValueError(f"room_max_hops must be >= 1, got {self.room_max_hops}")
        validate_templates(self.templates)


def skill_of(probe: str, target: str) -> str:
    """The scorer's skill key: `stop`, `direction:<region>`, `room`, `object`."""
    return f"direction:{target}" if probe == "direction" else probe


def probe_episodes(
    candidate: dict,
    graph: NavGraph,
    config: ProbeConfig,
    rooms: dict[str, str] | None = None,
    objects: dict[str, list] | None = None,
    hops: np.ndarray | None = None,
) -> list[dict]:
    """Every probe pair (intervention and control episodes) for one truncation candidate.

    `rooms` / `objects` are this scan's tables (room and object probes run only when given);
    `hops` is `hop_matrix(graph)`, computed by the caller once per scan. The appended sentences are in
    the candidate's `language`; a probe with no phrasings in it makes no episode (`unphrased_probes`).
    """
    path = candidate["path"]
    arrival = arrival_heading(graph, path, candidate["heading"])
    here = graph.idx(path[-1])
    nb, rel, regions = neighbour_geometry(graph, path[-1], arrival)
    names = [graph.viewpoints[k] for k in nb]
    candidates = names + [STOP]
    position = {k: n for n, k in enumerate(nb.tolist())}
    base = {
        "source": candidate["source"],
        "candidate_id": candidate["candidate_id"],
        "segment": candidate["segment"],
        "num_segments": candidate["num_segments"],
        "instr_id": candidate["instr_id"],
        "path_id": candidate["path_id"],
        "scan": candidate["scan"],
        "path": list(path),
        "heading": float(candidate["heading"]),
        "arrival_heading": float(arrival),
        "candidates": candidates,
        "neighbour_rel_heading": [float(x) for x in rel],
    }
    language = candidate.get("language") or R2R_LANGUAGE
    cid, seed, templates = candidate["candidate_id"], config.seed, templates_for(config.templates, language)
    out: list[dict] = []

    def pair(probe, target, hops_, correct, appended, control_text, control_appended):
        pair_id = f"{cid}:{probe}:{target}" + (f":{hops_}hop" if probe == "room" else "")
        correct_ids = [candidates[position[k]] for k in correct] if probe != "stop" else [STOP]
        for variant, text, app in (
            (INTERVENTION, append_sentence(candidate["prefix"], appended, language), appended),
            (CONTROL, control_text, control_appended),
        ):
            out.append(
                {
                    **base,
                    "episode_id": f"{pair_id}:{variant}",
                    "pair_id": pair_id,
                    "variant": variant,
                    "probe": probe,
                    "target": target,
                    "skill": skill_of(probe, target),
                    "hops": hops_,
                    "instruction": text,
                    "appended": app,
                    "correct": sorted(correct_ids, key=candidates.index),
                }
            )

    prefix = candidate["prefix"]
    if "stop" in config.probes and "stop" in templates:
        sentence = choose(templates["stop"], seed, f"{cid}:stop")
        nxt = candidate["prefix_next"][len(prefix) :].strip() if candidate["prefix_next"].startswith(prefix) else ""
        pair("stop", "stop", None, None, sentence, candidate["prefix_next"], nxt)
    if "direction" in config.probes and "direction" in templates:
        for region, mask in direction_targets(regions):
            sentence = choose(templates["direction"][region], seed, f"{cid}:direction:{region}")
            pair("direction", region, None, nb[mask], sentence, prefix, "")
    if "room" in config.probes and rooms and "room" in templates:
        if hops is None:
            hops = hop_matrix(graph)
        for room, h, correct in room_targets(graph, here, rooms, hops, config.room_max_hops):
            sentence = choose(templates["room"], seed, f"{cid}:room:{room}:{h}").format(room=room)
            pair("room", room, h, correct, sentence, prefix, "")
    if "object" in config.probes and objects and "object" in templates:
        seen = objects.get(path[-1], [])
        for name, correct in object_targets(graph, here, seen, config.object_max_distance, config.object_max_angle):
            sentence = choose(templates["object"], seed, f"{cid}:object:{name}").format(object=name)
            pair("object", name, None, correct, sentence, prefix, "")
    return out


def unphrased_probes(config: ProbeConfig, language: str | None, rooms: bool, objects: bool) -> tuple[str, ...]:
    """The probes `probe_episodes` would run for an instruction in `language` (requested, and for room and
    object, with this scan's table given) but that have no phrasings in it: not applicable there.

    >>> unphrased_probes(ProbeConfig(probes=("stop", "room")), "hi-IN", rooms=True, objects=False)
    ('room',)
    >>> unphrased_probes(ProbeConfig(probes=("stop", "room")), "hi-IN", rooms=False, objects=False)
    ()
    """
    templates = templates_for(config.templates, language)
    would_run = {"stop": True, "direction": True, "room": rooms, "object": objects}
    return tuple(p for p in config.probes if would_run[p] and p not in templates)


def agent_episode(episode: dict) -> dict:
    """What agent code reads: an R2R-like record whose `instr_id` is the episode id.

    The agent is walked along `path` from `path[0]` facing `heading` and asked for its
    next-action distribution at `path[-1]` over `candidates`.
    """
    return {
        "instr_id": episode["episode_id"],
        "episode_id": episode["episode_id"],
        "path_id": episode["path_id"],
        "scan": episode["scan"],
        "path": episode["path"],
        "heading": episode["heading"],
        "instruction": episode["instruction"],
        "instructions": [episode["instruction"]],
        "candidates": episode["candidates"],
    }
