"""The defects a sweep of hostile inputs found, each held by a test (docs/failure_semantics.md states the
rule every one follows): unreadable input is a dead letter naming the file; a structural problem (a file of
the wrong kind, an output folder inside a published version or holding an input, an unwritable folder, a
meaningless flag value) is refused before the pipeline with one line and exit 2, the same way in every job;
a run that scores nothing fails; a stale lock is taken over; nothing prints a traceback; no password is echoed.
"""

from __future__ import annotations

import gzip
import importlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile import JOB_FLAGS, VALID_FLAGS, environment, valid_inputs
from vlnkit.io import layout

JOBS = sorted(JOB_FLAGS)
ROOT = Path(__file__).resolve().parents[2]


def run(job, *flags):
    return importlib.import_module(f"pipelines.{job}").main(["--runner=DirectRunner", *flags])


def refused(job, capsys, *flags) -> str:
    """Run a job that must be refused: exit 2 and exactly one line, no traceback; the line."""
    with pytest.raises(SystemExit) as exc:
        run(job, *flags)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"error: {job}: ") and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    found = environment(root)
    published = root / "D"  # a published output folder (build_r4r's), for the tests that write near one
    run(
        "build_r4r",
        f"--dataset={found['dataset']}",
        f"--connectivity_dir={found['connectivity_dir']}",
        f"--output_dir={published}",
    )
    return {**found, "published": str(published)}


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    return valid_inputs(tmp_path_factory.mktemp("valid"))


def snapshot(root: Path) -> dict[str, bytes]:
    return {p: Path(p).read_bytes() for p in layout.published(str(root))}


