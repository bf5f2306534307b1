"""Every docstring example (`>>>`) of the library, the transforms and the job modules runs and prints
what it shows, so an example cannot drift from the code it documents.

Only modules whose source holds an example are run (a module without one would pass for nothing), and
each of those must give doctest at least one example to run: a `>>>` that doctest cannot see (in a
comment, or in a string that is not a docstring) fails instead of passing unnoticed."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import pytest

PACKAGES = ("vlnkit", "transforms", "pipelines")


def modules() -> list[str]:
    names = []
    for package in PACKAGES:
        names.append(package)
        path = importlib.import_module(package).__path__
        names += [m.name for m in pkgutil.walk_packages(path, prefix=f"{package}.")]
    return sorted(names)


def with_examples() -> list[str]:
    return [name for name in modules() if ">>>" in inspect.getsource(importlib.import_module(name))]


def test_every_package_is_walked():
    found = modules()
    assert "vlnkit.datasets.reference_batches" in found and "transforms.score.read" in found
    assert "vlnkit.hashing" in found
    assert "pipelines.score" in found and len(found) > 80
    assert len(with_examples()) > 20


# What a session fixture of this test process may have set (tests/cloud/conftest.py's Cloud Storage emulator):
# the examples run in a user's plain environment, whichever tests ran before them in the process.
SESSION_ENVIRONMENT = ("STORAGE_EMULATOR_HOST", "NO_GCE_CHECK")


@pytest.mark.parametrize("name", with_examples())
def test_docstring_examples(name, monkeypatch):
    for variable in SESSION_ENVIRONMENT:
        monkeypatch.delenv(variable, raising=False)
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name}: its '>>>' lines are not in a docstring doctest can find"
    assert result.failed == 0, name
