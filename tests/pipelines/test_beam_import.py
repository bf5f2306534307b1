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
    assert "ok True" in out and "Refuse" not in out


def test_a_local_job_command_starts_beam_without_google_cloud_and_refuses_gs_paths_by_name():
    out = run_fresh(
        """
        import sys
        from pipelines.beam_import import import_beam, job_command
        from vlnkit.io import fileio
        with job_command():
            beam = import_beam(["--runner=DirectRunner", "--dataset=/data/R2R_val_unseen.json"])
        print("loaded:", sorted(m for m in ("google.cloud.storage", "google.auth", "apache_beam.io.gcp.gcsfilesystem", "apache_beam.io.gcp.bigquery")
                                if m in sys.modules))
        with beam.Pipeline(runner="DirectRunner") as p:
            _ = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2)
        try:
            fileio.exists("gs://bucket/R2R_val_unseen.json")
        except OSError as exc:
            print("refused:", exc)
        import google.auth  # the paraphrase job's translation client needs it afterwards
        print("google.auth afterwards:", google.auth.__name__)
        """
    )
    assert "loaded: []" in out
    assert "refused: gs://bucket/R2R_val_unseen.json: this job started Apache Beam without Google Cloud" in out
    assert "google.auth afterwards: google.auth" in out
    assert "WARNING" not in out and "apitools" not in out  # Beam's warning about apitools is dropped


@pytest.mark.parametrize(
    "command_line, in_a_command",
    [
        (["--runner=DirectRunner", "--output_dir=gs://bucket/out"], True),  # names Cloud Storage
        (["--config=configs/dataflow.yaml", "--runner=DataflowRunner"], True),  # names Dataflow
        (["--runner=DirectRunner"], False),  # not a job's command: a test session, a notebook
    ],
)
def test_beam_keeps_google_cloud_when_the_command_line_names_it_or_the_process_is_not_one_job(
    command_line, in_a_command
):
    out = run_fresh(
        f"""
        import contextlib, sys
        from pipelines.beam_import import import_beam, job_command
        with job_command() if {in_a_command} else contextlib.nullcontext():
            import_beam({command_line!r})
        from apache_beam.io.filesystems import FileSystems
        print("gcs:", type(FileSystems.get_filesystem("gs://bucket/x")).__name__)
        """
    )
    assert "gcs: GCSFileSystem" in out


def test_uses_google_cloud():
    from pipelines.beam_import import uses_google_cloud

    assert uses_google_cloud(["--predictions=a=gs://b/p.json"])
    assert uses_google_cloud(["--runner", "dataflow"])
    assert not uses_google_cloud(["--runner=DirectRunner", "--output_dir=/tmp/gsx"])


def test_a_job_command_converts_lists_with_pyarrow_without_importing_pandas():
    out = run_fresh(
        """
        import sys
        from pipelines.beam_import import job_command
        with job_command():
            import pyarrow as pa
            table = pa.table({"viewpoint": ["a", "b"], "ne": [0.5, 1.5]})
            print("pandas loaded:", "pandas" in sys.modules)
            print("to_pandas:", table.to_pandas().shape)  # pyarrow's own conversions import it when asked
            import pandas as pd
            print("series:", pa.array(pd.Series([1.0, None])).null_count)
        """
    )
    import pyarrow

    # pyarrow 17 and later remember that pandas was refused once; pyarrow 16 (what Beam 2.62 requires) asks
    # again on every conversion and loads pandas on the first one: the saving is lost there
    # (docs/architecture.md, "Layout", beam_import.py), the conversions still work.
    if int(pyarrow.__version__.split(".")[0]) >= 17:
        assert "pandas loaded: False" in out
    assert "to_pandas: (2, 2)" in out and "series: 1" in out
