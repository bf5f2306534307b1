"""Launch-side refusals on the real DataflowRunner options path, with nothing sent anywhere: a classic template,
and a launch without Google credentials, each end in one line (exit 2) before anything is listed or staged."""

from __future__ import annotations

import importlib
import json
import os
import socket
import subprocess
import sys
import time

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.cli import JOBS
from pipelines.launch_checks import (
    FLEX_TEMPLATE_LAUNCH,
    needs_google,
    refuse_classic_template,
    refuse_without_credentials,
)
from pipelines.verdict import JobError
from tests.conftest import ROOT

DATAFLOW = [
    "--runner=DataflowRunner",
    "--project=p",
    "--region=us-central1",
    "--temp_location=gs://vln/tmp",
    "--staging_location=gs://vln/staging",
]
LOOPBACK = ("127.0.0.1", "::1", "localhost")


@pytest.fixture
def no_network(monkeypatch):
    """Every connection this process tries, refused unless it is to the loopback; the ones tried are listed."""
    tried = []
    connect = socket.socket.connect

    def guarded(self, address):
        if isinstance(address, tuple) and address[0] not in LOOPBACK:
            tried.append(address)
            raise OSError(f"no network in this test: {address}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    return tried


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    """Google's auth chain finds nothing, without probing a metadata server: no key file, an empty gcloud
    configuration folder, the metadata server check off and its address a dead loopback port."""
    from google.auth.compute_engine import _metadata

    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST", FLEX_TEMPLATE_LAUNCH):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "gcloud"
    config.mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(config))
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)  # read once, when google.auth is first imported
    return config


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("job", JOBS)
def test_a_classic_template_is_refused_in_one_line_before_anything_is_touched(
    job, tmp_path, capsys, no_network, no_credentials
):
    out = tmp_path / "out"
    main = importlib.import_module(f"pipelines.{job}").main
    with pytest.raises(SystemExit) as exc:
        main([*DATAFLOW, "--template_location=gs://vln/templates/t.json", f"--output_dir={out}"])
    assert exc.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"error: {job}: --template_location: classic Dataflow templates are not supported")
    assert "Flex Template" in line
    assert not out.exists() and no_network == []


def test_the_flex_template_launchers_own_template_location_is_taken(monkeypatch):
    options = PipelineOptions([*DATAFLOW, "--template_location=gs://vln/staging/template_launches/1/job_object"])
    monkeypatch.delenv(FLEX_TEMPLATE_LAUNCH, raising=False)
    with pytest.raises(JobError, match="Flex Template"):
        refuse_classic_template(options)
    monkeypatch.setenv(FLEX_TEMPLATE_LAUNCH, "1")
    refuse_classic_template(options)


def test_a_launch_without_credentials_is_refused_in_one_line(tmp_path, capsys, no_network, no_credentials):
    from pipelines import build_r4r

    started = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        build_r4r.main(
            [*DATAFLOW, "--dataset=gs://vln/data/R2R_val_seen.json", "--connectivity_dir=gs://vln/data/connectivity"]
            + ["--output_dir=gs://vln/out/r4r"]
        )
    seconds = time.perf_counter() - started
    assert exc.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("error: build_r4r: no Google credentials found, and this run needs them for the Dataflow ")
    assert "Cloud Storage (gs://vln/out/r4r)" in line and "gcloud auth application-default login" in line
    assert seconds < 5 and no_network == []  # Beam alone retries the search for about 25 s


def test_credentials_found_let_the_launch_go_on(tmp_path, no_network, no_credentials):
    """An Application Default Credentials file (a user's, as `gcloud auth application-default login` writes it)
    is found without a request: the check passes and sends nothing."""
    adc = {"type": "authorized_user", "client_id": "id", "client_secret": "secret", "refresh_token": "token"}
    (no_credentials / "application_default_credentials.json").write_text(json.dumps(adc))
    refuse_without_credentials(PipelineOptions(DATAFLOW), "gs://vln/out")
    assert no_network == []


