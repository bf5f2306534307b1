"""Hostile inputs every job must survive, generated at test time (a new job inherits them by adding one entry).

`JOB_FLAGS[job](inputs)` gives the flags that make `job` read the files in `inputs` (a dict of
kind -> path), so the same hostile file can be handed to every job in the place it reads.
"""

from __future__ import annotations

import json
from pathlib import Path

from vlnkit.fixtures.grid import write_environment

SECRET_VALUES = {
    # Beam options that carry secrets; the values look like real ones so value-based redaction is tested too.
    "s3_access_key_id": "AKIAIOSFODNN7EXAMPLE",
    "s3_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "azure_connection_string": "DefaultEndpointsProtocol=https;AccountName=vln;AccountKey=c2VjcmV0a2V5PT0=;",
}


def environment(root: Path) -> dict[str, str]:
    """Small valid inputs of every kind the jobs read (synthetic graphs and paths, objects along them)."""
    r2r, conn = write_environment(str(root / "env"), scans=1, paths_per_scan=6)
    records = json.loads(Path(r2r).read_text())
    preds = root / "preds.json"
    preds.write_text(
        json.dumps([{"instr_id": f"{r['path_id']}_{k}", "trajectory": r["path"]} for r in records for k in range(3)])
    )
    agent = root / "agent.jsonl"
    agent.write_text("")
    objects_dir, bbox_dir = write_objects(conn, root / "objects")
    return {
        "dataset": r2r,
        "connectivity_dir": conn,
        "predictions": str(preds),
        "agent_outputs": str(agent),
        "objects_dir": objects_dir,
        "bbox_dir": bbox_dir,
    }


# Matterport3D's category table, reduced to the columns build_crafty reads and two nameable categories.
CATEGORIES = (
    "index\traw_category\tcategory\tmpcat40index\tmpcat40\n1\tchair\tchair\t3\tchair\n2\ttable\ttable\t5\ttable\n"
)


def write_objects(conn_dir: str, root: Path) -> tuple[str, str]:
    """Synthetic objects for build_crafty on the synthetic scans: one object beside every viewpoint (a chair
    or a table, 0.5 m above it), each seen from its own viewpoint (a REVERIE BBox file per viewpoint) and
    listed in objpos.json; with a two-row category table. Returns (objects_dir, bbox_dir)."""
    bbox = root / "BBox"
    bbox.mkdir(parents=True)
    objpos = {}
    for path in sorted(Path(conn_dir).glob("*_connectivity.json")):
        scan = path.name.removesuffix("_connectivity.json")
        objpos[scan] = {}
        for n, vp in enumerate(json.loads(path.read_text())):
            pose = vp["pose"]
            objpos[scan][str(n)] = [pose[3], pose[7], pose[11] + 0.5]
            seen = {str(n): {"name": ("chair", "table")[n % 2], "visible_pos": [1], "bbox2d": [[0, 0, 1, 1]]}}
            (bbox / f"{scan}_{vp['image_id']}.json").write_text(json.dumps({vp["image_id"]: seen}))
    (root / "objpos.json").write_text(json.dumps(objpos))
    (root / "category_mapping.tsv").write_text(CATEGORIES)
    return str(root), str(bbox)


def empty_file(root: Path, name: str) -> str:
    path = root / name
    path.write_bytes(b"")
    return str(path)


# What each job reads, given the paths of its inputs: the one file under test is `main`.
JOB_FLAGS = {
    "build_r4r": lambda i, main: [f"--dataset={main}", f"--connectivity_dir={i['connectivity_dir']}"],
    "score": lambda i, main: [
        f"--predictions={main}",
        f"--dataset={i['dataset']}",
        f"--connectivity_dir={i['connectivity_dir']}",
    ],
    "random_baseline": lambda i, main: [
        f"--dataset={main}",
        f"--steps_from={i['dataset']}",
        f"--connectivity_dir={i['connectivity_dir']}",
        "--num_trajectories=20",
    ],
    "perturb": lambda i, main: [
        f"--dataset={main}",
        f"--connectivity_dir={i['connectivity_dir']}",
        "--methods=random_walk",
    ],
    "build_compat": lambda i, main: [
        f"--dataset={main}",
        f"--connectivity_dir={i['connectivity_dir']}",
        "--methods=random_walk,direction_swap",
        "--spacy_model=blank:en",
    ],
    "paraphrase": lambda i, main: [f"--dataset={main}", "--translator=offline", "--languages=de"],
    "build_probes": lambda i, main: [f"--alignments={main}", f"--connectivity_dir={i['connectivity_dir']}"],
    "score_probes": lambda i, main: [f"--probes={main}", f"--predictions={i['agent_outputs']}"],
    "build_crafty": lambda i, main: [
        f"--dataset={main}",
        f"--connectivity_dir={i['connectivity_dir']}",
        f"--objects_dir={i['objects_dir']}",
        f"--bbox_dir={i['bbox_dir']}",
    ],
    # the R2R file's own instructions scored as a system's, against those of the dataset
    "score_instructions": lambda i, main: [f"--predictions={main}", f"--references={i['dataset']}"],
    "report": lambda i, main: [f"--inputs={main}", f"--connectivity_dir={i['connectivity_dir']}"],
}


