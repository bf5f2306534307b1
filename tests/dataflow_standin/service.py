"""The stand-in service: Dataflow's v1beta3 gRPC API over TLS, and each job run from its staged files only.

The API part answers the calls Beam's `DataflowRunner` makes (through `google-cloud-dataflow-client`,
gRPC when the endpoint is not `localhost`): `JobsV1Beta3` CreateJob, GetJob, UpdateJob (cancel),
ListJobs; `MessagesV1Beta3` ListJobMessages; `MetricsV1Beta3` GetJobMetrics; and
`FlexTemplatesService` LaunchFlexTemplate. Requests and answers are the client library's own
messages. It serves TLS with a certificate made for the session; a launcher trusts it through gRPC's
`GRPC_DEFAULT_SSL_ROOTS_FILE_PATH` (see `DataflowStandin.launcher_env`).

A created job runs as the service runs it, from what the launcher staged in the bucket and nothing
else of the launcher's:
1. the staged `pipeline.pb` (the options' `pipelineUrl`) and the worker pool's staged packages are
   read from the bucket;
2. the workers' Python environment is built from them (`environment`: the launcher's Beam version,
   read from the request's user agent, then the staged package, requirements and extra packages);
3. the pipeline's environments become EXTERNAL ones on a Beam worker pool started from that
   environment, whose `boot` starts each SDK worker; the installed package folder is read-only to the
   workers (a read-only mount in a mount namespace of the pool's own when the tests run as root);
4. the pipeline runs on Beam's portable job service (`local_job_service_main`, a subprocess), and its
   state and error messages become the job's state and job messages, as the service reports them
   (`JOB_STATE_RUNNING`, `JOB_STATE_DONE`, `JOB_STATE_FAILED` with a `JOB_MESSAGE_ERROR` carrying the
   worker's error, `JOB_STATE_CANCELLED`).

Nothing leaves the loopback: the launcher, the job service and the workers get `NO_GCE_CHECK=true`,
`GCE_METADATA_HOST`/`GCE_METADATA_IP` on a dead loopback port, and an HTTP(S) proxy on a dead port
for every host but the loopback, so any other request fails at once instead of going out. They find
credentials as on Google Cloud (`GOOGLE_APPLICATION_CREDENTIALS`: a service account key made for the
session, whose `token_uri` is the stand-in's own token endpoint), so the launch takes Beam's and
google-auth's ordinary credential path, without its 25 s of retries and without Google's token server.

The service listens on port 443, as Beam requires of a gRPC endpoint (`--dataflow_endpoint` takes no
port), on the first loopback address from 127.0.0.1 that is free (parallel test processes each get
one; SO_REUSEPORT is off, so a second server cannot silently share an address).
"""

from __future__ import annotations

import datetime
import http.server
import itertools
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.cloud import dataflow_v1beta3 as dataflow
from google.protobuf import json_format

from tests.dataflow_standin import environment
from tests.processes import wait_for_port

BOOT = Path(__file__).with_name("boot.py")
TERMINAL = {
    dataflow.JobState.JOB_STATE_DONE,
    dataflow.JobState.JOB_STATE_FAILED,
    dataflow.JobState.JOB_STATE_CANCELLED,
    dataflow.JobState.JOB_STATE_UPDATED,
    dataflow.JobState.JOB_STATE_DRAINED,
}


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def dead_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    return free_port()


def _certificate(host: str, folder: Path) -> tuple[bytes, bytes, Path]:
    """A self-signed certificate for `host` (an IP address): (key PEM, certificate PEM, its file)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    path = folder / "standin-ca.pem"
    path.write_bytes(cert_pem)
    return key_pem, cert_pem, path


def _service_account(token_port: int) -> dict:
    """A service account key whose tokens come from the stand-in's token endpoint (never Google's)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return {
        "type": "service_account",
        "project_id": "standin-project",
        "private_key_id": "standin",
        "private_key": pem.decode(),
        "client_email": "launcher@standin-project.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": f"http://127.0.0.1:{token_port}/token",
    }


