"""End-to-end runs of `python -m pipelines.build_probes` (in-process, DirectRunner)."""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipelines import build_probes
from tests.conftest import ROOT
from tests.vlnkit.datasets.test_alignments import write_fgr2r
from vlnkit.datasets.pose_traces import pose_trace_path
from vlnkit.fixtures.rxr import read_jsonl, write_jsonl_gz, write_rxr_fixtures
from vlnkit.probes.schemas import PROBE_EPISODES


def run(tmp_path, *flags):
    out = tmp_path / "out"
    summary = build_probes.main(["--runner=DirectRunner", f"--output_dir={out}", *flags])
    return out, summary


def rows(out):
    return pq.read_table(sorted(out.glob("probes-*-of-*.parquet"))).to_pylist()


def test_synthetic_run_writes_parquet_json_and_counts(tmp_path):
    path, conn = write_fgr2r(tmp_path, scans=2, paths_per_scan=5, seed=3)
    rooms = tmp_path / "rooms.jsonl"
    rooms.write_text(
        "".join(
            json.dumps(
                {
                    "scan": "synthetic_grid_00",
                    "viewpoint": f"vp_{i:02d}_{j:02d}",
                    "room": "kitchen" if j < 7 else "hall",
                }
            )
            + "\n"
            for i in range(15)
            for j in range(15)
        )
    )
    objects = tmp_path / "objects.csv"
    objects.write_text(
        "scan,viewpoint,object,heading,distance\n"
        + "".join(f"synthetic_grid_01,vp_{i:02d}_{j:02d},door,1.5708,2.0\n" for i in range(15) for j in range(15))
    )
    out, summary = run(
        tmp_path,
        f"--alignments={path}",
        f"--connectivity_dir={conn}",
        f"--rooms={rooms}",
        f"--objects={objects}",
        "--seed=7",
    )
    assert (out / "_SUCCESS").exists() and summary["dead_letters"] == 0
    table = rows(out)
    agent = json.loads((out / "episodes.json").read_text())
    assert summary["episodes"] == len(table) == len(agent)
    assert {r["episode_id"] for r in table} == {a["instr_id"] for a in agent}
    assert set(agent[0]) >= {"scan", "path", "heading", "instruction", "instr_id", "instructions"}
    per_probe = Counter(r["probe"] for r in table if r["variant"] == "intervention")
    assert summary["pairs_per_probe"] == dict(per_probe) and set(per_probe) == {"stop", "direction", "room", "object"}
    assert summary["candidates"] == per_probe["stop"] == sum(1 for r in table if r["probe"] == "stop") // 2
    assert all(r["scan"] == "synthetic_grid_00" for r in table if r["probe"] == "room")
    assert all(r["scan"] == "synthetic_grid_01" for r in table if r["probe"] == "object")
    manifest = json.loads((out / "manifest.json").read_text())
    assert any(i["path"] == str(rooms) for i in manifest["inputs"])
    # Same seed, same episodes; another seed changes only phrasings.
    out2, _ = run(
        tmp_path / "again",
        f"--alignments={path}",
        f"--connectivity_dir={conn}",
        "--probe_types=stop,direction",
        "--seed=7",
    )
    again = {r["episode_id"]: r["instruction"] for r in rows(out2)}
    assert all(again[r["episode_id"]] == r["instruction"] for r in table if r["episode_id"] in again)


def test_command_line_entry_point_runs(tmp_path):
    path, conn = write_fgr2r(tmp_path, scans=1, paths_per_scan=3, seed=1)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.build_probes",
            "--runner=DirectRunner",
            f"--alignments={path}",
            f"--connectivity_dir={conn}",
            f"--output_dir={tmp_path}/o",
            "--probe_types=stop,direction",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pairs: direction:left" in proc.stdout and (tmp_path / "o" / "_SUCCESS").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--alignments=/nonexistent/*.json", "--connectivity_dir=/tmp"], "matches no file"),
        (["--connectivity_dir="], "--connectivity_dir is required"),
        (["--probe_types=stop,jump"], "probes must be a non-empty subset"),
        (["--probe_types=room"], "need --rooms"),
    ],
)
def test_structural_problems_stop_the_job_with_one_clear_line(tmp_path, capsys, flags, message):
    path, conn = write_fgr2r(tmp_path, scans=1, paths_per_scan=1)
    base = [f"--alignments={path}", f"--connectivity_dir={conn}"]
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, *base, *flags)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_malformed_room_table_is_structural(tmp_path, capsys):
    path, conn = write_fgr2r(tmp_path, scans=1, paths_per_scan=1)
    (tmp_path / "rooms.csv").write_text("scan,viewpoint,room\nsynthetic_grid_00,vp_00_00,\n")
    with pytest.raises(SystemExit):
        run(tmp_path, f"--alignments={path}", f"--connectivity_dir={conn}", f"--rooms={tmp_path}/rooms.csv")
    assert "rooms.csv line 2: missing 'room'" in capsys.readouterr().err


