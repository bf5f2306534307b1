"""Every docstring example (`>>>`) of the library, the transforms and the job modules runs and prints
what it shows, so an example cannot drift from the code it documents."""

from __future__ import annotations

import doctest
import importlib
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


def test_every_package_is_walked():
    found = modules()
    assert "vlnkit.datasets.reference_batches" in found and "transforms.score_read" in found
    assert "pipelines.score" in found and len(found) > 80


@pytest.mark.parametrize("name", modules())
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, name