def valid_inputs(root: Path) -> dict[str, str]:
    """Small valid inputs of every job, so that a run refused or failed is so for the reason under test
    only: two synthetic scans, predictions, FGR2R alignments, probes (build_probes' output), an agent."""
    import importlib

    import pyarrow.parquet as pq

    from tests.vlnkit.datasets.test_alignments import write_fgr2r

    def run(job, *flags):
        return importlib.import_module(f"pipelines.{job}").main(["--runner=DirectRunner", *flags])

    r2r, conn = write_environment(str(root / "env"), scans=2, paths_per_scan=12)
    records = json.loads(Path(r2r).read_text())
    preds = root / "preds.json"
    preds.write_text(
        json.dumps([{"instr_id": f"{r['path_id']}_{k}", "trajectory": r["path"]} for r in records for k in range(3)])
    )
    alignments, align_conn = write_fgr2r(root / "fgr2r", scans=2, paths_per_scan=8, seed=6)
    probes = root / "probes"
    run(
        "build_probes",
        f"--alignments={alignments}",
        f"--connectivity_dir={align_conn}",
        f"--output_dir={probes}",
        "--probe_types=stop,direction",
    )
    episodes = pq.read_table(sorted(probes.glob("probes-*.parquet"))).to_pylist()
    agent = root / "agent.jsonl"  # answers every other episode: the rest are listed as missing
    agent.write_text(
        "".join(
            json.dumps({"episode_id": e["episode_id"], "probs": {c: 1.0 for c in e["correct"][:1]}}) + "\n"
            for e in episodes[::2]
        )
    )
    objects_dir, bbox_dir = write_objects(conn, root / "objects")
    return {
        "dataset": r2r,
        "connectivity_dir": conn,
        "objects_dir": objects_dir,
        "bbox_dir": bbox_dir,
        "predictions": str(preds),
        "alignments": alignments,
        "alignment_connectivity": align_conn,
        "probes": str(probes),
        "agent": str(agent),
    }


# What each job reads, given valid_inputs(): the flags of a run that succeeds.
VALID_FLAGS = {
    "build_r4r": lambda i, out: [
        f"--dataset={i['dataset']}",
        f"--connectivity_dir={i['connectivity_dir']}",
        f"--json_output={out}/R4R.json",
    ],
    "score": lambda i, out: [
        f"--predictions={i['predictions']}",
        f"--dataset={i['dataset']}",
        f"--connectivity_dir={i['connectivity_dir']}",
        "--bootstrap=0",
    ],
    "random_baseline": lambda i, out: [
        f"--dataset={i['dataset']}",
        f"--steps_from={i['dataset']}",
        f"--connectivity_dir={i['connectivity_dir']}",
        "--num_trajectories=40",
        "--write_episodes",
    ],
    "perturb": lambda i, out: [
        f"--dataset={i['dataset']}",
        f"--connectivity_dir={i['connectivity_dir']}",
        "--methods=random_walk",
    ],
    "build_compat": lambda i, out: [
        f"--dataset={i['dataset']}",
        f"--connectivity_dir={i['connectivity_dir']}",
        "--methods=random_walk,direction_swap",
        "--spacy_model=blank:en",
    ],
    "paraphrase": lambda i, out: [f"--dataset={i['dataset']}", "--translator=offline", "--languages=de"],
    "build_probes": lambda i, out: [
        f"--alignments={i['alignments']}",
        f"--connectivity_dir={i['alignment_connectivity']}",
        "--probe_types=stop,direction",
    ],
    "score_probes": lambda i, out: [f"--probes={i['probes']}", f"--predictions={i['agent']}", "--bootstrap=50"],
    "build_crafty": lambda i, out: [
        f"--dataset={i['dataset']}",
        f"--connectivity_dir={i['connectivity_dir']}",
        f"--objects_dir={i['objects_dir']}",
        f"--bbox_dir={i['bbox_dir']}",
    ],
    "score_instructions": lambda i, out: [
        f"--predictions={i['dataset']}",
        f"--references={i['dataset']}",
        "--bootstrap=50",
    ],
    "report": lambda i, out: [f"--inputs={i['dataset']}", f"--connectivity_dir={i['connectivity_dir']}"],
}