# ---------------------------------------------------------------------------- real data
def simple_direction_counts(fgr2r_file, connectivity_dir):
    """Independent count of truncation candidates and direction probes of a Fine-Grained R2R file."""
    return simple_counts(
        (
            (rec["scan"], rec["path"], rec["heading"], [fl[1] for fl in chunks[:-1]])
            for rec in json.load(open(fgr2r_file))
            for chunks in rec["chunk_view"]
        ),
        connectivity_dir,
    )


def simple_counts(instructions, connectivity_dir):
    """Independent count of truncation candidates and direction probes: plain JSON, math, loops.
    `instructions`: (scan, path, heading, [number of path viewpoints up to each candidate's boundary])."""
    graphs = {}

    def graph(scan):
        if scan not in graphs:
            entries = json.load(open(f"{connectivity_dir}/{scan}_connectivity.json"))
            pos = {e["image_id"]: (e["pose"][3], e["pose"][7]) for e in entries if e["included"]}
            nbs = {v: set() for v in pos}
            for e in entries:
                for j, free in enumerate(e["unobstructed"]):
                    a, b = e["image_id"], entries[j]["image_id"]
                    if free and a in pos and b in pos and a != b:
                        nbs[a].add(b)
                        nbs[b].add(a)
            graphs[scan] = pos, nbs
        return graphs[scan]

    def region(rel):
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

    counts = Counter()
    for scan, full_path, start_heading, boundaries in instructions:
        pos, nbs = graph(scan)
        for upto in boundaries:
            counts["candidates"] += 1
            path = full_path[:upto]
            here = path[-1]
            if len(path) > 1:
                (x0, y0), (x1, y1) = pos[path[-2]], pos[here]
                heading = math.atan2(x1 - x0, y1 - y0)
            else:
                heading = start_heading
            regions = []
            for n in nbs[here]:
                rel = math.degrees(math.atan2(pos[n][0] - pos[here][0], pos[n][1] - pos[here][1]) - heading)
                while rel > 180:
                    rel -= 360
                while rel <= -180:
                    rel += 360
                regions.append(region(rel))
            for r in set(regions):
                if len(regions) - regions.count(r) >= 2:
                    counts[f"direction:{r}"] += 1
    return counts


@pytest.mark.real_data
def test_fgr2r_val_unseen_episode_counts_match_a_simple_count(tmp_path, shared_data, connectivity_dir):
    fgr2r = shared_data / "fgr2r" / "FGR2R_val_unseen.json"
    out, summary = run(
        tmp_path, f"--alignments={fgr2r}", f"--connectivity_dir={connectivity_dir}", "--probe_types=stop,direction"
    )
    expected = simple_direction_counts(fgr2r, connectivity_dir)
    assert summary["alignments"] == 2349 and summary["dead_letters"] == 0
    assert summary["candidates"] == expected["candidates"] == 6132
    assert summary["pairs_per_skill"]["stop"] == 6132
    for key, n in expected.items():
        if key.startswith("direction:"):
            assert summary["pairs_per_skill"][key] == n, key
    assert summary["pairs_per_probe"]["direction"] == sum(n for k, n in expected.items() if k.startswith("direction:"))
    assert summary["episodes"] == 2 * (6132 + summary["pairs_per_probe"]["direction"])


# ---------------------------------------------------------------------------- RxR guide files and pose traces
def rxr_boundaries(guide, pose_trace_dir):
    """Where each candidate of a guide ends, from the fixture's own record of where each word was spoken
    (the trace's `text_mask`), a word without times taking the previous word's viewpoint (the first timed
    word's at the start): number of path viewpoints up to each boundary but the last."""
    trace = np.load(pose_trace_path(pose_trace_dir, "val_unseen", guide["instruction_id"]))
    truth = trace["text_mask"].argmax(axis=0).tolist()
    timed = ["start_time" in w for w in guide["timed_instruction"]]
    at, previous = [], truth[timed.index(True)]
    for spoken, has_time in zip(truth, timed):
        previous = spoken if has_time else previous
        at.append(previous)
    lasts = [v for k, v in enumerate(at) if k == 0 or v != at[k - 1]]
    return [last + 1 for last in lasts[:-1]]


