"""`vlnkit-sdk-worker`'s boot: a Python that cannot import the project ends at once with the status the
launcher names (pipelines.runners.job_failure), before it asks the TaskManager for anything."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.conftest import ROOT
from vlnkit.cluster.sdk_worker import IMPORT_FAILED


def test_a_python_that_cannot_import_the_project_exits_with_the_import_status_naming_the_error(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'transforms':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Refuse())\n"
    )
    began = time.monotonic()
    # No provision service listens at port 9: the boot must end before it would ask one.
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "vlnkit" / "cluster" / "sdk_worker.py"),
            "--id=1",
            "--provision_endpoint=127.0.0.1:9",
        ],
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == IMPORT_FAILED, done.stderr[-2000:]
    assert "cannot import transforms" in done.stderr and "No module named 'transforms'" in done.stderr
    assert time.monotonic() - began < 60


def test_a_python_with_the_project_finds_no_import_error():
    done = subprocess.run(
        [sys.executable, "-c", "from vlnkit.cluster.sdk_worker import project_import_error as e; print(e() or 'ok')"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
