"""Shared fixtures: where the real data lives, and the rule for when it is missing.

Tests that read ../shared/data must run in CI: when `CI` is set (1, true or yes) and the data is
missing they fail; on a user's machine without the data they are skipped with the reason. Every test
that reads the data gets the `real_data` marker from the fixture it reads it through (below), so
`-m "not real_data"` deselects exactly those tests.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import vlnkit.compiled  # noqa: F401 -- before any test imports numba: its stream-swapping highlighting off

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("VLNKIT_SHARED_DATA", ROOT.parent / "shared" / "data"))


DATA_FIXTURE = "shared_data"  # every fixture that reads the data depends on this one


def in_ci(value: str | None = None) -> bool:
    """Whether `CI` is set to a true value: 1, true or yes (any case); `CI=false` or `CI=0` is not CI."""
    value = os.environ.get("CI") if value is None else value
    return (value or "").strip().lower() in {"1", "true", "yes"}


def _require(path: Path) -> Path:
    if path.exists():
        return path
    reason = f"real data not found at {path} (set VLNKIT_SHARED_DATA or place ../shared/data beside the repo)"
    if in_ci():
        pytest.fail(f"CI is set but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return _require(SHARED_DATA)


@pytest.fixture(scope="session")
def connectivity_dir(shared_data) -> str:
    return str(_require(shared_data / "connectivity"))


@pytest.fixture(scope="session")
def r2r_dir(shared_data) -> Path:
    return _require(shared_data / "r2r")


@pytest.fixture(scope="session")
def reverie_dir(shared_data) -> Path:
    """REVERIE v1: the records and the release's per-viewpoint visibility folder (BBox)."""
    return _require(shared_data / "reverie" / "v1")


# The files that take longest, longest first (seconds of a CI run, approximate; only the order matters).
# pytest-xdist (`--dist loadfile --no-loadscope-reorder`, pyproject.toml) hands files to its two workers in
# collection order, so these start first and the many short files fill in around them; by default it
# would order files by their number of tests, which put the cluster's few long tests last and left one
# worker idle for minutes at the end. A file missing here only starts later.
LONGEST_FIRST = (
    "tests/cluster/test_flink.py",  # ~600
    "tests/docs/test_docs.py",  # ~300
    "tests/pipelines/test_runners.py",  # ~170
    "tests/cloud/test_dataflow_jobs.py",  # ~210
    "tests/pipelines/test_score_instructions.py",  # ~150
    "tests/cloud/test_worker_pool.py",  # ~90
    "tests/pipelines/test_hostile_sweep.py",  # ~150
    "tests/pipelines/test_score_rxr.py",  # ~50
    "tests/cloud/test_gcs_jobs.py",  # ~90
    "tests/pipelines/test_build_r4r.py",  # ~80
    "tests/docs/test_docstrings.py",  # ~100
    "tests/pipelines/test_publishing.py",  # ~80
    "tests/vlnkit/evaluation/test_kernels.py",  # ~60
)


def pytest_collection_modifyitems(config, items):
    """A test that reads the data through any fixture (directly or through another fixture) is `real_data`.
    The files of LONGEST_FIRST go first, in its order (each file's tests keep theirs)."""
    for item in items:
        if DATA_FIXTURE in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_data)
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_sessionstart(session):
    """Compile the metric kernels and the score job's (`vlnkit.scoring.warm.warm_up`) once, in the
    controller, before the test workers start and the processes they launch (jobs, cluster workers)
    would each compile them at the same time. numba caches kernels on disk (a cold cache costs ~20 s
    once, a warm one ~2 s), and its cache is not made for processes writing it at once (numba#10128);
    a fresh clone's first suite once crashed in LLVM while a Flink launcher, its SDK workers and an
    in-process run all compiled the score kernels together."""
    from vlnkit.evaluation import ndtw

    ndtw([0, 1], [0, 1], [[0.0, 1.0], [1.0, 0.0]])
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without workers)
        from vlnkit.scoring.warm import warm_up

        warm_up()