@pytest.fixture(scope="module")
def rxr_files(r2r_dir, connectivity_dir, tmp_path_factory):
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:40]
    return write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp_path_factory.mktemp("rxr")))


@pytest.mark.real_data
def test_rxr_guides_and_pose_traces_give_probes_that_pass_the_fgr2r_geometry_checks(
    tmp_path, rxr_files, connectivity_dir
):
    guides = read_jsonl(rxr_files.guide)
    out, summary = run(
        tmp_path,
        "--alignment_format=rxr",
        f"--alignments={rxr_files.guide}",
        f"--pose_traces={rxr_files.pose_traces}",
        f"--connectivity_dir={connectivity_dir}",
        "--probe_types=stop,direction",
    )
    expected = simple_counts(
        ((g["scan"], g["path"], g["heading"], rxr_boundaries(g, rxr_files.pose_traces)) for g in guides),
        connectivity_dir,
    )
    assert summary["alignments"] == len(guides) and summary["dead_letters"] == 0
    assert summary["candidates"] == expected["candidates"] == summary["pairs_per_skill"]["stop"] > len(guides)
    for key, n in expected.items():
        if key.startswith("direction:"):
            assert summary["pairs_per_skill"][key] == n, key
    assert summary["pairs_per_probe"]["direction"] == sum(n for k, n in expected.items() if k.startswith("direction:"))
    assert summary["episodes"] == 2 * (expected["candidates"] + summary["pairs_per_probe"]["direction"])
    # The same schema and kinds as from Fine-Grained R2R; episodes addressed by instruction_id.
    table = pq.read_table(sorted(out.glob("probes-*-of-*.parquet")))
    assert table.schema.equals(PROBE_EPISODES, check_metadata=True)
    rows_ = table.to_pylist()
    by_id = {str(g["instruction_id"]): g for g in guides}
    assert {r["source"] for r in rows_} == {"rxr"} and {r["probe"] for r in rows_} == {"stop", "direction"}
    for r in rows_:
        guide = by_id[r["instr_id"]]
        assert r["path"] == guide["path"][: len(r["path"])] and r["path_id"] == guide["path_id"]
    # Counts per language add up to the totals.
    languages = Counter(g["language"] for g in guides)
    by_language = summary["by_language"]
    assert {k: v["alignments"] for k, v in by_language.items()} == dict(languages)
    for name, total in (("candidates", summary["candidates"]), ("episodes", summary["episodes"])):
        assert sum(v[name] for v in by_language.values()) == total
    assert sum(v["pairs"] for v in by_language.values()) == sum(summary["pairs_per_probe"].values())


@pytest.mark.real_data
def test_missing_and_corrupt_pose_traces_are_dead_letters_naming_the_file(tmp_path, rxr_files, connectivity_dir):
    guides = read_jsonl(rxr_files.guide)[:6]
    traces = tmp_path / "pose_traces"
    shutil.copytree(rxr_files.pose_traces, traces)
    guide_file = tmp_path / "rxr_val_unseen_guide.jsonl.gz"
    write_jsonl_gz(str(guide_file), guides)
    missing = pose_trace_path(str(traces), "val_unseen", guides[1]["instruction_id"])
    corrupt = pose_trace_path(str(traces), "val_unseen", guides[4]["instruction_id"])
    os.remove(missing)
    with open(corrupt, "wb") as f:
        f.write(b"not a numpy archive")
    out, summary = run(
        tmp_path,
        "--alignment_format=rxr",
        f"--alignments={guide_file}",
        f"--pose_traces={traces}",
        f"--connectivity_dir={connectivity_dir}",
        "--probe_types=stop",
    )
    assert summary["alignments"] == 4 and summary["dead_letters"] == 2 and (out / "_SUCCESS").exists()
    dead = [json.loads(line) for line in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    assert {(d["source"], d["record"]) for d in dead} == {
        (missing, f"instruction_id={guides[1]['instruction_id']}"),
        (corrupt, f"instruction_id={guides[4]['instruction_id']}"),
    }
    reasons = {d["source"]: d["reason"] for d in dead}
    assert reasons[missing] == "pose trace not found" and "not a readable numpy archive" in reasons[corrupt]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--alignment_format=rxr"], "--alignment_format=rxr needs --pose_traces"),
        (["--alignment_format=rxr", "--pose_traces=/nonexistent/traces"], "no such folder"),
        (["--pose_traces=/tmp"], "--pose_traces only applies to --alignment_format=rxr"),
    ],
)
def test_pose_trace_flags_are_checked_before_anything_runs(tmp_path, capsys, flags, message):
    path, conn = write_fgr2r(tmp_path, scans=1, paths_per_scan=1)
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, f"--alignments={path}", f"--connectivity_dir={conn}", *flags)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_an_rxr_guide_file_read_as_fgr2r_says_which_flags_to_use(tmp_path, capsys):
    _, conn = write_fgr2r(tmp_path, scans=1, paths_per_scan=1)
    guide = {"instruction_id": 1, "path_id": 0, "scan": "synthetic_grid_00", "path": ["vp_00_00"], "heading": 0.0}
    write_jsonl_gz(str(tmp_path / "g.jsonl.gz"), [guide])
    with pytest.raises(SystemExit) as exc:
        run(tmp_path, f"--alignments={tmp_path}/g.jsonl.gz", f"--connectivity_dir={conn}")
    assert exc.value.code == 2 and "is an RxR guide file: use --alignment_format=rxr" in capsys.readouterr().err


