"""Every declared output is accounted for before `_SUCCESS` (docs/failure_semantics.md, "What is checked
before publishing"): with a sink that loses rows, every job fails (exit 3) naming the short file and
both counts, and the published version stays what `vlnkit published D` listed, byte for byte.

The sinks are the test doubles of `tests/lossy.py`; each job first publishes a good run, then reruns
with the double in place.
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import os
import re
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from tests.hostile import VALID_FLAGS, valid_inputs
from tests.lossy import cut_json_short, lose_parquet_rows
from vlnkit.io import layout


def run(job: str, *flags: str) -> dict:
    return importlib.import_module(f"pipelines.{job}").main(["--runner=DirectRunner", *flags])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    return valid_inputs(tmp_path_factory.mktemp("outputs"))


# The file each job's lossy run leaves short, and the double that does it.
SHORT = {
    "build_r4r": ("paths-00000-of-00001.parquet", functools.partial(lose_parquet_rows, keep="first_table")),
    "score": ("episodes-00000-of-00001.parquet", lose_parquet_rows),
    "random_baseline": ("episodes-00000-of-00001.parquet", lose_parquet_rows),
    "perturb": ("perturbations-00000-of-00001.parquet", lose_parquet_rows),
    "build_compat": ("compat-00000-of-00001.parquet", lose_parquet_rows),
    "paraphrase": ("paraphrases-00000-of-00001.parquet", lose_parquet_rows),
    "build_probes": ("probes-00000-of-00001.parquet", lose_parquet_rows),
    "score_probes": ("scores-00000-of-00001.parquet", lose_parquet_rows),
    "report": ("report_tables.json", cut_json_short),
    "build_crafty": ("instructions-00000-of-00001.parquet", lose_parquet_rows),
    "score_instructions": ("instructions-00000-of-00001.parquet", lose_parquet_rows),
}


def test_every_job_is_checked():
    from pipelines.cli import JOBS

    assert set(VALID_FLAGS) == set(SHORT) == set(JOBS)


def published_listing(out: Path) -> tuple[str, dict[str, bytes]]:
    """What `vlnkit published D` prints, and the bytes of every file it lists."""
    printed = StringIO()
    with redirect_stdout(printed):
        assert layout.main([str(out)]) == 0
    return printed.getvalue(), {p: Path(p).read_bytes() for p in printed.getvalue().split()}


def failed_run(job, out, flags, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        run(job, f"--output_dir={out}", *flags)
    err = capsys.readouterr().err
    assert exc.value.code == 3, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("job", sorted(VALID_FLAGS))
def test_a_sink_that_loses_rows_fails_the_run_naming_the_short_file(job, inputs, tmp_path, capsys, monkeypatch):
    out = tmp_path / "D"
    flags = [*VALID_FLAGS[job](inputs, tmp_path), *([] if job == "report" else ["--num_shards=1"])]
    run(job, f"--output_dir={out}", *flags)
    capsys.readouterr()
    before = published_listing(out)
    short, double = SHORT[job]
    double(monkeypatch)
    err = failed_run(job, out, flags, capsys)
    # One line naming the file and both counts (or, for a JSON document, what is wrong with it).
    assert re.search(rf"versions/[^/ ]+/{re.escape(short)}: ", err), err
    if short.endswith(".parquet"):
        written, counted = map(int, re.search(r"holds (\d+) row\(s\), the run counted (\d+)", err).groups())
        assert written < counted, err
    monkeypatch.undo()
    assert published_listing(out) == before
    manifest = json.loads((out / "failed" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["failure"] in err
    assert any(p["file"].endswith(short) for p in manifest["output_problems"]), manifest["output_problems"]


def test_a_cut_short_r4r_json_fails_the_run_with_both_counts(inputs, tmp_path, capsys, monkeypatch):
    out = tmp_path / "D"
    flags = VALID_FLAGS["build_r4r"](inputs, tmp_path)
    summary = run("build_r4r", f"--output_dir={out}", *flags)
    capsys.readouterr()
    before = published_listing(out)
    cut_json_short(monkeypatch)
    err = failed_run("build_r4r", out, flags, capsys)
    assert re.search(r"versions/[^/ ]+/R4R\.json: holds (\d+) row\(s\), the run counted (\d+)", err), err
    counted = int(re.search(r"the run counted (\d+)", err).group(1))
    assert counted == summary["dataset"]["paths"] > 0
    monkeypatch.undo()
    assert published_listing(out) == before
    assert os.path.realpath(tmp_path / "R4R.json").startswith(str(out / "versions"))  # still the published copy


def test_a_file_nobody_declared_fails_the_run(inputs, tmp_path, capsys, monkeypatch):
    from transforms import write

    real = write.write_json

    def write_json(path, obj, indent=False):
        real(path, obj, indent)
        if path.endswith("summary.json"):
            Path(path).with_name("stray.txt").write_text("left by a sink\n")

    monkeypatch.setattr(write, "write_json", write_json)
    with pytest.raises(SystemExit) as exc:
        run("perturb", f"--output_dir={tmp_path}/D", *VALID_FLAGS["perturb"](inputs, tmp_path))
    err = capsys.readouterr().err
    assert exc.value.code == 3 and re.search(r"versions/[^/ ]+/stray\.txt: written, but not declared", err), err


def test_a_good_run_records_size_rows_and_crc32c_of_every_file(inputs, tmp_path):
    import google_crc32c

    out = tmp_path / "D"
    summary = run("build_r4r", f"--output_dir={out}", *VALID_FLAGS["build_r4r"](inputs, tmp_path))
    manifest = json.loads((out / "manifest.json").read_text())
    folder = out / "versions" / manifest["version"]
    names = {o["name"]: o for o in manifest["outputs"]}
    on_disk = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert sorted(names) == [n for n in on_disk if n not in ("manifest.json", "_SUCCESS")]
    for name, o in names.items():
        data = (folder / name).read_bytes()
        assert o["bytes"] == len(data)
        assert base64.b64decode(o["crc32c"]) == google_crc32c.Checksum(data).digest()
    paths = summary["dataset"]["paths"]
    assert names["R4R.json"]["rows"] == len(json.loads((folder / "R4R.json").read_text())) == paths
    assert sum(o["rows"] for n, o in names.items() if n.startswith("paths-")) == paths
    assert names["summary.json"]["rows"] is None