def truncated_gz(source: str, target: Path) -> str:
    data = gzip.compress(Path(source).read_bytes())
    target.write_bytes(data[: len(data) // 2])
    return str(target)


# ---------------------------------------------------------------------------- 1. a truncated .gz input
@pytest.mark.parametrize("job", [j for j in JOBS if j != "score_probes"])
def test_a_truncated_gz_input_is_a_dead_letter_naming_the_file(job, inputs, tmp_path, capsys):
    source = inputs["predictions"] if job == "score" else inputs["dataset"]
    broken = truncated_gz(source, tmp_path / "input.json.gz")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        run(job, f"--output_dir={out}", *JOB_FLAGS[job](inputs, broken))
    err = capsys.readouterr().err
    assert exc.value.code == 3 and err.count("\n") == 1 and "Traceback" not in err, err
    letters = [
        json.loads(line) for line in (out / "failed" / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()
    ]
    assert any(d["source"] == broken and d["stage"] == "read" and d["record"] == "" for d in letters), letters
    manifest = json.loads((out / "failed" / "manifest.json").read_text())
    assert [i["sha256"] for i in manifest["inputs"] if i["path"] == broken] == [
        __import__("hashlib").sha256(Path(broken).read_bytes()).hexdigest()  # the file as stored
    ]


def test_a_truncated_rxr_guide_file_beside_a_good_one_is_one_dead_letter_naming_it(inputs, tmp_path):
    """The truncated file is refused whole (its readable first lines too: a file cut short is not a
    smaller dataset), the other file is read, and the run goes on."""
    from vlnkit.fixtures.rxr import write_rxr_fixtures

    records = json.loads(Path(inputs["dataset"]).read_text())
    files = write_rxr_fixtures(records, "val", inputs["connectivity_dir"], str(tmp_path / "rxr"), pose_traces=False)
    data = Path(files.guide).read_bytes()
    broken = tmp_path / "rxr_val_broken_guide.jsonl.gz"
    broken.write_bytes(data[: int(len(data) * 0.8)])
    out = tmp_path / "out"
    summary = run(
        "perturb",
        f"--output_dir={out}",
        f"--dataset={files.guide},{broken}",
        f"--connectivity_dir={inputs['connectivity_dir']}",
        "--methods=random_walk",
    )
    letters = [json.loads(line) for line in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    assert [(d["source"], d["stage"], d["record"]) for d in letters] == [(str(broken), "read", "")]
    assert "Compressed file ended before the end-of-stream marker" in letters[0]["reason"]
    assert summary["records_read"] == len(gzip.decompress(data).splitlines())


# ---------------------------------------------------------------------------- 2. an output inside a published version
@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize("where", ["versions/{id}/sub", "current/sub", "current", "versions/{id}"])
def test_an_output_folder_inside_a_published_version_is_refused(job, where, inputs, capsys):
    root = Path(inputs["published"])
    before = snapshot(root)
    out = root / where.format(id=layout.current_version(str(root)))
    err = refused(job, capsys, f"--output_dir={out}", *JOB_FLAGS[job](inputs, inputs["dataset"]))
    assert f"--output_dir={out}" in err and f"inside the versions of the output folder {root}" in err, err
    assert snapshot(root) == before and not (root / "current" / "sub").exists()


# ---------------------------------------------------------------------------- 3. a run that scores nothing
def test_a_score_run_that_scores_no_episode_fails_even_when_every_failure_is_accepted(inputs, tmp_path, capsys):
    useless = tmp_path / "preds.json"
    useless.write_text(json.dumps([{"instr_id": "999999_0", "trajectory": ["nowhere"]}]))
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        run("score", f"--output_dir={out}", "--max_failure_fraction=1.0", *JOB_FLAGS["score"](inputs, str(useless)))
    err = capsys.readouterr().err
    assert exc.value.code == 3 and "no episode was scored" in err and err.count("\n") == 1, err
    assert not (out / "current").exists()


# ---------------------------------------------------------------------------- 4. report on zero scored episodes
def test_report_on_a_score_output_without_scored_episodes_is_one_line(inputs, tmp_path, capsys):
    import pyarrow.parquet as pq

    from vlnkit.evaluation.schemas import EPISODE_SCORES

    empty = tmp_path / "score" / "episodes-00000-of-00001.parquet"
    empty.parent.mkdir()
    pq.write_table(EPISODE_SCORES.empty_table(), empty)
    with pytest.raises(SystemExit) as exc:
        run(
            "report",
            f"--output_dir={tmp_path}/out",
            f"--inputs={empty}",
            f"--dataset={inputs['dataset']}",
            f"--connectivity_dir={inputs['connectivity_dir']}",
        )
    err = capsys.readouterr().err
    assert exc.value.code == 3 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "nothing" in err


# ---------------------------------------------------------------------------- 6. a stale lock of a live process
def test_a_lock_of_a_live_process_with_an_old_heartbeat_is_taken_over(inputs, tmp_path, capsys, caplog):
    out = tmp_path / "out"
    out.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        two_days = time.time() - 2 * 86400
        (out / "lock.json").write_text(
            json.dumps(
                {
                    "host": socket.gethostname(),
                    "pid": sleeper.pid,
                    "process_start": _start(sleeper.pid),
                    "started": "2026-01-01T00:00:00+00:00",
                    "run": "20260101T000000.000000Z-00000000",
                    "heartbeat": two_days,
                }
            )
        )
        os.utime(out / "lock.json", (two_days, two_days))
        summary = run("build_r4r", f"--output_dir={out}", *JOB_FLAGS["build_r4r"](inputs, inputs["dataset"]))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert summary["records_read"] > 0 and (out / "_SUCCESS").exists() and not (out / "lock.json").exists()
    assert any("took over" in r.getMessage() or "taken over" in r.getMessage() for r in caplog.records)


def _start(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[19]


# ---------------------------------------------------------------------------- 7. an unwritable versions/ folder
@pytest.mark.parametrize("how", ["a_file", "unwritable"])
def test_an_unusable_versions_folder_is_one_line_and_leaves_no_lock(how, inputs, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    if how == "a_file":
        (out / "versions").write_text("not a folder")
    elif os.geteuid() == 0:
        (out / "versions").symlink_to("/proc/vlnkit-versions")  # root may write anywhere else
    else:
        (out / "versions").mkdir(mode=0o500)
    err = refused("build_r4r", capsys, f"--output_dir={out}", *JOB_FLAGS["build_r4r"](inputs, inputs["dataset"]))
    assert "versions" in err and "--output_dir" in err, err
    assert not (out / "lock.json").exists()


# ---------------------------------------------------------------------------- 8. a real file inside a published folder
@pytest.mark.parametrize("job", ["build_r4r", "perturb", "random_baseline"])
def test_a_real_file_inside_a_published_folder_is_an_input(job, inputs, tmp_path):
    import shutil

    copy = tmp_path / "D"
    shutil.copytree(inputs["published"], copy, symlinks=True)
    extra = copy / "extra_r2r.json"
    shutil.copy(inputs["dataset"], extra)
    summary = run(job, f"--output_dir={tmp_path}/out", *JOB_FLAGS[job](inputs, str(extra)))
    assert summary.get("records_read", summary.get("evaluation_records")) > 0


# ---------------------------------------------------------------------------- 9. an output folder that holds an input
@pytest.mark.parametrize("job", JOBS)
def test_an_output_folder_that_holds_an_input_is_refused(job, inputs, tmp_path, capsys):
    import shutil

    copy = tmp_path / "D"
    shutil.copytree(inputs["published"], copy, symlinks=True)
    before = snapshot(copy)
    err = refused(job, capsys, f"--output_dir={copy}", *JOB_FLAGS[job](inputs, str(copy)))
    assert f"--output_dir={copy}" in err and "an input of this run" in err, err
    assert snapshot(copy) == before


def test_report_on_its_own_output_folder_is_refused(inputs, tmp_path, capsys):
    score = tmp_path / "S"
    run("score", f"--output_dir={score}", "--bootstrap=0", *JOB_FLAGS["score"](inputs, inputs["predictions"]))
    before = snapshot(score)
    err = refused(
        "report",
        capsys,
        f"--inputs={score}",
        f"--output_dir={score}",
        f"--connectivity_dir={inputs['connectivity_dir']}",
    )
    assert "--inputs" in err and "an input of this run" in err
    assert snapshot(score) == before


# ---------------------------------------------------------------------------- 10. a file of the wrong kind
@pytest.mark.parametrize("job", ["build_r4r", "random_baseline", "perturb", "build_compat", "paraphrase", "score"])
def test_an_rxr_follower_file_as_a_dataset_is_refused_the_same_way_in_every_job(job, inputs, tmp_path, capsys):
    from vlnkit.fixtures.rxr import write_rxr_fixtures

    records = json.loads(Path(inputs["dataset"]).read_text())
    files = write_rxr_fixtures(records, "val", inputs["connectivity_dir"], str(tmp_path / "rxr"), pose_traces=False)
    flags = JOB_FLAGS[job](inputs, files.follower)
    if job == "score":  # its --dataset is the follower file here
        flags = [f"--predictions={inputs['predictions']}", f"--dataset={files.follower}", flags[-1]]
    err = refused(job, capsys, f"--output_dir={tmp_path}/out", *flags)
    assert f"--dataset: {files.follower} is an RxR follower file" in err, err


# ---------------------------------------------------------------------------- 13. vlnkit published D
@pytest.mark.parametrize("how", ["dangling", "looping"])
def test_published_with_a_broken_pointer_exits_1_with_one_line(how, tmp_path):
    root = tmp_path / "D"
    (root / "versions").mkdir(parents=True)
    if how == "dangling":
        (root / "current").symlink_to("versions/20260101T000000.000000Z-deadbeef")
    else:
        (root / "current").symlink_to("current")
    proc = subprocess.run(["vlnkit", "published", str(root)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == "", proc
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr


def test_published_into_a_closed_pipe_prints_no_traceback(inputs):
    """`vlnkit published D | head -1`: the reader goes away before the listing is written."""
    proc = subprocess.Popen(
        ["vlnkit", "published", inputs["published"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    proc.stdout.close()  # long before the command has imported anything
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert proc.returncode == 0


# ---------------------------------------------------------------------------- 15. a password in an input URL
@pytest.mark.parametrize(
    "url", ["gs://user:hunter2secret@bucket/r2r.json", "https://user:hunter2secret@example.com/r2r.json"]
)
@pytest.mark.parametrize("job", ["build_r4r", "score", "report"])
def test_a_password_in_an_input_url_is_never_echoed(job, url, inputs, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            f"pipelines.{job}",
            "--runner=DirectRunner",
            f"--output_dir={tmp_path}/out",
            *JOB_FLAGS[job](inputs, url),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_GCE_CHECK": "true"},
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "hunter2secret" not in proc.stderr + proc.stdout, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


# ---------------------------------------------------------------------------- 16. words of the toolkit, one line
def test_a_nan_time_in_a_timed_instruction_is_worded_by_the_toolkit():
    from vlnkit.datasets.records import RXR_GUIDE

    line = {
        "instruction_id": 1,
        "path_id": 2,
        "scan": "s",
        "path": ["a"],
        "heading": 0.0,
        "language": "en-IN",
        "instruction": "go",
        "timed_instruction": [
            {"word": "go", "start_time": 0.5, "end_time": 1.0},
            {"word": "on", "start_time": float("nan")},
        ],
    }
    assert (
        RXR_GUIDE.reason(line)
        == "'timed_instruction' entry 1: 'start_time' must be a finite number of seconds or null, got nan"
    )


@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize("flag", ["--seed=abc", "--max_failure_fraction=x", "--keep_versions=two"])
def test_a_bad_flag_value_is_one_line_naming_the_flag(job, flag, valid, tmp_path, capsys):
    err = refused(job, capsys, f"--output_dir={tmp_path}/out", flag, *VALID_FLAGS[job](valid, tmp_path))
    name = flag.split("=")[0]
    assert name in err and "usage:" not in err, err


@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize(
    "flag", ["--max_failure_fraction=1.5", "--max_failure_fraction=nan", "--keep_versions=0", "--lock_lease_seconds=-1"]
)
def test_a_meaningless_shared_flag_value_is_refused_before_anything_runs(job, flag, valid, tmp_path, capsys):
    err = refused(job, capsys, f"--output_dir={tmp_path}/out", flag, *VALID_FLAGS[job](valid, tmp_path))
    assert flag.split("=")[0] in err, err
    assert not (tmp_path / "out" / "versions").exists()


# ---------------------------------------------------------------------------- 11. follower metrics of the wrong type
def test_follower_lines_whose_metrics_cannot_be_compared_are_dead_letters_and_counted(inputs, tmp_path):
    from vlnkit.fixtures.rxr import read_jsonl, write_jsonl_gz, write_rxr_fixtures

    records = json.loads(Path(inputs["dataset"]).read_text())
    files = write_rxr_fixtures(records, "val", inputs["connectivity_dir"], str(tmp_path / "rxr"), pose_traces=False)
    followers = read_jsonl(files.follower)
    bad = ["not an object", [0.5, 1.0], None, True, {"ne": {"value": 1.0}}]
    for follower, metrics in zip(followers, bad):
        follower["metrics"] = metrics
    write_jsonl_gz(files.follower, followers)
    out = tmp_path / "out"
    summary = run(
        "score",
        f"--output_dir={out}",
        f"--predictions=human={files.follower}",
        f"--dataset={files.guide}",
        f"--connectivity_dir={inputs['connectivity_dir']}",
        "--bootstrap=0",
    )
    dead = [json.loads(line) for line in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    refused = {f"#{n} (instruction_id={f['instruction_id']})" for n, f in enumerate(followers[: len(bad)])}
    assert {d["record"] for d in dead} == refused and len(dead) == len(bad), dead
    assert {(d["stage"], d["reason"]) for d in dead} == {("compare", "'metrics' must be an object of finite numbers")}
    assert summary["dead_letters"] == len(bad) and summary["dead_letters_by_stage"] == {"compare": len(bad)}
    assert summary["count"] == summary["predictions_read"] == len(followers)  # their paths are scored all the same
    comparison = json.loads((out / "human_metrics_comparison.json").read_text())["human"]
    assert comparison["lines"] == len(followers) == comparison["compared"] + comparison["dead_lettered"]
    assert comparison["dead_lettered"] == len(bad) and comparison["not_scored"] == 0
    assert comparison["metrics"]["ndtw"]["count"] == len(followers) - len(bad)


# ---------------------------------------------------------------------------- 14. records wrapped in an object
@pytest.mark.parametrize("job", JOBS)
def test_a_json_object_wrapping_records_is_refused_naming_its_key_in_every_job(job, inputs, tmp_path, capsys, request):
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"data": json.loads(Path(inputs["dataset"]).read_text())}))
    flags = JOB_FLAGS[job](inputs, str(wrapped))
    if job == "score_probes":  # its --probes is Parquet: the wrapped file is the agent's
        flags = [f"--probes={request.getfixturevalue('valid')['probes']}", f"--predictions={wrapped}"]
    err = refused(job, capsys, f"--output_dir={tmp_path}/out", *flags)
    assert f"{wrapped} is one JSON object whose top-level key 'data' holds a list of R2R records" in err, err
    assert f"{job} reads --" in err and "positions" not in err, err
