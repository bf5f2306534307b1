"""`vlnkit verify D` and `vlnkit.io.verify(D)`: a published version re-checked against its manifest
(docs/failure_semantics.md, "Verifying a published version"). A good version passes; a truncated shard,
a removed file, an edited `summary.json`, a file added afterwards each fail, naming the file."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

import vlnkit.io
from pipelines.cli import main as cli
from tests.hostile import environment


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """An output folder with two complete versions (the second with an R4R JSON named outside it)."""
    root = tmp_path_factory.mktemp("verify")
    inputs = environment(root)
    out = root / "D"
    build = importlib.import_module("pipelines.build_r4r").main
    common = [
        "--runner=DirectRunner",
        f"--dataset={inputs['dataset']}",
        f"--connectivity_dir={inputs['connectivity_dir']}",
    ]
    build([*common, f"--output_dir={out}"])
    build([*common, f"--output_dir={out}", f"--json_output={root}/R4R.json"])
    return out


@pytest.fixture
def copy(published, tmp_path):
    """A copy of the output folder (as an operator makes one): links and all."""
    target = tmp_path / "copy"
    shutil.copytree(published, target, symlinks=True)
    return target


def verify(*argv) -> tuple[int, str, str]:
    proc = subprocess.run(["vlnkit", "verify", *map(str, argv)], capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def current(out: Path) -> Path:
    return (out / "current").resolve()


def test_a_good_version_and_its_copy_pass(published, copy):
    for folder in (published, copy):
        code, stdout, stderr = verify(folder)
        assert (code, stderr) == (0, ""), stderr
        assert stdout == f"verified: {folder}/versions/{current(folder).name}\n"
        assert vlnkit.io.verify(str(folder)) == []
    code, stdout, _ = verify(copy, "--all")
    assert code == 0 and stdout.count("verified: ") == 2


def test_a_truncated_shard_fails_naming_it(copy):
    shard = next(current(copy).glob("paths-*.parquet"))
    shard.write_bytes(shard.read_bytes()[:-200])
    code, _, stderr = verify(copy)
    lines = stderr.splitlines()
    assert code == 1 and lines and all(line.startswith(f"error: {copy}/versions/") for line in lines), stderr
    assert all(shard.name in line for line in lines)
    assert any("bytes, the manifest records" in line for line in lines)
    assert any("not a readable Parquet file" in line for line in lines)


def test_a_removed_file_fails_naming_it(copy):
    (current(copy) / "R4R.json").unlink()
    code, _, stderr = verify(copy)
    assert code == 1 and stderr == f"error: {current(copy)}/R4R.json: missing\n".replace(
        str(current(copy)), f"{copy}/versions/{current(copy).name}"
    )


def test_an_edited_summary_fails_naming_it(copy):
    summary = current(copy) / "summary.json"
    data = json.loads(summary.read_text())
    data["dataset"]["paths"] += 1
    summary.write_text(json.dumps(data, indent=2, sort_keys=True))
    code, _, stderr = verify(copy)
    assert code == 1 and "summary.json: crc32c " in stderr and stderr.count("\n") >= 1, stderr
    assert all("summary.json" in line for line in stderr.splitlines())
    problems = vlnkit.io.verify(str(copy))
    assert problems and all(p.file.endswith("summary.json") for p in problems)


def test_a_file_added_after_publishing_fails_naming_it(copy):
    (current(copy) / "notes.txt").write_text("added by hand\n")
    code, _, stderr = verify(copy)
    assert code == 1 and stderr.strip().endswith("notes.txt: not in the manifest"), stderr


def test_all_checks_every_kept_version(copy):
    older = sorted((copy / "versions").iterdir())[0]
    assert older != current(copy)
    (older / "summary.json").write_text("{}")
    assert verify(copy)[0] == 0  # the published version is intact
    code, stdout, stderr = verify(copy, "--all")
    assert code == 1 and f"{older}/summary.json" in stderr.replace(str(copy.resolve()), str(copy))
    assert stdout == f"verified: {copy}/versions/{current(copy).name}\n"


def test_nothing_published_and_usage(tmp_path, capsys):
    code, _, stderr = verify(tmp_path)
    assert code == 1 and stderr.startswith("error: ") and "nothing is published" in stderr
    with pytest.raises(SystemExit) as exc:
        cli(["verify"])
    assert exc.value.code == 2 and "usage: vlnkit verify" in capsys.readouterr().err
    with pytest.raises(vlnkit.io.NothingPublished):
        vlnkit.io.verify(str(tmp_path))
