import json

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.vlnkit.datasets.test_alignments import write_fgr2r
from transforms.deadletter import DEAD_LETTER
from transforms.probes import (
    MISSING,
    STATS,
    MakeProbeEpisodes,
    ReadAgentOutputs,
    ReadAlignments,
    ScoreProbeEpisodes,
    SummarizeSkills,
)
from transforms.tally import SumDicts
from vlnkit.datasets.alignments import parse_fgr2r
from vlnkit.navigation.graph import GraphStore
from vlnkit.probes.episodes import ProbeConfig, hop_matrix, probe_episodes, truncation_candidates
from vlnkit.probes.scoring import correct_mass, summarize_skills


def core_episodes(fgr2r_path, conn_dir, config, rooms=None):
    store = GraphStore(conn_dir)
    out = []
    for a in parse_fgr2r(open(fgr2r_path).read(), fgr2r_path):
        g = store.get(a["scan"])
        r = (rooms or {}).get(a["scan"])
        for c in truncation_candidates(a):
            out += probe_episodes(c, g, config, r, None, hop_matrix(g) if r else None)
    return out


def key(e):
    return json.dumps({k: v for k, v in e.items() if not k.startswith("_")}, sort_keys=True)


def test_make_probe_episodes_matches_the_core(tmp_path):
    path, conn = write_fgr2r(tmp_path, scans=2, paths_per_scan=6, seed=4)
    rooms_file = tmp_path / "rooms.csv"
    rooms = {
        "synthetic_grid_00": {
            f"vp_{i:02d}_{j:02d}": ("kitchen" if i < 7 else "hall") for i in range(15) for j in range(15)
        }
    }
    rooms_file.write_text(
        "scan,viewpoint,room\n" + "".join(f"synthetic_grid_00,{v},{r}\n" for v, r in rooms["synthetic_grid_00"].items())
    )
    config = ProbeConfig(seed=5, room_max_hops=3)
    expected = core_episodes(path, conn, config, rooms)
    assert expected and any(e["probe"] == "room" for e in expected)
    with TestPipeline() as p:
        read = p | ReadAlignments([path])
        made = read["records"] | MakeProbeEpisodes(conn, config, rooms=str(rooms_file))
        assert_that(made["episodes"] | beam.Map(key), equal_to([key(e) for e in expected]), label="episodes")
        totals = made[STATS] | beam.CombineGlobally(SumDicts())
        assert_that(
            totals | beam.Map(lambda t: (t["alignments"], t["candidates"])),
            equal_to([(36, len({e["candidate_id"] for e in expected}))]),
            label="stats",
        )
        assert_that(made[DEAD_LETTER], equal_to([]), label="no dead letters")


def test_unknown_scans_and_viewpoints_are_dead_lettered(tmp_path):
    path, conn = write_fgr2r(tmp_path, scans=1, paths_per_scan=2, seed=1)
    records = json.load(open(path))
    records[0]["scan"] = "nowhere"
    g = GraphStore(conn).get(records[1]["scan"])
    path = list(records[1]["path"])
    path[1] = next(v for v in g.viewpoints if not g.is_edge(path[0], v) and v != path[0])
    records.append({**records[1], "path_id": 77, "path": path})  # step 0 -> 1 is not an edge: wrong geometry
    records[1]["path"][-1] = "vp_unknown"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(records))
    with TestPipeline() as p:
        read = p | ReadAlignments([str(bad), str(tmp_path / "missing.json")])
        made = read["records"] | MakeProbeEpisodes(conn, ProbeConfig())
        dead = (read[DEAD_LETTER], made[DEAD_LETTER]) | beam.Flatten()
        reasons = dead | beam.Map(lambda d: (d["stage"], d["record"].split(" ")[0], d["reason"].split(" ")[0]))
        assert_that(
            reasons,
            equal_to(
                [("read", "", "cannot")]
                + [("graph", "#0", f"{conn}/nowhere_connectivity.json:")] * 3
                + [("graph", "#1", "viewpoint")] * 3
                + [("graph", "#2", "path")] * 3
            ),
        )