@pytest.mark.parametrize(
    "flags, output_dir, emulator, wanted",
    [
        ([], "output/score", None, []),
        ([], "gs://vln/out", None, ["Cloud Storage (gs://vln/out)"]),
        ([], "gs://vln/out", "http://127.0.0.1:9023", []),  # tests/cloud: the storage emulator, anonymously
        (DATAFLOW, "gs://vln/out", None, ["the Dataflow service", "Cloud Storage (gs://vln/out)"]),
        (DATAFLOW, "/tmp/out", None, ["the Dataflow service", "Cloud Storage (gs://vln/tmp)"]),
        (DATAFLOW, "gs://vln/out", "http://127.0.0.1:9023", ["the Dataflow service"]),
        (
            ["--runner=apache_beam.runners.dataflow.dataflow_runner.DataflowRunner"],
            "/o",
            None,
            ["the Dataflow service"],
        ),
        ([*DATAFLOW, "--no_auth"], "gs://vln/out", "http://127.0.0.1:9023", []),
        # A Dataflow stand-in on the loopback, in either form Beam accepts, with the storage emulator.
        ([*DATAFLOW, "--dataflow_endpoint=http://localhost:8080"], "gs://vln/out", "http://127.0.0.1:9023", []),
        ([*DATAFLOW, "--dataflow_endpoint=https://127.0.0.1"], "gs://vln/out", "http://127.0.0.1:9023", []),
        (
            [*DATAFLOW, "--dataflow_endpoint=https://dataflow.googleapis.com"],
            "/o",
            "http://h:1",
            ["the Dataflow service"],
        ),
    ],
)
def test_what_a_launch_asks_google_for(monkeypatch, flags, output_dir, emulator, wanted):
    if emulator:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", emulator)
    else:
        monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    assert needs_google(PipelineOptions(flags), output_dir) == wanted


# A job's command as a user runs it, each connection it tries refused unless to the loopback (and listed).
GUARDED = """
import runpy, socket, sys
connect = socket.socket.connect
def guarded(self, address):
    if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
        print(f"network: {address}", file=sys.stderr)
        raise OSError("no network in this test")
    return connect(self, address)
socket.socket.connect = guarded
runpy.run_module(sys.argv[1], run_name="__main__", alter_sys=True)
"""


def test_the_command_without_credentials_ends_in_one_line_within_seconds(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST")}
    (tmp_path / "gcloud").mkdir()
    env.update(
        PYTHONPATH=str(ROOT),
        CLOUDSDK_CONFIG=str(tmp_path / "gcloud"),
        NO_GCE_CHECK="true",
        GCE_METADATA_HOST="127.0.0.1:9",
        GCE_METADATA_IP="127.0.0.1:9",
    )
    argv = [*DATAFLOW, "--dataset=gs://vln/data/R2R_val_seen.json", "--output_dir=gs://vln/out/r4r"]
    # What importing the job costs on this machine now (seconds when quiet, many more under load), so that
    # the bound below is on what the command does after its imports.
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import pipelines.build_r4r"], cwd=tmp_path, env=env, check=True)
    imports = time.perf_counter() - started
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", GUARDED, "pipelines.build_r4r", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.perf_counter() - started
    assert proc.returncode == 2, proc.stderr
    assert _one_line(proc.stderr).startswith("error: build_r4r: no Google credentials found")
    # About 2 s here, nearly all of it the imports; Beam's own credential search retries for ~25 s.
    assert seconds - imports < 10, f"{seconds:.1f} s, of which {imports:.1f} s importing the job"


@pytest.mark.parametrize("no_auth", [True, False])
def test_no_auth_means_no_credential_search_for_cloud_storage_either(monkeypatch, no_auth):
    """A lock or a listing on gs:// made before the pipeline builds its Cloud Storage client under the run's
    options; with --no_auth, anonymously, without Beam's credential search (which it runs for Cloud Storage
    whatever the options say)."""
    from apache_beam.internal.gcp import auth
    from apache_beam.io.filesystems import FileSystems

    from pipelines.launch_checks import without_credentials
    from vlnkit.io import fileio

    searched = []
    monkeypatch.setattr(auth._Credentials, "_get_service_credentials", staticmethod(lambda o: searched.append(o)))
    monkeypatch.setattr(auth._Credentials, "_credentials_init", False)  # as a fresh process starts
    monkeypatch.setattr(auth._Credentials, "_credentials", None)
    monkeypatch.setattr(FileSystems, "_pipeline_options", None)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")
    options = PipelineOptions([*DATAFLOW, *(["--no_auth"] if no_auth else [])])
    without_credentials(options)
    fileio.use_options(options)  # what `Run` does first
    client = FileSystems.get_filesystem("gs://vln/out")._gcsIO().client  # what a lock or a listing uses
    assert len(searched) == (0 if no_auth else 1)
    assert not searched or searched[0] is options  # the run's options, never none
    assert not no_auth or type(client._credentials).__name__ == "AnonymousCredentials"