def _gcs_path(location: str) -> tuple[str, str]:
    """(bucket, object) of a staged location: `gs://b/o` or `storage.googleapis.com/b/o`."""
    for prefix in (
        "gs://",
        "https://storage.googleapis.com/",
        "http://storage.googleapis.com/",
        "storage.googleapis.com/",
    ):
        if location.startswith(prefix):
            bucket, _, name = location[len(prefix) :].partition("/")
            return bucket, name
    raise ValueError(f"not a Cloud Storage location: {location}")


def _download(location: str, to: Path) -> None:
    from google.cloud import storage

    bucket, name = _gcs_path(location)
    storage.Client.create_anonymous_client().bucket(bucket).blob(name).download_to_filename(str(to))


def _worker_image(env: dataflow.Environment) -> str:
    """The SDK container image a job's workers run (the Runner v2 way, or the legacy field)."""
    for pool in env.worker_pools:
        for image in pool.sdk_harness_container_images:
            return image.container_image
        if pool.worker_harness_container_image:
            return pool.worker_harness_container_image
    return ""


def _isolation() -> tuple[list[str], dict]:
    """How the worker pool starts so that the installed package folder is read-only to the workers: as root,
    in a mount namespace of its own with a read-only bind mount (root writes anywhere else), or, where no
    namespace may be made (a container without CAP_SYS_ADMIN), as the unprivileged user `nobody`; not as
    root, the folder's files are already the tests' user's, made read-only by `install_staged`'s caller.
    Returns (the command's prefix, Popen's user arguments)."""
    if os.geteuid() != 0:
        return [], {}
    wrap = ["unshare", "--mount", "--propagation", "private"]
    if subprocess.run([*wrap, "true"], capture_output=True).returncode == 0:
        return wrap, {}
    entry = pwd.getpwnam("nobody")
    return [], {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _kill_group(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@dataclass
class JobRun:
    """One job: its Dataflow record, messages, and the processes running it."""

    job: dataflow.Job
    folder: Path
    messages: list[dataflow.JobMessage] = field(default_factory=list)
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    processes: list[subprocess.Popen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    thread: threading.Thread | None = None
    metrics: list[dataflow.MetricUpdate] = field(default_factory=list)
    launcher: subprocess.Popen | None = None  # a Flex Template launch's launcher program

    @property
    def id(self) -> str:
        return self.job.id

    @property
    def state(self) -> dataflow.JobState:
        return self.job.current_state

    def set_state(self, state: dataflow.JobState) -> None:
        with self.lock:
            if self.job.current_state in TERMINAL:
                return
            self.job.current_state = state
            self.job.current_state_time = datetime.datetime.now(datetime.UTC)

    def say(self, text: str, importance=dataflow.JobMessageImportance.JOB_MESSAGE_BASIC) -> None:
        with self.lock:
            self.messages.append(
                dataflow.JobMessage(
                    id=str(len(self.messages) + 1),
                    time=datetime.datetime.now(datetime.UTC),
                    message_text=text,
                    message_importance=importance,
                )
            )

    @property
    def errors(self) -> list[str]:
        return [
            m.message_text
            for m in self.messages
            if m.message_importance == dataflow.JobMessageImportance.JOB_MESSAGE_ERROR
        ]


class DataflowStandin:
    """The service on `https://HOST` (port 443, TLS), HOST the first free loopback address from 127.0.0.1.

    with DataflowStandin(workdir) as service:
        subprocess.run([... "--runner=DataflowRunner", *service.launcher_flags()], env=service.launcher_env())
    """

    def __init__(self, workdir: Path | None = None, port: int = 443):
        # The workers' user (below) must reach the job folders: under the system's temporary folder by default.
        self.workdir = Path(tempfile.mkdtemp(prefix="dataflow-standin-", dir=workdir))
        self.workdir.chmod(0o755)
        self._isolation = _isolation()
        self.port = port
        self.jobs: dict[str, JobRun] = {}
        self.flex_images: dict = {}  # a Flex Template image -> what it runs (flex.FlexImage)
        self.launched: list[subprocess.Popen] = []
        # Called with the JobRun when its workers are up, just before the pipeline starts (tests inject faults).
        self.before_run = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._dead = dead_port()
        self._server: grpc.Server | None = None
        self._tokens: http.server.ThreadingHTTPServer | None = None
        self.host = ""
        self.ca_file: Path | None = None
        self.credentials_file = self.workdir / "credentials.json"

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> DataflowStandin:
        self._tokens = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TokenHandler)
        threading.Thread(target=self._tokens.serve_forever, daemon=True).start()
        self.credentials_file.write_text(json.dumps(_service_account(self._tokens.server_address[1])))
        self.credentials_file.chmod(0o644)
        last = None
        for i in range(1, 10):  # another test process may hold 127.0.0.1:443
            host = f"127.0.0.{i}"
            key, cert, path = _certificate(host, self.workdir)
            server = grpc.server(
                futures.ThreadPoolExecutor(max_workers=16),
                # Without SO_REUSEPORT a second stand-in cannot bind the same address and share its connections.
                options=[
                    ("grpc.so_reuseport", 0),
                    ("grpc.max_receive_message_length", -1),
                    ("grpc.max_send_message_length", -1),
                ],
            )
            self._add_handlers(server)
            try:
                if server.add_secure_port(f"{host}:{self.port}", grpc.ssl_server_credentials([(key, cert)])) == 0:
                    raise RuntimeError(f"cannot bind {host}:{self.port}")
            except RuntimeError as exc:
                last = exc
                continue
            server.start()
            self._server, self.host, self.ca_file = server, host, path
            return self
        raise RuntimeError(f"the Dataflow stand-in found no free loopback address for port {self.port}: {last}")

    def stop(self) -> None:
        for run in list(self.jobs.values()):
            self._cancel(run, "the stand-in stopped")
        for run in list(self.jobs.values()):
            if run.thread is not None:
                run.thread.join(timeout=30)
        for proc in self.launched:
            _kill_group(proc)
        if self._server is not None:
            self._server.stop(grace=None).wait()
        if self._tokens is not None:
            self._tokens.shutdown()
        if not os.environ.get("VLNKIT_DATAFLOW_STANDIN_KEEP"):  # set it to keep the jobs' folders and logs

            def writable(fn, path, _):
                os.chmod(path, 0o755)
                fn(path)

            shutil.rmtree(self.workdir, onerror=writable)

    def __enter__(self) -> DataflowStandin:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ----------------------------------------------------------------- for launchers
    @property
    def endpoint(self) -> str:
        return f"https://{self.host}"

    def offline_env(self) -> dict[str, str]:
        """Variables that keep a process on the loopback: no metadata server, no other host."""
        dead = f"127.0.0.1:{self._dead}"
        return {
            "NO_GCE_CHECK": "true",
            "GCE_METADATA_HOST": dead,
            "GCE_METADATA_IP": dead,
            "HTTP_PROXY": f"http://{dead}",
            "HTTPS_PROXY": f"http://{dead}",
            "NO_PROXY": "127.0.0.1,localhost,127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8,127.0.0.9",
            "STORAGE_EMULATOR_HOST": os.environ.get("STORAGE_EMULATOR_HOST", ""),
            # Credentials whose token comes from the stand-in (a worker's would come from its VM's metadata).
            "GOOGLE_APPLICATION_CREDENTIALS": str(self.credentials_file),
        }

    def launcher_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a launching process: offline, trusting the stand-in's certificate."""
        env = {**(os.environ if base is None else base), **self.offline_env()}
        for name in ("http_proxy", "https_proxy", "no_proxy", "CLOUDSDK_CONFIG"):
            env.pop(name, None)
        env["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = str(self.ca_file)
        return env

    def launcher_flags(self, bucket: str) -> list[str]:
        """The flags that send a DataflowRunner job here (after `--config=configs/dataflow.yaml`)."""
        return [
            f"--dataflow_endpoint={self.endpoint}",
            "--project=standin-project",
            "--region=us-central1",
            f"--temp_location=gs://{bucket}/dataflow/tmp",
            f"--staging_location=gs://{bucket}/dataflow/staging",
        ]

    # ----------------------------------------------------------------- for tests
    def wait(self, job_id: str, states=TERMINAL, timeout: float = 600) -> JobRun:
        deadline = time.time() + timeout
        run = self.jobs[job_id]
        while run.state not in states:
            if time.time() > deadline:
                raise TimeoutError(f"job {job_id} still {run.state.name} after {timeout} s")
            time.sleep(0.2)
        if run.state in TERMINAL and run.thread is not None:
            run.thread.join(timeout=60)
        return run

    def wait_for_job(self, count: int = 1, timeout: float = 120) -> JobRun:
        """The `count`-th job created (1 = the first), once it exists."""
        deadline = time.time() + timeout
        while len(self.jobs) < count:
            if time.time() > deadline:
                raise TimeoutError(f"no job {count} created within {timeout} s")
            time.sleep(0.1)
        return list(self.jobs.values())[count - 1]

    def cancel(self, job_id: str) -> None:
        self._cancel(self.jobs[job_id], "cancelled by the test")

    # ----------------------------------------------------------------- API
    def _add_handlers(self, server: grpc.Server) -> None:
        def unary(fn, request, response):
            return grpc.unary_unary_rpc_method_handler(
                fn, request_deserializer=request.deserialize, response_serializer=response.serialize
            )

        services = {
            "google.dataflow.v1beta3.JobsV1Beta3": {
                "CreateJob": unary(self._create_job, dataflow.CreateJobRequest, dataflow.Job),
                "GetJob": unary(self._get_job, dataflow.GetJobRequest, dataflow.Job),
                "UpdateJob": unary(self._update_job, dataflow.UpdateJobRequest, dataflow.Job),
                "ListJobs": unary(self._list_jobs, dataflow.ListJobsRequest, dataflow.ListJobsResponse),
            },
            "google.dataflow.v1beta3.MessagesV1Beta3": {
                "ListJobMessages": unary(
                    self._list_messages, dataflow.ListJobMessagesRequest, dataflow.ListJobMessagesResponse
                ),
            },
            "google.dataflow.v1beta3.MetricsV1Beta3": {
                "GetJobMetrics": unary(self._get_metrics, dataflow.GetJobMetricsRequest, dataflow.JobMetrics),
            },
            "google.dataflow.v1beta3.FlexTemplatesService": {
                "LaunchFlexTemplate": unary(
                    self._launch_flex_template, dataflow.LaunchFlexTemplateRequest, dataflow.LaunchFlexTemplateResponse
                ),
            },
        }
        server.add_generic_rpc_handlers(
            tuple(grpc.method_handlers_generic_handler(name, methods) for name, methods in services.items())
        )

    def _find(self, job_id: str, context) -> JobRun:
        run = self.jobs.get(job_id)
        if run is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"(job {job_id}) not found")
        return run

    def new_job(self, job: dataflow.Job) -> JobRun:
        """Register `job` (queued, with an id and a folder); `start_job` runs it."""
        with self._lock:
            number = next(self._ids)
            job.id = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d_%H_%M_%S}-{number}"
        job.current_state = dataflow.JobState.JOB_STATE_QUEUED
        job.create_time = job.current_state_time = datetime.datetime.now(datetime.UTC)
        folder = self.workdir / f"job-{number}"
        for sub in ("logs", "semi", "home"):
            (folder / sub).mkdir(parents=True)
        run = JobRun(job=job, folder=folder)
        self.jobs[job.id] = run
        return run

    def start_job(self, run: JobRun) -> None:
        run.say(f"Staged job {run.job.name} ({run.id}) accepted")
        run.thread = threading.Thread(target=self._run, args=(run,), name=f"dataflow-{run.id}", daemon=True)
        run.thread.start()

    def _create_job(self, request: dataflow.CreateJobRequest, context) -> dataflow.Job:
        job = dataflow.Job(request.job)
        job.project_id = request.project_id
        job.location = request.location
        run = self.new_job(job)
        self.start_job(run)
        return self.public(run)

    @staticmethod
    def exists(location: str) -> bool:
        from google.cloud import storage

        bucket, name = _gcs_path(location)
        return storage.Client.create_anonymous_client().bucket(bucket).blob(name).exists()

    @staticmethod
    def read(location: str) -> str:
        from google.cloud import storage

        bucket, name = _gcs_path(location)
        return storage.Client.create_anonymous_client().bucket(bucket).blob(name).download_as_text()

    def public(self, run: JobRun) -> dataflow.Job:
        """What the API shows of a job (GetJob's default view: no steps, no environment)."""
        with run.lock:
            return dataflow.Job(
                id=run.job.id,
                name=run.job.name,
                project_id=run.job.project_id,
                location=run.job.location,
                type_=run.job.type_,
                current_state=run.job.current_state,
                current_state_time=run.job.current_state_time,
                create_time=run.job.create_time,
                client_request_id=run.job.client_request_id,
            )

    def _get_job(self, request: dataflow.GetJobRequest, context) -> dataflow.Job:
        return self.public(self._find(request.job_id, context))

    def _update_job(self, request: dataflow.UpdateJobRequest, context) -> dataflow.Job:
        run = self._find(request.job_id, context)
        if request.job.requested_state == dataflow.JobState.JOB_STATE_CANCELLED:
            self._cancel(run, "cancel requested")
        elif request.job.requested_state:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"requested state {request.job.requested_state.name}")
        return self.public(run)

    def _list_jobs(self, request: dataflow.ListJobsRequest, context) -> dataflow.ListJobsResponse:
        return dataflow.ListJobsResponse(jobs=[self.public(r) for r in self.jobs.values()])

    def _list_messages(self, request: dataflow.ListJobMessagesRequest, context) -> dataflow.ListJobMessagesResponse:
        run = self._find(request.job_id, context)
        start = request.start_time if "start_time" in request else None
        with run.lock:
            messages = [m for m in run.messages if start is None or m.time >= start]
        return dataflow.ListJobMessagesResponse(job_messages=messages)

    def _get_metrics(self, request: dataflow.GetJobMetricsRequest, context) -> dataflow.JobMetrics:
        run = self._find(request.job_id, context)
        with run.lock:
            return dataflow.JobMetrics(metrics=list(run.metrics))

    def _launch_flex_template(self, request: dataflow.LaunchFlexTemplateRequest, context):
        from tests.dataflow_standin.flex import launch

        return launch(self, request, context)

    # ----------------------------------------------------------------- running a job
    def _cancel(self, run: JobRun, why: str) -> None:
        if run.state in TERMINAL:
            return
        run.cancel_requested.set()
        run.set_state(dataflow.JobState.JOB_STATE_CANCELLING)
        with run.lock:
            processes = list(run.processes)
        for proc in processes:  # the workers stop at once, as a cancelled job's VMs do
            _kill_group(proc)
        run.say(f"Cancelling job {run.id}: {why}")

    def _spawn(self, run: JobRun, argv: list[str], log: str, **kwargs) -> subprocess.Popen:
        with run.lock:
            if run.cancel_requested.is_set():
                raise _Cancelled()
            out = open(run.folder / "logs" / log, "ab")  # noqa: SIM115 -- kept by the child
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
            out.close()
            run.processes.append(proc)
        return proc

    def _run(self, run: JobRun) -> None:
        try:
            self._execute(run)
        except _Cancelled:
            pass
        except Exception as exc:  # the service's own failure to run the job: the job fails with it
            if not run.cancel_requested.is_set():
                run.say(f"Workflow failed. Causes: {exc}", dataflow.JobMessageImportance.JOB_MESSAGE_ERROR)
                run.set_state(dataflow.JobState.JOB_STATE_FAILED)
        finally:
            with run.lock:
                processes = list(run.processes)
            for proc in processes:
                _kill_group(proc)
            if run.cancel_requested.is_set():
                run.say(f"Job {run.id} cancelled")
                run.set_state(dataflow.JobState.JOB_STATE_CANCELLED)

    def _execute(self, run: JobRun) -> None:
        env = run.job.environment
        options = json_format.MessageToDict(dataflow.Environment.pb(env).sdk_pipeline_options)["options"]
        staged = run.folder / "semi" / "staged"  # where the boot finds them (the main session among them)
        staged.mkdir()
        pipeline_file = run.folder / "pipeline.pb"
        _download(options["pipelineUrl"], pipeline_file)
        names = []
        for package in env.worker_pools[0].packages if env.worker_pools else []:
            _download(package.location, staged / package.name)
            names.append(package.name)
        run.say(f"Staged files: {', '.join(names) or 'none'}")
        beam_version = env.user_agent["version"]
        # A Flex Template image is also its workers' container: it holds the project (the Dockerfile installs
        # its folder), so its workers get the project from the image's folder, as a package built from it.
        image = self.flex_images.get(_worker_image(env))
        installed = staged
        if image is not None:
            installed = run.folder / "image"
            installed.mkdir()
            environment.build_sdist(image.workdir, installed / environment.SDIST, run.folder / "logs" / "install.log")
            run.say(f"Workers use the image {_worker_image(env)}, which holds the project")
        sdist = installed / environment.SDIST
        base = environment.base_environment(beam_version, sdist if sdist.exists() else None)
        python = base / "bin" / "python"
        site = run.folder / "site"
        environment.install_staged(python, staged, site, run.folder / "logs" / "install.log")
        if image is not None:
            environment.install_staged(python, installed, site, run.folder / "logs" / "install.log")
        if os.geteuid() != 0:  # the tests' own user owns the files: read-only to it as well
            for path in [site, *site.rglob("*")]:
                path.chmod(path.stat().st_mode & ~0o222)
        if run.cancel_requested.is_set():
            raise _Cancelled()

        worker_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(run.folder / "home"),
            "PYTHONPATH": str(site),
            "TMPDIR": str(run.folder / "semi"),
            **self.offline_env(),
        }
        boot = run.folder / "boot.sh"
        boot.write_text(f'#!/bin/sh\nexec "{python}" "{BOOT}" --job_dir="{run.folder}" "$@"\n')
        boot.chmod(0o755)
        pool_port = free_port()
        pool = run.folder / "pool.sh"
        pool.write_text(_POOL_SCRIPT.format(site=site, python=python, port=pool_port, boot=boot))
        wrap, user = self._isolation
        if user:  # the workers' user writes only its own folders
            for sub in ("semi", "home", "logs"):
                for path in [run.folder / sub, *(run.folder / sub).rglob("*")]:
                    os.chown(path, user["user"], user["group"])
        pool_proc = self._spawn(
            run, [*wrap, "/bin/sh", str(pool)], "pool.log", env=worker_env, cwd=str(run.folder / "home"), **user
        )
        wait_for_port(pool_port, pool_proc, 120, run.folder / "logs" / "pool.log")
        job_port = free_port()
        self._spawn(
            run,
            [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main", f"--port={job_port}"],
            "job_service.log",
            env={**os.environ, **self.offline_env()},
            cwd=str(run.folder),
        )
        from tests.dataflow_standin.portable import run_on_job_service

        run.set_state(dataflow.JobState.JOB_STATE_RUNNING)
        run.say(f"Workers started from apache-beam[gcp]=={beam_version} and the staged files")
        if self.before_run is not None:
            self.before_run(run)
        if run.cancel_requested.is_set():
            raise _Cancelled()
        run_on_job_service(run, pipeline_file.read_bytes(), options, f"localhost:{job_port}", f"localhost:{pool_port}")


class _Cancelled(Exception):
    pass


class _TokenHandler(http.server.BaseHTTPRequestHandler):
    """An OAuth token endpoint: any refresh gets a bearer token (the credentials' `token_uri`)."""

    def do_POST(self):  # noqa: N802 -- http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"access_token": "standin-token", "expires_in": 3600, "token_type": "Bearer"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


# The worker pool's start: the installed package folder made read-only (a read-only bind mount when root),
# checked, then Beam's worker pool, which runs the boot for every SDK worker.
_POOL_SCRIPT = """set -e
if [ "$(id -u)" = 0 ]; then mount --bind "{site}" "{site}" && mount -o remount,ro,bind "{site}"; fi
if touch "{site}/.write-probe" 2>/dev/null; then echo "the package folder {site} is writable" >&2; exit 97; fi
echo "package folder read-only: {site}"
exec "{python}" -m apache_beam.runners.worker.worker_pool_main --service_port={port} --container_executable="{boot}"
"""
