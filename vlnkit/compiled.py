"""`njit` for the package's compiled kernels, with an on-disk cache that goes stale with any code it was built from.

Why: numba stamps a cached kernel with its own source file only, so a kernel that calls or inlines a
function of another module keeps the machine code of that function's old version after the other
module is edited, and loads it silently: the line scanners call `vlnkit.datasets.json_grammar`'s
pieces and `vlnkit.datasets.byte_table.lookup`, and the bootstrap kernels take their hash constants
from `vlnkit.hashing`. Measured on this project's machine, the prediction scanner runs at 290 MB/s
from such a stale cache against 357 MB/s freshly built, and a changed rule would run in its old
form. Here a kernel's stamp is numba's (its own file's content) together with a hash of every module
of `CACHED_PACKAGES` that its module imports, directly or through others (read from the import
statements, once per process). Numba offers no hook for this but its list of cache locator
classes (`numba.core.caching.CacheImpl._locator_classes`), which this module extends for the
package's own files; every other library's kernels keep numba's own locators.

Numba's error-message highlighting is turned off (`NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING`, unless
the environment sets it) before numba is first imported: with colorama installed, numba wraps and then
restores `sys.stdout` and `sys.stderr` around every message it formats, about a hundred times per
kernel it compiles, from whichever thread compiles. The score job compiles on a background thread (its
warm-up), so a restore there could put back a stream that the rest of the program had since replaced:
under pytest, a test's `capsys` can lose a job's one-line refusal that way; in a notebook, a cell's output
can go to another cell. The default colour scheme is "no_color", so the messages read the same.

Kernel modules import `njit` from here rather than from numba (`from vlnkit.compiled import njit`), so
no kernel of the package is cached without it. What a kernel of the line scanners is stamped with:

    >>> import vlnkit.datasets.line_scan as scanners
    >>> files = dependency_files(scanners.__file__)
    >>> sorted(f.rsplit("/", 2)[-1] for f in files if "json_grammar" in f or "byte_table" in f)
    ['byte_table.py', 'json_grammar.py']
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re

os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")  # before numba's first import: above

from numba import njit  # noqa: E402
from numba.core import caching  # noqa: E402

__all__ = ["njit", "CACHED_PACKAGES", "dependency_files", "compiled_entry"]

CACHED_PACKAGES = ["vlnkit"]  # packages whose kernels get the stamp (a test adds a package of its own)


@functools.cache
def _folders(packages: tuple[str, ...]) -> list[tuple[str, str]]:
    found = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        found += [(name, os.path.abspath(f) + os.sep) for f in (spec.submodule_search_locations or [])] if spec else []
    return found


def _package_of(path: str) -> str | None:
    """The watched package whose folder holds `path`, or None."""
    path = os.path.abspath(path)
    return next((name for name, folder in _folders(tuple(CACHED_PACKAGES)) if path.startswith(folder)), None)


_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))", re.M)


def _module_file(name: str, package: str) -> str | None:
    """The source file of module `name` of `package` (a module or a package's __init__), or None."""
    for _, folder in _folders((package,)):
        base = os.path.join(folder, *name.split(".")[1:])
        for path in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(path):
                return path
    return None


@functools.cache
def _imported_files(path: str, package: str) -> tuple[str, ...]:
    """The files of the `package` modules that the file at `path` imports (anywhere in it). Read with a
    regular expression over the import statements: parsing every file's syntax tree cost 0.1 s of a
    job's start."""
    with open(path, "rb") as f:
        text = f.read()
    names = set()
    for source, imported, plain in _IMPORT.findall(text):
        if source:
            module = source.decode()
            names.add(module)
            for item in imported.strip(b"()").split(b","):  # `from pkg import module` imports a module
                if item.split():
                    names.add(f"{module}.{item.split()[0].decode()}")
        else:
            names.update(item.split()[0].decode() for item in plain.split(b",") if item.split())
    found = (_module_file(n, package) for n in sorted(names) if n == package or n.startswith(package + "."))
    return tuple(sorted({os.path.abspath(f) for f in found if f is not None}))


def dependency_files(path: str) -> list[str]:
    """Every file of a watched package that the module at `path` imports, directly or through others,
    with `path` itself: what a kernel of that module may have been built from."""
    package = _package_of(path)
    if package is None:
        return [path]
    seen, todo = set(), [os.path.abspath(path)]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(_imported_files(current, package))
    return sorted(seen)


@functools.cache
def _digest(path: str) -> bytes:
    """sha256 over the paths and contents of `path`'s dependency files (once per process)."""
    h = hashlib.sha256()
    for file in dependency_files(path):
        with open(file, "rb") as f:
            h.update(file.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return h.digest()


class _StampsDependencies:
    """A locator mixin: numba's stamp of the kernel's own file, and the digest of its dependencies."""

    @classmethod
    def from_function(cls, py_func, py_file):
        if _package_of(py_file) is None:
            return None  # not ours: numba's own locators take it
        return super().from_function(py_func, py_file)

    def get_source_stamp(self):
        return super().get_source_stamp(), _digest(os.path.abspath(self._py_file))


class _UserProvided(_StampsDependencies, caching.UserProvidedCacheLocator):
    """In NUMBA_CACHE_DIR, when it is set."""


class _InTree(_StampsDependencies, caching.InTreeCacheLocator):
    """Beside the source, in __pycache__."""


class _UserWide(_StampsDependencies, caching.UserWideCacheLocator):
    """In the user's cache folder, when the package's folder cannot be written."""


_OURS = {
    caching.UserProvidedCacheLocator: _UserProvided,
    caching.InTreeCacheLocator: _InTree,
    caching.UserWideCacheLocator: _UserWide,
}


def _install() -> None:
    """Each of ours just before the numba locator it extends, so numba's order of choice stays."""
    locators = caching.CacheImpl._locator_classes
    if _InTree not in locators:
        locators[:] = [mine for c in locators for mine in ((_OURS[c], c) if c in _OURS else (c,))]


_install()


def compiled_entry(dispatcher, *args):
    """The machine-code entry of a kernel for the types of `args` (loaded from the cache or compiled if need be).

    Why: a call through numba's dispatcher first types every argument (about 0.4 us for a few arrays and
    scalars), a large part of a kernel that runs in a microsecond. A caller that keeps this entry calls
    the machine code directly. The entry converts its arguments as its signature says and does not check
    their types: the caller must only pass arguments of the same types as `args` (an array of the same
    dtype, dimensions, layout and flags; a Python int for an int, a float for a float).
    """
    from numba import typeof

    if not hasattr(dispatcher, "compile"):  # NUMBA_DISABLE_JIT=1: the plain Python function
        return dispatcher
    return dispatcher.compile(tuple(typeof(a) for a in args))
