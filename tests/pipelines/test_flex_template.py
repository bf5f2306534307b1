"""The Flex Templates of the jobs: shipped metadata equal to the jobs' flags, valid for the Dataflow API, values the
jobs accept; the Dockerfile's pieces that must agree; the launcher's entry point running a job."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys

import apache_beam
import pytest
import yaml

from pipelines import flex_template
from pipelines.cli import JOBS
from pipelines.flags import parse
from pipelines.verdict import JobError
from tests.conftest import ROOT


def _shipped(job: str) -> str:
    return (ROOT / flex_template.metadata_path(job)).read_text(encoding="utf-8")


def _help_flags(job: str) -> set[str]:
    """Every flag --help lists (its first long spelling), read from the help text itself."""
    text = importlib.import_module(f"pipelines.{job}").JOB.parser().format_help()
    names = {m[1] for m in re.finditer(r"^  (?:-h, )?--([a-z0-9_]+)", text, re.M)}
    return names - {"help"}


@pytest.mark.parametrize("job", JOBS)
def test_shipped_metadata_is_what_the_job_declares_and_names_exactly_its_flags(job):
    assert _shipped(job) == flex_template.metadata_text(job), "run: python -m pipelines.flex_template"
    names = [p["name"] for p in json.loads(_shipped(job))["parameters"]]
    assert len(names) == len(set(names)) and set(names) == _help_flags(job)


def test_the_check_command_finds_a_stale_file(tmp_path, capsys):
    assert flex_template.main(["--check", f"--root={ROOT}"]) == 0
    assert flex_template.main([f"--root={tmp_path}"]) == 0  # writes every file
    stale = tmp_path / flex_template.metadata_path("score")
    stale.write_text(stale.read_text().replace("Output dir", "Output"))
    capsys.readouterr()
    assert flex_template.main(["--check", f"--root={tmp_path}"]) == 1
    assert capsys.readouterr().out.strip() == f"differs from its job: {flex_template.metadata_path('score', tmp_path)}"


@pytest.mark.parametrize("job", JOBS)
def test_metadata_is_what_the_dataflow_api_takes(job):
    from google.cloud import dataflow_v1beta3

    # Strict parsing: a field the API does not have, or a value of the wrong type, raises.
    parsed = dataflow_v1beta3.TemplateMetadata.from_json(_shipped(job), ignore_unknown_fields=False)
    assert parsed.name == f"vlnkit {job}" and parsed.description
    for p in parsed.parameters:
        assert p.name and p.label and p.help_text.endswith(".")
        for regex in p.regexes:
            re.compile(regex)
        if p.default_value:
            assert all(re.fullmatch(r, p.default_value) for r in p.regexes), (p.name, p.default_value)
        if p.param_type == dataflow_v1beta3.ParameterType.ENUM:
            assert [o.value for o in p.enum_options] and all(
                re.fullmatch(p.regexes[0], o.value) for o in p.enum_options
            )
    required = [p.name for p in parsed.parameters if not p.is_optional]
    assert required == ["output_dir"]


@pytest.mark.parametrize("job", JOBS)
def test_every_default_value_is_one_the_job_accepts(job):
    params = json.loads(_shipped(job))["parameters"]
    argv = [f"--{p['name']}={p['defaultValue']}" for p in params if "defaultValue" in p and p["name"] != "config"]
    parser = importlib.import_module(f"pipelines.{job}").JOB.parser()
    _, args = parse(parser, flex_template.switches_as_flags(job, argv))
    defaults = vars(parse(parser, [])[1])
    assert vars(args) == defaults


SAMPLES = ["0", "3", "+3", "-1", "007", "0.5", ".5", "5.", "1e3", "-2.5E-2", "1_000", " 3 ", "-0", "0_1", "1__0", "_1"]
SAMPLES += ["inf", "nan", "1,5", "", "abc", "0x10", "1e", "."]


@pytest.mark.parametrize("job", ["score", "report", "paraphrase", "build_r4r"])
def test_a_number_the_job_accepts_passes_the_parameters_pattern(job):
    """The pattern never refuses what the job takes (ranges are the job's to check, in one line)."""
    parser = importlib.import_module(f"pipelines.{job}").JOB.parser()
    numbers = [p for p in json.loads(_shipped(job))["parameters"] if p["paramType"] == "NUMBER"]
    assert numbers
    for p in numbers:
        for value in SAMPLES:
            try:
                parse(parser, [f"--{p['name']}={value}"])
                accepted = True
            except JobError:
                accepted = False
            if value in ("inf", "nan"):  # no flag means them; a float flag takes them, the pattern does not
                continue
            assert bool(re.fullmatch(p["regexes"][0], value)) >= accepted, (p["name"], value)
            if p["name"] in ("seed", "num_shards", "bootstrap", "keep_versions", "num_paths"):  # integers exactly
                assert bool(re.fullmatch(p["regexes"][0], value)) == accepted, (p["name"], value)


def test_switches_come_as_true_or_false():
    assert flex_template.switches_as_flags("build_r4r", ["--landmark_layout=true", "--skip_if_unchanged=False"]) == [
        "--landmark_layout"
    ]
    assert flex_template.switches_as_flags("score", ["--dataset=a=true.json", "--keep_repeats=TRUE"]) == [
        "--dataset=a=true.json",
        "--keep_repeats",
    ]
    with pytest.raises(JobError, match="--keep_repeats=yes: a switch takes true or false"):
        flex_template.switches_as_flags("score", ["--keep_repeats=yes"])


# ---------------------------------------------------------------------------- the Dockerfile
def _dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of each instruction of the Dockerfile, comments and continuations resolved."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [tuple(line.split(None, 1)) for line in lines]


def test_the_dockerfile_base_image_is_the_beam_the_project_runs_and_dataflow_yaml_names():
    steps = _dockerfile()
    bases = [args for op, args in steps if op == "FROM"]
    profile = yaml.safe_load((ROOT / "configs" / "dataflow.yaml").read_text())
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert bases == [profile["sdk_container_image"]] == [f"apache/beam_python{python}_sdk:{apache_beam.__version__}"]
    (launcher,) = [args for op, args in steps if op == "COPY" and "--from=" in args]
    image, source, target = launcher.removeprefix("--from=").split()
    assert image.startswith(f"gcr.io/dataflow-templates-base/python{python.replace('.', '')}-template-launcher-base:")
    assert source == target == "/opt/google/dataflow/python_template_launcher"
    assert ("ENTRYPOINT", '["/opt/apache/beam/boot"]') in steps


def test_the_dockerfile_entry_point_is_a_file_that_launches_the_images_job():
    steps = _dockerfile()
    env = dict(args.split("=", 1) for op, args in steps if op == "ENV")
    workdir = dict(args.split("=", 1) for op, args in steps if op == "ARG" and "=" in args)["WORKDIR"]
    assert ("COPY", ". ${WORKDIR}") in steps and ("WORKDIR", "${WORKDIR}") in steps
    entry = env["FLEX_TEMPLATE_PYTHON_PY_FILE"].replace("${WORKDIR}", workdir)
    local = ROOT / os.path.relpath(entry, workdir)
    assert local == ROOT / flex_template.FOLDER / "main.py" and local.exists()
    assert "from pipelines.flex_template import launch" in local.read_text()
    assert env[flex_template.JOB_VARIABLE] == "${JOB}" and ("ARG", "JOB") in steps
    # The project's folders reach the image (`pip install` reads them), tests and history do not.
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line.strip()}
    assert not ignored & {"pipelines", "vlnkit", "transforms", "configs", "setup.py", flex_template.FOLDER}
    assert {".git", "tests"} <= ignored


