"""Launches from one project folder build its package one at a time (Beam's stager takes no lock)."""

from __future__ import annotations

import subprocess
import sys
import time

from pipelines.package_build import lock_path, one_package_build

HOLD = """
import sys, time
from pipelines.package_build import one_package_build
with one_package_build(sys.argv[1]):
    print("held", flush=True)
    time.sleep(1.5)
"""


def test_a_second_launch_from_the_same_folder_waits_for_the_first_build(tmp_path):
    setup = tmp_path / "setup.py"
    other = subprocess.Popen([sys.executable, "-c", HOLD, str(setup)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        start = time.monotonic()
        with one_package_build(str(setup)):
            waited = time.monotonic() - start
        assert waited > 0.8  # the other launch's build was not broken into
    finally:
        other.wait(timeout=30)


def test_launches_from_other_folders_and_without_a_setup_file_do_not_wait(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    assert lock_path(str(tmp_path / "a" / "setup.py")) != lock_path(str(tmp_path / "b" / "setup.py"))
    assert lock_path(str(tmp_path / "a" / "setup.py")) == lock_path(str(tmp_path / "a" / "." / "setup.py"))
    other = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "a" / "setup.py")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout.readline().strip() == "held"
        start = time.monotonic()
        with one_package_build(str(tmp_path / "b" / "setup.py")), one_package_build(None):
            assert time.monotonic() - start < 0.5
    finally:
        other.wait(timeout=30)
