"""Every job gives identical rows on every runner, and behaves like production data infrastructure:
reruns are identical, --skip_if_unchanged skips, a killed run never looks complete and a rerun converges.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.cli import JOBS as ALL_JOBS
from tests.conftest import ROOT
from tests.session_memo import key_of, memo_folder

RUNNERS = {
    "in_process": ["--runner=DirectRunner"],
    "multi_process": ["--runner=DirectRunner", "--direct_running_mode=multi_processing", "--direct_num_workers=2"],
    "portable_loopback": ["--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=LOOPBACK"],
}


def subset(src: Path, dst: Path, n: int = 60) -> str:
    """The first n records of a real file: small real data for jobs compared across three runners."""
    if not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(json.dumps(json.loads(src.read_text())[:n]))
    return str(dst)


def uniform_agent(probes_dir: Path, dst: Path) -> str:
    """Agent outputs putting equal mass on every candidate of every probe episode."""
    table = pq.read_table(sorted(probes_dir.glob("probes-*.parquet")), columns=["episode_id", "candidates"])
    with dst.open("w") as f:
        for row in table.to_pylist():
            p = 1.0 / len(row["candidates"])
            f.write(json.dumps({"episode_id": row["episode_id"], "probs": {c: p for c in row["candidates"]}}) + "\n")
    return str(dst)


def job_flags(job: str, data: Path, tmp: Path) -> tuple[list[str], list[str]]:
    """(flags for a small real-data run of `job`, output file prefixes whose rows are compared)."""
    conn = f"--connectivity_dir={data}/connectivity"
    small = tmp.parent / "inputs"
    r2r = subset(data / "r2r" / "R2R_val_seen.json", small / "R2R_val_seen_60.json")
    if job == "build_r4r":
        return [f"--r2r_path={data}/r2r/R2R_val_seen.json", conn, f"--json_output={tmp}/R4R.json"], ["paths"]
    if job == "perturb":
        methods = "--methods=direction_swap,random_walk,path_reversal,viewpoint_swap"
        return [f"--dataset={r2r}", conn, "--spacy_model=blank:en", methods], ["perturbations"]
    if job == "build_compat":
        methods = "--methods=direction_swap,random_walk,path_reversal,viewpoint_swap"
        return [f"--dataset={r2r}", conn, "--spacy_model=blank:en", methods], ["compat"]
    if job == "paraphrase":
        return [f"--dataset={r2r}", "--languages=de,fr,zh", "--translator=offline"], ["paraphrases"]
    if job == "score":  # two agents with the bootstrap on: intervals and comparisons must match too
        agents = []
        for name in ("random", "shortest"):
            preds = small / f"{name}_predictions_60.json"
            if not preds.exists():
                ids = {r["path_id"] for r in json.loads(Path(r2r).read_text())}
                agent = data / "agent_outputs" / "rszia+rpl2024-final-group9" / f"val_seen_{name}_agent.json"
                kept = [p for p in json.loads(agent.read_text()) if int(p["instr_id"].split("_")[0]) in ids]
                preds.write_text(json.dumps(kept))
            agents.append(f"--predictions={name}={preds}")
        return [*agents, f"--dataset={r2r}", conn, "--bootstrap=200"], ["episodes"]
    if job == "random_baseline":
        steps = f"--steps_from={data}/r2r/R2R_train.json"
        return [f"--dataset={r2r}", steps, conn, "--num_trajectories=20000", "--write_episodes"], ["episodes"]
    if job == "score_instructions":  # the records' own instructions scored as a system's against themselves
        return [f"--predictions=r2r={r2r}", f"--references={r2r}", "--bootstrap=200"], ["instructions"]
    if (
        job == "build_crafty"
    ):  # the paths of the three val_seen scans with fewest (tests/pipelines/test_build_crafty.py)
        paths = small / "R2R_val_seen_3_scans.json"
        if not paths.exists():
            scans = ("SN83YJsR3w2", "s8pcmisQ38h", "17DRP5sb8fy")
            records = json.loads((data / "r2r" / "R2R_val_seen.json").read_text())
            paths.write_text(json.dumps([r for r in records if r["scan"] in scans]))
        objects = [f"--objects_dir={data}/crafty", f"--bbox_dir={data}/reverie/v1/BBox"]
        return [f"--dataset={paths}", conn, *objects], ["instructions"]
    fgr2r = subset(data / "fgr2r" / "FGR2R_val_seen.json", small / "FGR2R_val_seen_60.json")
    if job == "build_probes":
        return [f"--alignments={fgr2r}", conn], ["probes"]
    if job == "score_probes":
        probes = small / "probes"
        if not (probes / "_SUCCESS").exists():
            run_job("build_probes", [f"--alignments={fgr2r}", conn, f"--output_dir={probes}"])
        agent = uniform_agent(probes, small / "uniform_agent.jsonl")
        return [f"--probes={probes}/probes-*.parquet", f"--predictions={agent}"], ["scores"]
    raise KeyError(job)


# Every job but report (its output is figures and a page, compared in tests/pipelines/test_report.py).
JOBS = [job for job in ALL_JOBS if job != "report"]


def rows(out: Path, prefixes: list[str]) -> dict[str, list[str]]:
    """All rows of each output, canonicalized and sorted (row order across shards is the runner's business)."""
    found = {}
    for prefix in prefixes:
        files = sorted(out.glob(f"{prefix}-*-of-*.parquet"))
        assert files, f"no {prefix} shards in {out}"
        table = pq.read_table(files)
        found[prefix] = sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())
    dead = sorted(out.glob("dead_letter-*.jsonl"))
    found["dead_letter"] = sorted(line for f in dead for line in f.read_text().splitlines())
    return found


