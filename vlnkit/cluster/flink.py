"""A Flink session cluster on this machine, as a user runs one: `vlnkit flink-cluster start|stop|status`.

One JobManager and `taskmanagers` TaskManagers, each its own JVM started by class from Flink 1.19.0's
distribution jars (PyPI's `apache-flink-libraries`, which has no shell scripts), and Beam's Flink job
server (`FlinkJobServerDriver`, from the jars ``python -m vlnkit.parts`` fetched) submitting to it.
The SDK workers are started by each TaskManager beside itself (`--environment_type=PROCESS` with
`vlnkit-sdk-worker`, configs/flink.yaml), never by the launcher. Why PROCESS and not a worker pool per
TaskManager: an EXTERNAL environment names one pool address for the whole job, so every TaskManager
would ask the same pool and the workers would all run beside one of them.

Everything is configured by one YAML file (configs/flink-cluster.yaml): Flink's own keys under `flink:`
go into the cluster's `flink-conf.yaml`; the TaskManagers' memory and CPU, which Flink's scripts compute,
are computed by the same Flink class (`BashJavaUtils`) and given as dynamic properties.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from vlnkit.cluster.java_parts import (
    MissingJavaParts,
    check_job_server_jars,
    check_unlisted_loader,
    flink_dist_dir,
    unlisted_loader_flags,
)

# java.base packages Flink 1.19 reflects into on Java 17 (Flink's own scripts pass the same list).
ADD_OPENS = [
    f"--add-opens=java.base/{p}=ALL-UNNAMED"
    for p in (
        "java.lang",
        "java.lang.reflect",
        "java.io",
        "java.net",
        "java.nio",
        "sun.nio.ch",
        "java.text",
        "java.time",
        "java.util",
        "java.util.concurrent",
        "java.util.concurrent.atomic",
        "java.util.concurrent.locks",
    )
]

LOG4J = """\
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
appender.main.name = MainAppender
appender.main.type = File
appender.main.fileName = ${sys:log.file}
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
"""


class ClusterError(Exception):
    """The cluster cannot be started or reached as asked; the message is one line saying why."""


def load_config(path: str) -> dict:
    import yaml

    with open(path, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    config["state_dir"] = str(Path(os.path.expanduser(config["state_dir"])))
    return config


def rest_url(config: dict) -> str:
    flink = config["flink"]
    return f"http://{flink['rest.address']}:{flink['rest.port']}"


def overview(config: dict, timeout: float = 2.0) -> dict | None:
    """Flink's cluster overview (TaskManagers, slots, jobs), or None when no JobManager answers."""
    try:
        with urllib.request.urlopen(rest_url(config) + "/overview", timeout=timeout) as response:
            return json.loads(response.read())
    except OSError:
        return None


def _listening(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, port)) == 0


def _write_conf(config: dict, conf_dir: Path) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"{k}: {v}" for k, v in config["flink"].items()]
    (conf_dir / "flink-conf.yaml").write_text("\n".join(lines) + "\n")
    (conf_dir / "log4j.properties").write_text(LOG4J)


def _classpath(folder: Path) -> str:
    return ":".join(str(p) for p in sorted(folder.glob("*.jar")))


