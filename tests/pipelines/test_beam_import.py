"""Beam imported without pandas and MongoDB's packages: it works, they import afterwards, and a Beam
that needs one of them is imported whole."""

import subprocess
import sys
import textwrap

import pytest


def run_fresh(code: str) -> str:
    """`code` in a new interpreter (Beam must not be imported yet); its stdout."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_beam_starts_without_the_unused_adapters_and_they_load_afterwards():
    out = run_fresh(
        """
        import sys
        from pipelines.beam_import import import_beam
        beam = import_beam()
        print("loaded during Beam's import:", sorted(m for m in ("pandas", "pymongo", "bson") if m in sys.modules))
        with beam.Pipeline(runner="DirectRunner") as p:
            _ = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2)
        import pandas
        print("pandas afterwards:", pandas.DataFrame({"a": [1]}).shape)
        """
    )
    assert "loaded during Beam's import: []" in out
    assert "pandas afterwards: (1, 1)" in out
    assert "bson" not in out.split("pandas afterwards")[0].replace("'bson'", "")  # no warning printed


@pytest.mark.parametrize("needed", ["fastavro"])
def test_a_beam_that_needs_a_refused_package_is_imported_whole(needed):
    """fastavro stands for a package Beam would import without a guard: the process starts over."""
    out = run_fresh(
        f"""
        import sys
        import pipelines.beam_import as bi
        bi.UNUSED = (*bi.UNUSED, {needed!r})  # Beam imports it without a guard
        beam = bi.import_beam()
        with beam.Pipeline(runner="DirectRunner") as p:
            _ = p | beam.Create([1]) | beam.Map(str)
        print("ok", {needed!r} in sys.modules, sys.meta_path[0].__class__.__name__)
        """
    )
    assert "ok True" in out and "_Refuse" not in out
