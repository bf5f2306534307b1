"""Nothing wrong may look right: the failure classes hold for every job (docs/failure_semantics.md).

Each test is parametrized over every job through `tests/hostile.py`, so a new job inherits them.
"""

from __future__ import annotations

import importlib
import json

import pytest

from tests.hostile import JOB_FLAGS, SECRET_VALUES, empty_file, environment

JOBS = sorted(JOB_FLAGS)


def run(job, *flags):
    return importlib.import_module(f"pipelines.{job}").main(["--runner=DirectRunner", *flags])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return environment(tmp_path_factory.mktemp("hostile"))


def test_every_job_has_hostile_inputs():
    from pipelines.cli import JOBS as ALL_JOBS

    assert set(JOBS) == set(ALL_JOBS)


# ---------------------------------------------------------------------------- class 4: inputs silently dropped
@pytest.mark.parametrize("job", JOBS)
def test_a_named_file_that_does_not_exist_stops_the_job(job, inputs, tmp_path, capsys):
    listed = f"{inputs['dataset']},{tmp_path}/missing.json"
    with pytest.raises(SystemExit) as exc:
        run(job, f"--output_dir={tmp_path}/out", *JOB_FLAGS[job](inputs, listed))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/missing.json does not exist" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("job", JOBS)
def test_a_glob_that_matches_nothing_stops_the_job(job, inputs, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        run(job, f"--output_dir={tmp_path}/out", *JOB_FLAGS[job](inputs, f"{tmp_path}/none-*.json"))
    assert exc.value.code == 2 and "matches no file" in capsys.readouterr().err


# ---------------------------------------------------------------------------- class 3: a failed rerun
@pytest.mark.parametrize("job", JOBS)
def test_a_refused_rerun_leaves_the_published_output_as_it_was(job, inputs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "_SUCCESS").write_text("")
    (out / "summary.json").write_text('{"complete": true}')
    with pytest.raises(SystemExit) as exc:
        run(job, f"--output_dir={out}", *JOB_FLAGS[job](inputs, f"{tmp_path}/missing.json"))
    assert exc.value.code == 2
    assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS", "summary.json"]
    assert (out / "summary.json").read_text() == '{"complete": true}'


# ---------------------------------------------------------------------------- class 6: plain user mistakes
@pytest.mark.parametrize("job", JOBS)
def test_an_output_dir_that_is_a_file_is_one_line(job, inputs, tmp_path, capsys):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    with pytest.raises(SystemExit) as exc:
        run(job, f"--output_dir={not_a_folder}", *JOB_FLAGS[job](inputs, inputs["dataset"]))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--output_dir" in err and "is a file" in err and "Traceback" not in err


def test_a_json_output_that_is_a_folder_is_one_line(inputs, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        run(
            "build_r4r",
            f"--output_dir={tmp_path}/out",
            f"--json_output={tmp_path}",
            *JOB_FLAGS["build_r4r"](inputs, inputs["dataset"]),
        )
    assert exc.value.code == 2 and "--json_output" in capsys.readouterr().err


def test_an_unwritable_output_dir_is_one_line(inputs, tmp_path, capsys):
    import os

    if os.geteuid() == 0:
        target = "/proc/vlnkit-out"  # root may write anywhere else; /proc refuses new folders even to root
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = str(locked / "out")
    with pytest.raises(SystemExit) as exc:
        run("build_r4r", f"--output_dir={target}", *JOB_FLAGS["build_r4r"](inputs, inputs["dataset"]))
    assert exc.value.code == 2 and "--output_dir" in capsys.readouterr().err


# ---------------------------------------------------------------------------- class 3: total failure
@pytest.mark.parametrize("job", JOBS)
def test_an_empty_only_input_is_never_a_complete_run(job, inputs, tmp_path, capsys):
    empty = empty_file(tmp_path, "empty.parquet" if job == "score_probes" else "empty.json")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        run(job, f"--output_dir={out}", *JOB_FLAGS[job](inputs, empty))
    assert exc.value.code in (2, 3), capsys.readouterr()
    assert not (out / "_SUCCESS").exists()
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err
    if exc.value.code == 3:
        manifest = json.loads((out / "failed" / "manifest.json").read_text())
        assert manifest["status"] == "failed" and manifest["failure"]
        assert not (out / "current").exists() and not (out / "manifest.json").exists()


def test_too_many_dead_letters_fail_the_run_and_the_knob_allows_them(inputs, tmp_path):
    records = json.loads(open(inputs["dataset"]).read())
    bad = [{"scan": r["scan"], "path_id": r["path_id"] + 1000} for r in records]  # no path: dead letters
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(records[:2] + bad))
    flags = JOB_FLAGS["build_r4r"](inputs, str(mixed))
    with pytest.raises(SystemExit) as exc:
        run("build_r4r", f"--output_dir={tmp_path}/strict", *flags)
    assert exc.value.code == 3 and not (tmp_path / "strict" / "_SUCCESS").exists()
    summary = run("build_r4r", f"--output_dir={tmp_path}/lenient", "--max_failure_fraction=0.9", *flags)
    assert summary["dead_letters"] == len(bad) and (tmp_path / "lenient" / "_SUCCESS").exists()


# ---------------------------------------------------------------------------- class 1: secrets
def test_secrets_never_reach_the_manifest_or_the_log(inputs, tmp_path, capsys):
    out = tmp_path / "out"
    secrets = [f"--{k}={v}" for k, v in SECRET_VALUES.items()]
    run("build_r4r", f"--output_dir={out}", *secrets, *JOB_FLAGS["build_r4r"](inputs, inputs["dataset"]))
    written = "".join(p.read_text(errors="replace") for p in out.iterdir() if p.suffix in (".json", ".jsonl"))
    printed = "".join(capsys.readouterr())
    for value in SECRET_VALUES.values():
        assert value not in written and value not in printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert all(manifest["options"][k] == "<redacted>" for k in SECRET_VALUES)


# ---------------------------------------------------------------------------- class 8: litter
def test_beam_temp_folders_of_a_killed_run_are_removed(inputs, tmp_path):
    out = tmp_path / "out"
    litter = out / "beam-temp-paths-0123456789abcdef"
    litter.mkdir(parents=True)
    (litter / "part").write_text("x")
    (out / "paths-00007-of-00009.parquet").write_text("stale shard of an older run")
    run("build_r4r", f"--output_dir={out}", *JOB_FLAGS["build_r4r"](inputs, inputs["dataset"]))
    names = sorted(p.name for p in out.iterdir())
    assert not any(n.startswith("beam-temp-") for n in names)
    assert "paths-00007-of-00009.parquet" not in names
    assert "summary.json" in names and "_SUCCESS" in names
    assert sorted(p.name for p in (out / "current").iterdir()) == sorted(set(names) - {"current", "versions"})


def test_a_stale_fragments_folder_beside_the_json_output_is_removed(inputs, tmp_path):
    out, r4r = tmp_path / "out", tmp_path / "R4R.json"
    stale = tmp_path / "R4R.json.fragments-0123456789ab"
    stale.mkdir()
    (stale / "fragment-x.jsonl").write_text("{}")
    (tmp_path / "other.json.fragments-0123456789ab").mkdir()  # another file's: not ours to remove
    run("build_r4r", f"--output_dir={out}", f"--json_output={r4r}", *JOB_FLAGS["build_r4r"](inputs, inputs["dataset"]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R4R.json", "other.json.fragments-0123456789ab", "out"]


def _litter_and_fail(_, out: str, json_output: str):
    """A step that leaves what a real run leaves part-way (Beam's temporary folder, JSON fragments), then fails."""
    import os

    for folder in (os.path.join(out, "beam-temp-paths-0123456789abcdef"), json_output + ".fragments-0123456789ab"):
        os.makedirs(folder)
        with open(os.path.join(folder, "part"), "w") as f:
            f.write("x")
    raise RuntimeError("a step failed")


def test_a_pipeline_that_fails_leaves_no_temporary_folders(tmp_path):
    import argparse

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.job import Run

    out, json_output = tmp_path / "out", str(tmp_path / "R4R.json")
    out.mkdir()
    args = argparse.Namespace(
        output_dir=str(out), json_output=json_output, max_failure_fraction=0.0, skip_if_unchanged=False
    )
    ctx = Run("demo", PipelineOptions(["--runner=DirectRunner"]), args)

    def build(pipeline, out):  # writes where the run stages its outputs, as every job's build does
        pipeline | beam.Create([1]) | beam.Map(_litter_and_fail, out.folder, out.staged(json_output))

    with pytest.raises(Exception, match="a step failed"):
        ctx.execute(build, ["paths"], extra_outputs=(json_output,))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and list((out / "versions").iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == ["versions"]  # no lock, no pointer, no version left


def test_a_paraphrase_run_whose_translations_all_fail_is_not_complete_and_is_never_skipped(tmp_path, capsys):
    """With no network every TranslateText call fails UNAVAILABLE: the run must not look complete, and the
    next --skip_if_unchanged run must run again rather than skip forever."""
    import grpc

    from tests.translate_standin import TranslateStandin, sample_records

    data = tmp_path / "r2r.json"
    data.write_text(json.dumps(sample_records()))
    out = tmp_path / "out"
    with TranslateStandin() as server:
        server.fail_next(10**6, grpc.StatusCode.UNAVAILABLE)
        flags = [
            f"--dataset={data}",
            f"--output_dir={out}",
            "--gcp_project=test-project",
            f"--translate_endpoint={server.endpoint}",
            "--translate_insecure",
            "--languages=de",
            "--max_attempts=1",
            "--skip_if_unchanged",
        ]
        for _ in range(2):
            with pytest.raises(SystemExit) as exc:
                run("paraphrase", *flags)
            assert exc.value.code == 3
            assert "run failed" in capsys.readouterr().err
            assert not (out / "_SUCCESS").exists()


@pytest.mark.parametrize("kind", ["corrupt", "wrong_kind"])
def test_a_bad_paraphrases_file_is_one_line(kind, inputs, tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = tmp_path / "para.parquet"
    if kind == "corrupt":
        bad.write_bytes(b"PAR1 not really")
    else:
        pq.write_table(pa.table({"x": [1]}), bad)
    with pytest.raises(SystemExit) as exc:
        run(
            "build_compat",
            f"--output_dir={tmp_path}/out",
            f"--paraphrases={bad}",
            *JOB_FLAGS["build_compat"](inputs, inputs["dataset"]),
        )
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--paraphrases" in err and str(bad) in err and "Traceback" not in err


@pytest.mark.parametrize(
    "read, failed, stages, verdict",
    [
        (10, 10, {"dedupe": 10}, None),  # 20 offered, 10 duplicates: 50% is not more than 0.5
        (2, 6, {"read": 6}, "6 of the 8 records offered"),  # refused while reading: never among `read`
        (12, 7, {"read": 1, "graph": 6}, "7 of the 13 records offered"),  # refused later: already read
        (0, 0, {}, "nothing was read"),
        (0, 3, {"read": 3}, "nothing usable was read"),
    ],
)
def test_each_record_offered_counts_once_in_the_verdict(read, failed, stages, verdict):
    from vlnkit.runs.verdict import Outcome, judge, with_stages

    got = judge(with_stages(Outcome(read, failed), {"dead_letters_by_stage": stages}), max_failure_fraction=0.5)
    assert (got is None) if verdict is None else (verdict in got)