def _start(argv: list[str], log: Path, env: dict | None = None) -> int:
    """Start a process in a session of its own (so that stopping it stops its children); its pid."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env
        )
    return proc.pid


def taskmanager_resources(dist: Path, conf_dir: Path) -> tuple[list[str], list[str]]:
    """(JVM memory flags, `-D` dynamic properties) of a TaskManager, as Flink's taskmanager.sh computes them."""
    out = subprocess.run(
        [
            "java",
            "-cp",
            f"{dist / 'bin' / 'bash-java-utils.jar'}:{_classpath(dist / 'lib')}",
            "org.apache.flink.runtime.util.bash.BashJavaUtils",
            "GET_TM_RESOURCE_PARAMS",
            "--configDir",
            str(conf_dir),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    results = [line.split(":", 1)[1] for line in out.splitlines() if line.startswith("BASH_JAVA_UTILS_EXEC_RESULT:")]
    if len(results) < 2:
        raise ClusterError("Flink's BashJavaUtils did not compute the TaskManager's memory: " + out[-200:])
    return results[-2].split(), results[-1].split()


def _pids_file(config: dict) -> Path:
    return Path(config["state_dir"]) / "pids.json"


def read_pids(config: dict) -> dict[str, int]:
    path = _pids_file(config)
    return json.loads(path.read_text()) if path.exists() else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start(config: dict, wait: float = 180.0) -> dict[str, int]:
    """Start the JobManager, the TaskManagers and the job server; return once all TaskManagers registered
    and the job service listens. Returns the processes' ids by role."""
    state = Path(config["state_dir"])
    if overview(config) is not None:
        raise ClusterError(f"a JobManager already answers at {rest_url(config)}; stop it first")
    jars = check_job_server_jars()
    check_unlisted_loader()
    dist = flink_dist_dir()
    conf_dir, logs = state / "conf", state / "log"
    logs.mkdir(parents=True, exist_ok=True)
    _write_conf(config, conf_dir)
    java = ["java", *ADD_OPENS, f"-Dlog4j.configurationFile=file:{conf_dir / 'log4j.properties'}"]
    beam = ":".join(str(j) for j in jars)
    pids: dict[str, int] = {}
    # Beam's runner on the JobManager's classpath as on the TaskManagers' (start_taskmanager says why): the
    # job server stages no copy of it with the jobs.
    pids["jobmanager"] = _start(
        [
            *java,
            "-Xmx512m",
            f"-Dlog.file={logs / 'jobmanager.log'}",
            "-cp",
            f"{_classpath(dist / 'lib')}:{beam}",
            "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
            "--configDir",
            str(conf_dir),
        ],
        logs / "jobmanager.out",
    )
    _pids_file(config).write_text(json.dumps(pids))
    for i in range(1, int(config["taskmanagers"]) + 1):
        pids[f"taskmanager-{i}"] = start_taskmanager(config, i)
        _pids_file(config).write_text(json.dumps(pids))
    flink = config["flink"]
    artifacts = state / "artifacts"
    artifacts.mkdir(exist_ok=True)
    log4j_cp = ":".join(str(p) for p in sorted((dist / "lib").glob("log4j-*.jar")))
    # Its classes loaded by vlnkit/cluster/UnlistedClasspath.java, so that the job server's classpath scan
    # finds nothing to upload with each job but that class loader's own jar: every process of this cluster
    # already holds Beam's runner.
    pids["job-server"] = _start(
        [
            *java,
            "-Xmx512m",
            f"-Dlog.file={logs / 'job-server.log'}",
            *unlisted_loader_flags(f"{beam}:{log4j_cp}"),
            "org.apache.beam.runners.flink.FlinkJobServerDriver",
            f"--flink-master={flink['rest.address']}:{flink['rest.port']}",
            "--job-host=127.0.0.1",
            f"--job-port={config['job_port']}",
            f"--artifact-port={config['artifact_port']}",
            "--expansion-port=-1",
            f"--artifacts-dir={artifacts}",
            f"--flink-conf-dir={conf_dir}",
        ],
        logs / "job-server.out",
    )
    _pids_file(config).write_text(json.dumps(pids))
    deadline = time.time() + wait
    while time.time() < deadline:
        dead = [role for role, pid in pids.items() if not _alive(pid) or _zombie(pid)]
        if dead:
            stop(config)
            raise ClusterError(f"{dead[0]} exited while starting; see {logs}")
        info = overview(config)
        if (
            info
            and info.get("taskmanagers") == int(config["taskmanagers"])
            and _listening("127.0.0.1", int(config["job_port"]))
        ):
            return pids
        time.sleep(0.5)
    stop(config)
    raise ClusterError(f"the cluster did not come up within {wait:.0f} s; see {logs}")


def start_taskmanager(config: dict, i: int) -> int:
    """Start TaskManager `i` (again, after it was lost) with the cluster's configuration; its pid.

    Its memory and CPU are computed as Flink's taskmanager.sh computes them; its spill folder
    (io.tmp.dirs) is its own. The SDK workers it starts (vlnkit-sdk-worker) come from this Python
    environment, put first on its PATH.

    Its classpath holds Beam's runner (the job server's jars, after Flink's own) as well as Flink, and
    configs/flink-cluster.yaml resolves classes parent-first, so a job's Beam classes are the
    TaskManager's; the job server (vlnkit/cluster/UnlistedClasspath.java) stages no copies at all. Why:
    Beam's Flink runner keeps a job's SDK workers for `environment_cache_millis` between stages only when its classes
    come from Flink's own class loader (`FlinkExecutableStageContextFactory`); loaded from the job's jars, it
    closes the workers after every stage, and each of a dozen stages started new Python workers (~10-40 s
    each)."""
    state = Path(config["state_dir"])
    dist, conf_dir, logs = flink_dist_dir(), state / "conf", state / "log"
    beam = ":".join(str(j) for j in check_job_server_jars())
    memory, dynamic = taskmanager_resources(dist, conf_dir)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    spill = state / f"taskmanager-{i}" / "tmp"
    spill.mkdir(parents=True, exist_ok=True)
    pid = _start(
        [
            "java",
            *ADD_OPENS,
            f"-Dlog4j.configurationFile=file:{conf_dir / 'log4j.properties'}",
            *memory,
            f"-Dlog.file={logs / f'taskmanager-{i}.log'}",
            "-cp",
            f"{_classpath(dist / 'lib')}:{beam}",
            "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
            "--configDir",
            str(conf_dir),
            *dynamic,
            "-D",
            f"io.tmp.dirs={spill}",
            "-D",
            f"taskmanager.resource-id=taskmanager-{i}",
        ],
        logs / f"taskmanager-{i}.out",
        env=env,
    )
    pids = read_pids(config)
    if pids:
        pids[f"taskmanager-{i}"] = pid
        _pids_file(config).write_text(json.dumps(pids))
    return pid


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return False


def stop(config: dict, seconds: float = 15.0) -> list[str]:
    """Stop every process the cluster command started (each with its session: SDK workers too); the
    roles stopped."""
    pids = read_pids(config)
    for pid in pids.values():
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.time() + seconds
    while time.time() < deadline and any(_alive(p) and not _zombie(p) for p in pids.values()):
        time.sleep(0.2)
    for pid in pids.values():
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    _pids_file(config).unlink(missing_ok=True)
    return list(pids)


def status(config: dict) -> dict:
    pids = read_pids(config)
    return {
        "rest": rest_url(config),
        "overview": overview(config),
        "job_endpoint": f"127.0.0.1:{config['job_port']}",
        "job_service_listening": _listening("127.0.0.1", int(config["job_port"])),
        "processes": {role: {"pid": pid, "alive": _alive(pid) and not _zombie(pid)} for role, pid in pids.items()},
    }


def main(argv: list[str] | None = None) -> int:
    """`vlnkit flink-cluster start|stop|status [--config=configs/flink-cluster.yaml]`."""
    parser = argparse.ArgumentParser(prog="vlnkit flink-cluster", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("--config", default=_default_config(), help="cluster configuration (default: %(default)s)")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    try:
        if args.action == "start":
            began = time.time()
            pids = start(config)
            print(
                f"Flink cluster up in {time.time() - began:.1f} s: REST {rest_url(config)}, "
                f"job endpoint 127.0.0.1:{config['job_port']}, processes {pids}; logs in {config['state_dir']}/log"
            )
        elif args.action == "stop":
            print(f"stopped: {', '.join(stop(config)) or 'nothing was running'}")
        else:
            print(json.dumps(status(config), indent=2))
    except (ClusterError, MissingJavaParts) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _default_config() -> str:
    """configs/flink-cluster.yaml of the installed `configs` package (found, not imported: the core does not
    depend on the run profiles)."""
    import importlib.util

    return os.path.join(os.path.dirname(importlib.util.find_spec("configs").origin), "flink-cluster.yaml")


if __name__ == "__main__":
    raise SystemExit(main())
