"""End-to-end runs of `python -m pipelines.build_probes` (in-process, DirectRunner)."""

import json
import math
import subprocess
import sys
from collections import Counter

import pyarrow.parquet as pq
import pytest

from pipelines import build_probes
from tests.conftest import ROOT
from tests.vlnkit.datasets.test_alignments import write_fgr2r


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
    """Independent count of truncation candidates and direction probes: plain JSON, math, loops."""
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
    for rec in json.load(open(fgr2r_file)):
        pos, nbs = graph(rec["scan"])
        for chunks in rec["chunk_view"]:
            for first_last in chunks[:-1]:
                counts["candidates"] += 1
                path = rec["path"][: first_last[1]]
                here = path[-1]
                if len(path) > 1:
                    (x0, y0), (x1, y1) = pos[path[-2]], pos[here]
                    heading = math.atan2(x1 - x0, y1 - y0)
                else:
                    heading = rec["heading"]
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