# How a run was executed (request batching depends on bundle sizes), not what it computed.
OPERATIONAL = {"translation"}


def comparable_summary(work: Path, path: Path) -> str:
    """The summary with run-specific paths neutralized and execution statistics left out."""
    summary = {k: v for k, v in json.loads(path.read_text()).items() if k not in OPERATIONAL}
    text = neutral(json.dumps(summary, sort_keys=True), work)
    return re.sub(r"/versions/[0-9T.Z]+-[0-9a-f]+", "/versions/<run>", text)  # each run's own version folder


def run_result(job: str, runner_flags: list[str], shared_data, work: Path) -> dict[str, list[str]]:
    """Run `job` on `job_flags`' inputs (written beside `work`) with `runner_flags`: its rows and summary, the
    run's folders neutralized (dead letters name input files), so that runs in other folders compare equal."""
    flags, prefixes = job_flags(job, shared_data, work)
    run_job(job, [*runner_flags, *flags, f"--output_dir={work}/out"])
    assert (work / "out" / "_SUCCESS").exists()
    return comparable_result(work, prefixes)


def comparable_result(work: Path, prefixes: list[str]) -> dict[str, list[str]]:
    """A finished run's neutral rows and summary, and the digest of build_r4r's R4R JSON file when it wrote one."""
    found = neutral_rows(work, prefixes)
    found["summary.json"] = [comparable_summary(work, work / "out" / "summary.json")]
    if (work / "R4R.json").exists():
        found["R4R.json"] = [hashlib.sha256((work / "R4R.json").read_bytes()).hexdigest()]
    return found


def neutral_rows(work: Path, prefixes: list[str]) -> dict[str, list[str]]:
    """`rows` of the run in `work` (outputs in `work`/out, inputs beside `work`), its folders neutralized."""
    return {name: sorted(neutral(x, work) for x in values) for name, values in rows(work / "out", prefixes).items()}


def neutral(text: str, work: Path) -> str:
    """`text` with the run's folder and the folder of its inputs (beside it) named alike for every run."""
    return text.replace(str(work), "<work>").replace(str(work.parent), "<inputs>")


def in_process_result(job: str, shared_data, tmp_path_factory) -> dict[str, list[str]]:
    """`run_result` of the in-process DirectRunner, run once per test session (tests.session_memo): the
    reference every other runner's test (here, the worker pool's, the Flink cluster's) must equal."""
    return json.loads((in_process_run(job, shared_data, tmp_path_factory).parent / "result.json").read_text())


def in_process_run(job: str, shared_data, tmp_path_factory) -> Path:
    """The folder of that session-wide in-process run (its outputs in `out/`), for tests that read its
    outputs, such as a report of the score run's: read only, it is every runner's reference."""

    def fill(folder: Path) -> None:
        result = run_result(job, RUNNERS["in_process"], shared_data, folder / "in_process")
        (folder / "result.json").write_text(json.dumps(result))

    return memo_folder(tmp_path_factory, f"in-process-{job}", key_of(job, str(shared_data)), fill) / "in_process"


