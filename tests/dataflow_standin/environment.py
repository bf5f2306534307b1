"""The SDK workers' Python environment, built only from what a launcher staged, as the SDK container's boot does.

The Beam SDK container holds a pinned `apache-beam[gcp]` and nothing of the project; its boot then
installs the staged files: the requirements file and extra packages, then the package built from
setup.py (`workflow.tar.gz`), with its dependencies. Here that is done in two layers, so a test
session pays the slow part once:

- the base: a fresh virtual environment (no system site-packages) holding `apache-beam[gcp]==V` (V
  read from the launcher's request) and the dependencies the staged package declares, with the
  package itself removed again. It is cached on disk, keyed on V and on the staged setup.py's bytes,
  and built under a file lock, so parallel test processes build it once;
- per job: the staged package, requirements and extra packages, installed without their
  dependencies into a folder of the job's own (`--target`), which the workers put on their path. A
  job whose package was not staged therefore finds no project on its workers.

The installer is uv (`uv pip`, a test dependency), not the container's pip: the same packages resolved
from the same index into the same layout, but the base takes ~20 s from a cold cache where pip took
210-370 s on this machine (pip unpacks and byte-compiles 1.5 GB of wheels), which kept the suite over
its time budget. Nothing the workers see depends on which installer wrote the files.

No file of the launcher's checkout is read: everything comes from the staged copies in the bucket.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SDIST = "workflow.tar.gz"  # Beam's name for the staged package built from --setup_file
REQUIREMENTS = "requirements.txt"  # Beam's name for a staged --requirements_file
PICKLED_MAIN_SESSION = "pickled_main_session"
PROVENANCE = "submission_environment_dependencies.txt"  # what the launcher had installed (not installed)
CACHE_ENV = "VLNKIT_DATAFLOW_WORKER_CACHE"  # where base environments are kept


def cache_root() -> Path:
    """Under the temporary folder by default: readable by the unprivileged user the workers run as."""
    return Path(os.environ.get(CACHE_ENV) or os.path.join(tempfile.gettempdir(), "vlnkit-dataflow-workers"))


def sdist_metadata(sdist: Path) -> tuple[str, bytes]:
    """The staged package's distribution name and its setup.py bytes (the base environment's key)."""
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[-1]: m for m in tar.getmembers() if m.isfile() and m.name.count("/") == 1}
        info = tar.extractfile(members["PKG-INFO"]).read().decode()
        setup = tar.extractfile(members["setup.py"]).read() if "setup.py" in members else b""
    name = next(line.split(":", 1)[1].strip() for line in io.StringIO(info) if line.startswith("Name:"))
    return name, setup


def _uv(*args: str, log: Path) -> None:
    """Run `uv` (the test environment's) with `args`, its output appended to `log`."""
    from uv import find_uv_bin

    with open(log, "ab") as out:
        out.write(f"\n$ uv {' '.join(args)}\n".encode())
        out.flush()
        done = subprocess.run(
            [find_uv_bin(), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={
                **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")},
                "UV_NO_PROGRESS": "1",
            },
        )
    if done.returncode:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise RuntimeError(f"uv {' '.join(args[:2])} failed in the worker environment (log {log}):\n" + "\n".join(tail))


def _pip(python: Path, *args: str, log: Path) -> None:
    """`pip <args>` for the environment of `python`, through uv."""
    _uv("pip", args[0], "--python", str(python), *args[1:], log=log)


def base_environment(beam_version: str, sdist: Path | None) -> Path:
    """A cached virtual environment: `apache-beam[gcp]==beam_version` and the staged package's dependencies.

    Returns the environment's folder; its interpreter is `<folder>/bin/python`.
    """
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    if sdist is None:  # nothing staged to install: any base of this Beam holds the same Beam (and no project)
        ready = sorted(root.glob(f"beam-{beam_version}-*/READY"))
        if ready:
            return ready[0].parent
        name, setup = None, b""
    else:
        name, setup = sdist_metadata(sdist)
    key = hashlib.sha256(beam_version.encode() + b"\0" + setup).hexdigest()[:16]
    folder = root / f"beam-{beam_version}-{key}"
    with open(root / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be building it
        if (folder / "READY").exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        log = folder / "build.log"
        # A virtual environment without system site-packages (uv's default), as the image's own Python.
        _uv("venv", "--quiet", "--allow-existing", "--python", sys.executable, str(folder), log=log)
        python = folder / "bin" / "python"
        # The image's Beam, then what the staged package declares (resolved together, as one pip run).
        packages = [f"apache-beam[gcp]=={beam_version}", "setuptools", "wheel", *([str(sdist)] if sdist else [])]
        _pip(python, "install", *packages, log=log)
        if name:  # the project itself comes from each job's staged package, never from the cached base
            _pip(python, "uninstall", name, log=log)
        (folder / "READY").write_text(f"apache-beam[gcp]=={beam_version}\nsetup.py sha256 {key}\n")
        return folder


def build_sdist(project: Path, to: Path, log: Path) -> None:
    """An sdist of the project folder `project` (holding setup.py) at `to`, as Beam's stager builds one."""
    folder = to.parent / "sdist-build"
    with open(log, "ab") as out:
        done = subprocess.run(
            [sys.executable, "setup.py", "-q", "sdist", "-d", str(folder)],
            cwd=project,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    built = sorted(folder.glob("*.tar.gz"))
    if done.returncode or len(built) != 1:
        raise RuntimeError(f"building an sdist of {project} failed (log {log})")
    built[0].rename(to)
    shutil.rmtree(folder)


def install_staged(python: Path, staged: Path, target: Path, log: Path) -> None:
    """Install the staged requirements, extra packages and package into `target`, without dependencies.

    The order is the boot's: requirements, extra packages, then the package built from setup.py.
    """
    target.mkdir(parents=True, exist_ok=True)
    common = ["install", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(target)]
    if (staged / REQUIREMENTS).exists():
        _pip(python, *common, "--find-links", str(staged), "-r", str(staged / REQUIREMENTS), log=log)
    skip = {SDIST, REQUIREMENTS, PICKLED_MAIN_SESSION, PROVENANCE, "pipeline.pb"}
    extras = sorted(p for p in staged.iterdir() if p.name not in skip and p.name.endswith((".whl", ".tar.gz", ".zip")))
    for package in [*extras, *([staged / SDIST] if (staged / SDIST).exists() else [])]:
        _pip(python, *common, str(package), log=log)


if __name__ == "__main__":  # build the base ahead of a test session: python -m ... <beam version> <sdist>
    print(base_environment(sys.argv[1], Path(sys.argv[2])))
