"""The code fingerprint changes whenever any source file of the installed packages changes (two different
uncommitted edits, or two builds with one version number, never share a fingerprint)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = "from vlnkit.provenance import fingerprint, code_identity; print(fingerprint('j', {}, []), code_identity()['version'])"


def fingerprint_of(tree: Path) -> tuple[str, str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0], out[1]


def test_two_different_edits_with_one_version_number_fingerprint_differently(tmp_path):
    trees = []
    for edit in ("# one edit\n", "# another edit\n"):
        tree = tmp_path / edit.split()[1]
        for package in ("vlnkit", "transforms", "pipelines", "configs"):
            shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
        with open(tree / "transforms" / "write.py", "a") as f:
            f.write(edit)
        trees.append(tree)
    (a, version_a), (b, version_b) = fingerprint_of(trees[0]), fingerprint_of(trees[1])
    assert version_a == version_b and a != b
    assert fingerprint_of(trees[0])[0] == a  # and it is stable