# ---------------------------------------------------------------------------- the launcher's entry point
def _launch(tmp_path, *flags, job="build_r4r"):
    env = {**os.environ, flex_template.JOB_VARIABLE: job, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(ROOT / flex_template.FOLDER / "main.py"), *flags],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_entry_point_runs_the_images_job_on_the_launchers_flags(tmp_path):
    """As Dataflow's launcher runs it: the Python file by its path, every parameter as --name=value."""
    out = tmp_path / "out"
    flags = ["--runner=DirectRunner", f"--output_dir={out}", "--synthetic_paths_per_scan=8", "--landmark_layout=false"]
    first = _launch(tmp_path, *flags, "--skip_if_unchanged=false")
    assert first.returncode == 0, first.stderr
    assert (out / "_SUCCESS").exists() and "paths generated" in first.stdout
    again = _launch(tmp_path, *flags, "--skip_if_unchanged=true")
    assert again.returncode == 0, again.stderr
    assert "unchanged since the complete run" in again.stdout


def test_the_entry_point_refuses_a_job_it_does_not_know_and_a_switch_value(tmp_path):
    unknown = _launch(tmp_path, "--runner=DirectRunner", job="scores")
    assert unknown.returncode == 1 and "VLNKIT_JOB='scores' names no job" in unknown.stderr
    bad = _launch(tmp_path, "--keep_repeats=yes", job="score")
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: score: --keep_repeats=yes: a switch takes true or false"


def test_the_cloud_scheduler_body_in_docs_is_a_launch_request_naming_only_the_templates_parameters():
    from google.cloud import dataflow_v1beta3

    from tests.docs.test_docs import blocks

    page = ROOT / "docs" / "cloud.md"
    (body,) = [code for _, lang, _, code in blocks(page) if lang == "json" and "launchParameter" in code]
    request = dataflow_v1beta3.LaunchFlexTemplateRequest.from_json(body, ignore_unknown_fields=False)
    launch = request.launch_parameter
    job = launch.container_spec_gcs_path.rsplit("/", 1)[-1].removesuffix(".json")
    params = {p["name"]: p for p in json.loads(_shipped(job))["parameters"]}
    assert set(launch.parameters) <= set(params)
    assert {n for n, p in params.items() if not p["isOptional"]} <= set(launch.parameters)
    for name, value in launch.parameters.items():
        assert all(re.fullmatch(r, value) for r in params[name].get("regexes", [])), (name, value)
    assert launch.environment.sdk_container_image.endswith(f"/vlnkit-{job}:0.1.0")
    # The same image and template names as the build commands above it.
    text = page.read_text()
    assert "--build-arg JOB=$JOB" in text and "vlnkit-$JOB:$TAG" in text and "templates/$JOB.json" in text
