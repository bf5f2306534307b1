"""Beam's signature lookups, answered once per function object.

Why this exists: Beam inspects a DoFn's methods by signature every time it looks at the DoFn
(`apache_beam.transforms.userstate.get_dofn_specs` walks every method in `dir(dofn)`, and runs for each
ParDo several times while a pipeline is built, translated and run, in the launcher and again in each
worker). The score job on 60 records makes about 6,400 `inspect.signature` calls that way: 3.4 s of a
13.5 s in-process run under cProfile, a quarter of a small job's wall time, paid again by every job of the
project and every test that runs one. A function's signature does not change, so Beam's
`typehints.decorators.get_signature` is answered from a cache keyed by the function object, held weakly (the
closures of a finished pipeline go away with it). A bound method is keyed by its function: its signature is
the function's without the first parameter, whatever object it is bound to. Anything that cannot be held
weakly or hashed is passed to Beam's own function every time, as before. The cached value is the very
`inspect.Signature` Beam's function returned (immutable by design), so every decision Beam takes from it is
unchanged; tests/transforms/test_signatures.py checks that against Beam's function on the project's DoFns.
"""

from __future__ import annotations

import importlib
import types
import weakref

# The modules that call Beam's function, by their own name for it (each imported it by name).
USERS = (
    "apache_beam.typehints.decorators",
    "apache_beam.transforms.core",
    "apache_beam.transforms.ptransform",
    "apache_beam.transforms.util",
)


def cache_beam_signatures() -> None:
    """Make every user of Beam's `get_signature` call the cached one (once per process; idempotent)."""
    decorators = importlib.import_module(USERS[0])
    beams = decorators.get_signature
    if getattr(beams, "uncached", None) is not None:
        return
    plain: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    bound: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def get_signature(func):
        table, key = (bound, func.__func__) if isinstance(func, types.MethodType) else (plain, func)
        try:
            return table[key]
        except (KeyError, TypeError):  # not seen yet, or not weakly referable or hashable
            pass
        signature = beams(func)
        try:
            table[key] = signature
        except TypeError:
            pass
        return signature

    get_signature.uncached = beams
    get_signature.__doc__ = beams.__doc__
    for name in USERS:
        module = importlib.import_module(name)
        if getattr(module, "get_signature", None) is beams:
            module.get_signature = get_signature
