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
    """Small valid inputs of every kind the jobs read (synthetic graphs and paths)."""
    r2r, conn = write_environment(str(root / "env"), scans=1, paths_per_scan=6)
    records = json.loads(Path(r2r).read_text())
    preds = root / "preds.json"
    preds.write_text(
        json.dumps([{"instr_id": f"{r['path_id']}_{k}", "trajectory": r["path"]} for r in records for k in range(3)])
    )
    agent = root / "agent.jsonl"
    agent.write_text("")
    return {"dataset": r2r, "connectivity_dir": conn, "predictions": str(preds), "agent_outputs": str(agent)}


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
    "report": lambda i, main: [f"--inputs={main}", f"--connectivity_dir={i['connectivity_dir']}"],
}
