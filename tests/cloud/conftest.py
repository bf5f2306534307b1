"""A local Cloud Storage emulator for the cloud tests: every job reads from and writes to `gs://`.

The emulator (PyPI `gcp-storage-emulator`, in memory) runs as a subprocess on a free loopback port;
`STORAGE_EMULATOR_HOST` points google-cloud-storage, and so Beam's GCS filesystem, at it.

Credentials: Beam's GcsIO first asks the Google auth chain for credentials and retries with
backoff when there are none (about 25 s per process), then connects anonymously. The emulator
needs none, so the fixture tells Beam's credential cache that the lookup already happened and found
nothing: GcsIO then builds an anonymous client at once. `NO_GCE_CHECK=true` keeps google-auth from
probing a metadata server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

import pytest

BUCKET = "vlnkit-test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen, seconds: float = 30.0) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the storage emulator exited with code {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing answered at {url} within {seconds} s")


@dataclass
class Bucket:
    """The emulated bucket: a name, a client that lists it independently of Beam, and helpers."""

    name: str
    host: str

    def url(self, *parts: str) -> str:
        return "/".join([f"gs://{self.name}", *[p.strip("/") for p in parts]])

    def client(self):
        from google.cloud import storage

        return storage.Client.create_anonymous_client()

    def list(self, prefix: str) -> list[str]:
        """Object names under `prefix` (relative to it; "" for the whole bucket), sorted."""
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        names = [b.name for b in self.client().list_blobs(self.name, prefix=prefix)]
        return sorted(n[len(prefix) :] for n in names)

    def upload(self, local_path: str, name: str) -> str:
        self.client().bucket(self.name).blob(name).upload_from_filename(local_path)
        return self.url(name)

    def put(self, name: str, data: bytes) -> str:
        self.client().bucket(self.name).blob(name).upload_from_string(data)
        return self.url(name)

    def get(self, name: str) -> bytes:
        return self.client().bucket(self.name).blob(name).download_as_bytes()


@pytest.fixture(scope="session")
def gcs_emulator():
    """Start the emulator, point Beam at it anonymously, yield the bucket; stop it at the end."""
    import importlib.util

    if importlib.util.find_spec("gcp_storage_emulator") is None:
        # A test dependency (setup.py extra "test"): missing means a broken environment, not a skip.
        pytest.fail("gcp-storage-emulator is not installed: pip install -e '.[test]'")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gcp_storage_emulator",
            "start",
            "--host=127.0.0.1",
            f"--port={port}",
            "--in-memory",
            f"--default-bucket={BUCKET}",
            "-q",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    host = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in ("STORAGE_EMULATOR_HOST", "NO_GCE_CHECK")}
    from apache_beam.internal.gcp import auth

    saved_credentials = (auth._Credentials._credentials_init, auth._Credentials._credentials)
    try:
        wait_for_http(host + "/", proc)
        os.environ["STORAGE_EMULATOR_HOST"] = host
        os.environ["NO_GCE_CHECK"] = "true"
        auth._Credentials._credentials_init = True
        auth._Credentials._credentials = None
        yield Bucket(BUCKET, host)
    finally:
        auth._Credentials._credentials_init, auth._Credentials._credentials = saved_credentials
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def dataflow_standin(gcs_emulator, tmp_path_factory):
    """The Dataflow stand-in (tests/dataflow_standin) on https://127.0.0.1, its jobs reading and writing the bucket.

    One per test session: the workers' environment it builds from the first job's staged files is
    cached on disk and shared by every later job (and session)."""
    from tests.dataflow_standin import DataflowStandin

    with DataflowStandin(tmp_path_factory.mktemp("dataflow")) as standin:
        yield standin
