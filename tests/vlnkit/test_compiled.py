"""`vlnkit.compiled`: a cached kernel is rebuilt when a module it calls into changes, and every kernel of the
package is cached that way."""

import importlib
import importlib.util
import os
import pathlib
import subprocess
import sys
import textwrap

from numba.core.registry import CPUDispatcher

import vlnkit.compiled as compiled

ROOT = pathlib.Path(__file__).resolve().parents[2]
KERNEL_MODULES = [
    "vlnkit.captioning.bleu",
    "vlnkit.captioning.cider",
    "vlnkit.captioning.ngrams",
    "vlnkit.captioning.rouge",
    "vlnkit.comparison.kernels",
    "vlnkit.continuous.documents",
    "vlnkit.continuous.kernels",
    "vlnkit.datasets.byte_table",
    "vlnkit.datasets.json_grammar",
    "vlnkit.datasets.line_scan",
    "vlnkit.datasets.ragged",
    "vlnkit.evaluation.kernels",
    "vlnkit.evaluation.reward_kernels",
    "vlnkit.io.exactsum",
    "vlnkit.navigation.shortest_paths",
    "vlnkit.scoring.join",
]


def test_every_cached_kernel_of_the_package_is_stamped_with_its_dependencies():
    files = [p for p in (ROOT / "vlnkit").rglob("*.py") if "cache=True" in p.read_text() and p.name != "compiled.py"]
    names = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in files)
    assert names == KERNEL_MODULES  # a new kernel module is listed here, so the checks below cover it
    kernels = 0
    for name in KERNEL_MODULES:
        module = importlib.import_module(name)
        assert "from numba import njit" not in pathlib.Path(module.__file__).read_text(), name
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == name and value._cache is not None:
                locator = value._cache._impl._locator
                assert isinstance(locator, compiled._StampsDependencies), (name, value.py_func.__name__)
                kernels += 1
    assert kernels > 30


def test_dependency_files_follow_imports_across_modules():
    def names(module):
        return {os.path.relpath(f, ROOT) for f in compiled.dependency_files(str(ROOT / module))}

    scanners = names("vlnkit/datasets/line_scan.py")
    assert {"vlnkit/datasets/json_grammar.py", "vlnkit/datasets/byte_table.py"} <= scanners
    assert names("vlnkit/comparison/kernels.py") == {
        "vlnkit/comparison/kernels.py",
        "vlnkit/compiled.py",
        "vlnkit/hashing.py",
    }
    outside = str(pathlib.Path(textwrap.__file__))
    assert compiled.dependency_files(outside) == [outside]


def _run(tmp_path) -> dict:
    code = textwrap.dedent(
        """
        import vlnkit.compiled as compiled
        compiled.CACHED_PACKAGES.append("stalepkg")
        import stalepkg.caller as caller
        print({"value": caller.twice_inner(), "hits": sum(caller.twice_inner.stats.cache_hits.values())})
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 -- the dict the child printed


def test_a_cached_kernel_is_rebuilt_when_the_module_it_calls_changes(tmp_path):
    package = tmp_path / "stalepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "caller.py").write_text(
        "from vlnkit.compiled import njit\nfrom stalepkg.inner import value\n\n\n"
        "@njit(cache=True)\ndef twice_inner():\n    return 2 * value()\n"
    )
    inner = "from vlnkit.compiled import njit\n\n\n@njit(cache=True)\ndef value():\n    return {}\n"
    (package / "inner.py").write_text(inner.format(1))
    assert _run(tmp_path) == {"value": 2, "hits": 0}  # built and cached
    assert _run(tmp_path) == {"value": 2, "hits": 1}  # loaded from the cache
    (package / "inner.py").write_text(inner.format(21))  # numba alone would load the old machine code
    assert _run(tmp_path) == {"value": 42, "hits": 0}
    assert _run(tmp_path) == {"value": 42, "hits": 1}


RACE = """
import io, sys, threading, time
{setup}
import numba.core.errors as errors

done = False


def format_messages():  # what numba does while it compiles, ~100 times per kernel, on the compiling thread
    while not done:
        errors.termcolor().errmsg("x")


threading.Thread(target=format_messages, daemon=True).start()
swapped, deadline = 0, time.monotonic() + {seconds}
while time.monotonic() < deadline and not swapped:
    mine = io.StringIO()
    sys.stderr = mine
    time.sleep(0.001)
    swapped += sys.stderr is not mine
done = True
print(swapped)
"""


def _swapped(setup: str, seconds: float) -> int:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"}
    env["PYTHONPATH"] = str(ROOT)
    code = RACE.format(setup=setup, seconds=seconds)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def test_a_kernel_compiled_on_another_thread_leaves_sys_stderr_alone():
    # numba alone: with colorama installed (it comes with this project's dependencies), the
    # message-formatting thread puts back a stream it saw earlier
    assert _swapped("", seconds=10.0) == (importlib.util.find_spec("colorama") is not None)
    assert _swapped("import vlnkit.compiled", seconds=1.0) == 0