def run_job(job: str, flags: list[str]) -> dict:
    module = importlib.import_module(f"pipelines.{job}")
    return module.main(flags)


@pytest.mark.real_data
@pytest.mark.parametrize("job", JOBS)
def test_every_runner_gives_identical_rows(job, shared_data, tmp_path, tmp_path_factory):
    reference = in_process_result(job, shared_data, tmp_path_factory)
    assert any(reference.values())
    for name, runner_flags in RUNNERS.items():
        if name != "in_process":
            got = run_result(job, runner_flags, shared_data, tmp_path / name)
            assert got == reference, f"{job}: {name} differs from in-process DirectRunner"


@pytest.mark.real_data
def test_a_direct_runner_run_leaves_nothing_in_the_temporary_directory(shared_data, tmp_path, monkeypatch):
    """--runner=DirectRunner means Beam's Python runner on every machine (pipelines.runners.local_runner):
    Beam's own DirectRunner would first try Prism, which offline leaves empty folders behind on every run
    and online runs the job on another runner. Neither the job's process nor its workers leave anything."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # the workers' temporary directory
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # and this process's
    for name in ("in_process", "multi_process"):
        flags, _ = job_flags("build_r4r", shared_data, tmp_path / name)
        run_job("build_r4r", [*RUNNERS[name], *flags, f"--output_dir={tmp_path / name}/out"])
        assert (tmp_path / name / "out" / "_SUCCESS").exists()
        assert sorted(os.listdir(tmp)) == [], name


@pytest.mark.real_data
def test_rerun_is_identical_and_skip_if_unchanged_skips(shared_data, tmp_path):
    flags, prefixes = job_flags("build_r4r", shared_data, tmp_path)
    out = tmp_path / "out"
    first = run_job("build_r4r", [*flags, f"--output_dir={out}"])
    first_rows = rows(out, prefixes)
    json_bytes = (tmp_path / "R4R.json").read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["fingerprint"] and len(manifest["inputs"]) == 1 + 90  # R2R file and every graph
    # Digests are computed while the pipeline runs (a background thread); they must be the files' own.
    for entry in manifest["inputs"]:
        with open(entry["path"], "rb") as f:
            assert entry["sha256"] == hashlib.file_digest(f, "sha256").hexdigest(), entry["path"]

    second = run_job("build_r4r", [*flags, f"--output_dir={out}"])
    assert rows(out, prefixes) == first_rows and (tmp_path / "R4R.json").read_bytes() == json_bytes
    assert second["dataset"] == first["dataset"]

    skipped = run_job("build_r4r", [*flags, f"--output_dir={out}", "--skip_if_unchanged"])
    assert skipped.get("skipped") is True
    # A different option is a different run.
    changed = run_job("build_r4r", [*flags, f"--output_dir={out}", "--skip_if_unchanged", "--distance_threshold=2.0"])
    assert not changed.get("skipped") and changed["dataset"]["paths"] < first["dataset"]["paths"]
    # A missing output makes the previous run incomplete.
    again = run_job("build_r4r", [*flags, f"--output_dir={out}", "--skip_if_unchanged", "--distance_threshold=2.0"])
    assert again.get("skipped") is True
    (tmp_path / "R4R.json").unlink()
    again = run_job("build_r4r", [*flags, f"--output_dir={out}", "--skip_if_unchanged", "--distance_threshold=2.0"])
    assert not again.get("skipped") and (tmp_path / "R4R.json").exists()


def _temporaries(out, json_output) -> list[str]:
    """Beam's and the JSON writer's temporary folders, in the run's own version folder (or, for runs of
    the older layout, in the output folder and beside the JSON file)."""
    found = [p.name for p in [*out.glob("beam-temp-*"), *out.glob("versions/*/beam-temp-*")]] if out.exists() else []
    found += [p.name for p in out.glob("versions/*/*.fragments-*")] if out.exists() else []
    return found + [p.name for p in json_output.parent.glob(json_output.name + ".fragments-*")]


@pytest.mark.real_data
def test_killed_run_never_looks_complete_and_a_rerun_converges(shared_data, tmp_path):
    out, r4r = tmp_path / "out", tmp_path / "R4R.json"
    flags = [
        f"--r2r_path={shared_data}/r2r/R2R_val_unseen.json",
        f"--connectivity_dir={shared_data}/connectivity",
        f"--output_dir={out}",
        f"--json_output={r4r}",
    ]
    clean = tmp_path / "clean"
    run_job("build_r4r", [*flags[:2], f"--output_dir={clean}", f"--json_output={tmp_path / 'clean.json'}"])
    # A complete earlier run is in place; a new run is killed part-way through: while it is writing, that is
    # while its temporary folders exist (found by polling, not after a fixed delay, which a fast machine
    # outruns).
    run_job("build_r4r", flags)
    assert (out / "_SUCCESS").exists() and not _temporaries(out, r4r)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines.build_r4r", "--runner=DirectRunner", *flags],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while not _temporaries(out, r4r) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before its temporary folders were seen"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (out / "_SUCCESS").exists()  # the published version is untouched (docs/failure_semantics.md)
    assert rows(out, ["paths"]) == rows(clean, ["paths"])
    assert _temporaries(out, r4r)  # killed mid-write: nothing could clean up
    run_job("build_r4r", flags)
    assert (out / "_SUCCESS").exists() and not _temporaries(out, r4r)
    assert rows(out, ["paths"]) == rows(clean, ["paths"])
    assert r4r.read_bytes() == (tmp_path / "clean.json").read_bytes()


def test_wheel_installs_into_an_empty_directory_and_runs_outside_the_repository(tmp_path):
    # Build from a clean copy: setuptools keeps a build/ folder in the source tree, whose stale files
    # would otherwise end up in the wheel.
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            "build", "output", ".git", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache"
        ),
    )
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(wheels)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("vlnkit-*.whl")
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    for package in ("vlnkit", "transforms", "pipelines", "configs"):
        assert (target / package / "__init__.py").exists(), package
    assert (target / "configs" / "r4r_train.yaml").exists()
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines.build_r4r", "--runner=DirectRunner", "--synthetic_paths_per_scan=10"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (workdir / "output" / "build_r4r" / "_SUCCESS").exists()
    # The job's code came from the installed wheel, not from the repository checkout.
    check = subprocess.run(
        [sys.executable, "-c", "import pipelines.build_r4r as m; print(m.__file__)"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert check.stdout.strip().startswith(str(target))


@pytest.mark.real_data
@pytest.mark.parametrize("job", ["build_probes", "score_probes"])
def test_skip_if_unchanged_compares_the_settings_of_self_parsing_jobs(job, shared_data, tmp_path):
    flags, _ = job_flags(job, shared_data, tmp_path / "work")
    out = f"--output_dir={tmp_path}/out"
    first = run_job(job, [*flags, out])
    assert not first.get("skipped")
    assert run_job(job, [*flags, out, "--skip_if_unchanged"]).get("skipped") is True
    changed = run_job(job, [*flags, out, "--skip_if_unchanged", "--seed=7"])
    assert not changed.get("skipped")


def test_the_in_process_runner_ends_a_long_bundle_without_waiting_out_beams_sampling_sleep():
    """Beam's state sampler sleeps up to 200 ms between samples and a bundle's end waits for the sleep:
    the runner a job builds makes that at most SAMPLING_PERIOD_MS."""
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.worker import statesampler
    from apache_beam.utils.counters import CounterFactory

    from pipelines.runners import SAMPLING_PERIOD_MS, local_runner

    local_runner(PipelineOptions(["--runner=DirectRunner"]))
    sampler = statesampler.StateSampler("step", CounterFactory())  # as Beam's bundle processor makes it
    assert sampler.sampling_period_ms == SAMPLING_PERIOD_MS
    waits = []
    for _ in range(4):  # Beam's own period: each wait uniform in 0-200 ms, all four below 80 ms 2.6% of runs
        sampler = statesampler.StateSampler("step", CounterFactory())
        sampler.start()
        time.sleep(1.2)  # a bundle long enough for Beam's own period to reach 200 ms
        began = time.perf_counter()
        sampler.stop()
        waits.append(time.perf_counter() - began)
    assert max(waits) < 0.08, waits
