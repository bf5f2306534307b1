"""Lazy public names for the vlnkit packages: `from vlnkit.navigation import NavGraph` imports only what it needs.

Each package's `__init__` lists its public names and the module that holds each; a name's module is
imported on first use (PEP 562), so importing one part of the core never drags in the others
(spaCy, matplotlib, the compiled kernels).
"""

from __future__ import annotations

import importlib


def lazy_exports(package: str, homes: dict[str, tuple[str, ...]]):
    """(`__getattr__`, `__all__`) for a package whose public names live in its submodules.

    `homes` maps a submodule name to the public names it holds.
    """
    where = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str):
        if name in where:
            return getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__, sorted(where)