@pytest.mark.real_data
def test_rxr_probe_sentences_are_in_the_instruction_language_and_room_object_not_applicable_in_hi_te(
    tmp_path, rxr_files, connectivity_dir
):
    """Hindi instructions get Devanagari probe sentences, Telugu ones Telugu script, English ones the English
    defaults; room and object probes (English labels) run in English only and are counted not applicable,
    per language, for Hindi and Telugu: one per candidate of a scan with the table."""
    from vlnkit.probes.templates import DEFAULT_TEMPLATES, LANGUAGE_TEMPLATES

    guides = read_jsonl(rxr_files.guide)
    scans = sorted({g["scan"] for g in guides})
    rooms, objects = ["scan,viewpoint,room"], ["scan,viewpoint,object,heading,distance"]
    for scan in scans:
        for k, entry in enumerate(json.load(open(f"{connectivity_dir}/{scan}_connectivity.json"))):
            rooms.append(f"{scan},{entry['image_id']},{('kitchen', 'bedroom', 'hallway')[k % 3]}")
            objects += [f"{scan},{entry['image_id']},sofa,{a},1.5" for a in (0.0, 1.6, 3.1, -1.6)]
    (tmp_path / "rooms.csv").write_text("\n".join(rooms) + "\n")
    (tmp_path / "objects.csv").write_text("\n".join(objects) + "\n")
    out, summary = run(
        tmp_path,
        "--alignment_format=rxr",
        f"--alignments={rxr_files.guide}",
        f"--pose_traces={rxr_files.pose_traces}",
        f"--connectivity_dir={connectivity_dir}",
        f"--rooms={tmp_path}/rooms.csv",
        f"--objects={tmp_path}/objects.csv",
    )
    assert summary["dead_letters"] == 0
    language_of = {str(g["instruction_id"]): g["language"] for g in guides}
    scripts = {"hi-IN": re.compile(r"[\u0900-\u097F]"), "te-IN": re.compile(r"[\u0C00-\u0C7F]")}
    english = set(DEFAULT_TEMPLATES["stop"]) | {s for v in DEFAULT_TEMPLATES["direction"].values() for s in v}
    probes_in = Counter()
    for r in rows(out):
        if r["variant"] != "intervention":
            continue
        language = language_of[r["instr_id"]]
        probes_in[(language, r["probe"])] += 1
        if language in scripts:
            assert scripts[language].search(r["appended"]) and not re.search(r"[A-Za-z]", r["appended"]), r
            mine = LANGUAGE_TEMPLATES[language[:2]]
            assert r["appended"] in (mine["stop"] if r["probe"] == "stop" else mine["direction"][r["target"]])
        elif r["probe"] in ("stop", "direction"):
            assert r["appended"] in english
    for language in ("en-IN", "en-US"):
        assert probes_in[(language, "room")] > 0 and probes_in[(language, "object")] > 0
    by_language = summary["by_language"]
    for language, v in by_language.items():
        if language in scripts:
            assert probes_in[(language, "room")] == probes_in[(language, "object")] == 0
            assert probes_in[(language, "stop")] == v["candidates"] > 0
            assert v["not_applicable"] == {"object": v["candidates"], "room": v["candidates"]}
        else:
            assert v["not_applicable"] == {}
    assert sum(v["pairs"] for v in by_language.values()) == sum(summary["pairs_per_probe"].values())