def test_scoring_transforms_match_the_core_and_report_missing_and_bad_outputs(tmp_path):
    path, conn = write_fgr2r(tmp_path, scans=2, paths_per_scan=5, seed=2)
    eps = core_episodes(path, conn, ProbeConfig(probes=("stop", "direction")))
    lines, rows = [], []
    for k, e in enumerate(eps):
        if k == 0:
            continue  # missing
        probs = {c: 1.0 / len(e["candidates"]) for c in e["candidates"]}
        lines.append(json.dumps({"episode_id": e["episode_id"], "probs": probs}))
        rows.append(
            {**e, "trajectory": str(e["path_id"]), "mass": correct_mass(probs, e["candidates"], e["correct"])[0]}
        )
    lines.append(json.dumps({"episode_id": eps[1]["episode_id"], "probs": {"STOP": 1}}))  # duplicate
    lines.append(json.dumps({"episode_id": "nope", "probs": {"STOP": 1}}))  # unknown episode
    lines.append(json.dumps({"episode_id": eps[2]["episode_id"] + "x", "probs": {"STOP": 1}}))  # unknown too
    (tmp_path / "out.jsonl").write_text("\n".join(lines))
    expected = summarize_skills(rows, seed=3, n_boot=100)
    with TestPipeline() as p:
        episodes = p | "Eps" >> beam.Create(eps)
        agent = p | ReadAgentOutputs([str(tmp_path / "out.jsonl")])
        scored = (episodes, agent["outputs"]) | ScoreProbeEpisodes()
        assert_that(scored[MISSING], equal_to([eps[0]["episode_id"]]), label="missing")
        reasons = scored[DEAD_LETTER] | beam.Map(lambda d: d["reason"].split(" (")[0])
        assert_that(
            reasons,
            equal_to(["duplicate agent output"] + ["agent output for an episode id that is in no probe file"] * 2),
            label="dead",
        )
        skills = scored["scored"] | SummarizeSkills(seed=3, bootstrap=100)
        assert_that(skills, equal_to([expected]), label="skills")


def test_every_output_that_cannot_be_scored_is_a_dead_letter_whatever_raised(tmp_path):
    """Unusable probabilities (bool, string, NaN, 400-digit integer, overflowing sum) and episode rows that
    break scoring each give one dead letter with the reason; the good outputs are still scored."""
    path, conn = write_fgr2r(tmp_path, scans=1, paths_per_scan=3, seed=2)
    eps = core_episodes(path, conn, ProbeConfig(probes=("stop",)))
    assert len(eps) >= 8
    bad_values = ["true", '"0.5"', "NaN", "1" + "0" * 400, "-0.5", "1e400"]
    lines = []
    for e, raw in zip(eps, bad_values):
        lines.append(f'{{"episode_id": {json.dumps(e["episode_id"])}, "probs": {{"STOP": {raw}}}}}')
    overflow = eps[len(bad_values)]
    lines.append(
        json.dumps({"episode_id": overflow["episode_id"], "probs": {"STOP": 1e308, overflow["candidates"][0]: 1e308}})
    )
    broken = {**eps[len(bad_values) + 1], "candidates": None}  # a probe row that makes scoring itself fail
    lines.append(json.dumps({"episode_id": broken["episode_id"], "probs": {"STOP": 1.0}}))
    good = eps[len(bad_values) + 2 :]
    lines += [
        json.dumps({"episode_id": e["episode_id"], "probs": {"STOP": 0.25, e["candidates"][0]: 0.75}}) for e in good
    ]
    (tmp_path / "out.jsonl").write_text("\n".join(lines))
    rows = eps[: len(bad_values) + 1] + [broken] + good
    with TestPipeline() as p:
        episodes = p | "Eps" >> beam.Create(rows)
        agent = p | ReadAgentOutputs([str(tmp_path / "out.jsonl")])
        scored = (episodes, agent["outputs"]) | ScoreProbeEpisodes()
        dead = (agent[DEAD_LETTER], scored[DEAD_LETTER]) | beam.Flatten()
        assert_that(
            dead | beam.Map(lambda d: (d["stage"], d["record"].split(" ")[0], d["reason"].split(",")[0])),
            equal_to(
                [
                    ("agent_output", "line", "probability of 'STOP' must be a number"),
                    ("agent_output", "line", "probability of 'STOP' must be a number"),
                    ("agent_output", "line", "probability of 'STOP' must be finite"),
                    ("agent_output", "line", "probability of 'STOP' overflows a float (an integer of 401 digits)"),
                    ("agent_output", "line", "probability of 'STOP' must be >= 0"),
                    ("agent_output", "line", "probability of 'STOP' must be finite"),
                    ("agent_output", "line", "probs sum overflows a float (probabilities too large to normalize)"),
                    (
                        "score",
                        broken["episode_id"],
                        "cannot score this episode (TypeError: 'NoneType' object is not iterable)",
                    ),
                ]
            ),
            label="dead letters",
        )
        assert_that(
            scored["scored"] | beam.Map(lambda r: (r["episode_id"], r["mass"])),
            equal_to([(e["episode_id"], 0.25) for e in good]),
            label="good outputs scored",
        )
        assert_that(
            scored[MISSING],
            equal_to([e["episode_id"] for e in eps[: len(bad_values) + 1]]),
            label="refused outputs leave their episodes unanswered",
        )
