"""One flags mechanism: every job lists its flags, shares flag meanings, rejects unknown flags; profiles and runners."""

import importlib
import pkgutil
import subprocess
import sys

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

import pipelines
from pipelines.command import Job
from pipelines.flags import add_shared, job_parser, parse
from pipelines.profiles import expand_config
from pipelines.runners import local_runner, one_worker_process
from pipelines.verdict import JobError

JOBS = sorted(
    m.name
    for m in pkgutil.iter_modules(pipelines.__path__)
    if isinstance(getattr(importlib.import_module(f"pipelines.{m.name}"), "JOB", None), Job)
)


def test_every_job_is_found():
    assert set(JOBS) == {
        "build_crafty",
        "build_r4r",
        "score",
        "random_baseline",
        "perturb",
        "build_compat",
        "paraphrase",
        "build_probes",
        "score_probes",
        "score_instructions",
        "report",
    }


@pytest.mark.parametrize("name", JOBS)
def test_help_lists_every_flag_with_its_default(name):
    text = importlib.import_module(f"pipelines.{name}").JOB.parser().format_help()
    for flag in ("--output_dir", "--config", "--skip_if_unchanged", "--max_failure_fraction"):
        assert flag in text
    assert f"(default: output/{name})" in text.replace("\n", " ").replace("  ", " ") or "output/" in text


def test_help_from_the_command_line_lists_flags():
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.build_r4r", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "--distance_threshold" in out and "(default: 3.0)" in out and "--dataset" in out


@pytest.mark.parametrize("name", JOBS)
def test_unknown_flag_stops_with_a_suggestion_and_never_echoes_its_value(name, capsys, tmp_path):
    main = importlib.import_module(f"pipelines.{name}").main
    with pytest.raises(SystemExit) as exc:
        main([f"--output_dir={tmp_path}", "--azure_conection_string=AccountKey=s3cr3t"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown flag --azure_conection_string" in err and "did you mean --azure_connection_string" in err
    assert "s3cr3t" not in err


def test_misspelled_job_flag_is_refused(capsys):
    from pipelines import build_r4r

    with pytest.raises(SystemExit) as exc:
        build_r4r.main(["--distance_treshold=5"])
    assert exc.value.code == 2
    assert "did you mean --distance_threshold" in capsys.readouterr().err


def test_shared_flags_mean_the_same_everywhere():
    shared = {"--output_dir", "--config", "--skip_if_unchanged"}
    for name in JOBS:
        parser = importlib.import_module(f"pipelines.{name}").JOB.parser()
        _, args = parse(parser, [])
        assert args.output_dir == f"output/{name}"
        for flag in shared:
            assert flag in parser.format_help()


def test_old_names_are_aliases():
    from pipelines import build_r4r

    _, args = build_r4r.JOB.parse(["--r2r_path=a.json"])
    assert args.dataset == "a.json"


def test_renamed_probe_kinds_flag_still_works_with_a_warning_naming_the_new_one(capsys):
    """build_probes' probe kinds are --probe_types: --probes is score_probes' probe files."""
    from pipelines import build_probes

    _, args = build_probes.JOB.parse(["--probes=stop"])
    assert args.probe_types == "stop"
    assert "--probes is deprecated and goes in the next release: use --probe_types" in capsys.readouterr().err
    _, args = build_probes.JOB.parse(["--probe_types=direction"])
    assert args.probe_types == "direction" and capsys.readouterr().err == ""
    assert "--probe_types" in build_probes.JOB.parser().format_help()


def test_the_alias_mechanism_keeps_an_old_flag_or_value_working_with_one_warning(capsys):
    """`add_renamed` (a flag) and `renamed_values` (a value of one): the old spelling acts as the new one,
    with one line naming the new one; the new spelling says nothing; the old one is hidden from --help."""
    from pipelines.renamed_flags import add_renamed, renamed_values

    parser = job_parser("demo", "Demo.")
    add_shared(parser, "bootstrap")
    add_renamed(parser, "--old_boot", "--bootstrap")
    parser.add_argument(
        "--mode", choices=("fast", "exact"), default="fast", type=renamed_values({"quick": "fast"}, "--mode")
    )
    for argv in (["--old_boot=7"], ["--old_boot", "7"]):
        _, args = parse(parser, argv)
        assert args.bootstrap == 7  # typed as the new flag
        assert (
            capsys.readouterr().err
            == "warning: --old_boot is deprecated and goes in the next release: use --bootstrap\n"
        )
    _, args = parse(parser, ["--bootstrap=5", "--mode=quick"])
    assert args.bootstrap == 5 and args.mode == "fast"
    assert (
        capsys.readouterr().err == "warning: --mode=quick is deprecated and goes in the next release: use --mode=fast\n"
    )
    _, args = parse(parser, [])
    assert args.bootstrap == 1000 and args.mode == "fast" and capsys.readouterr().err == ""
    assert "--old_boot" not in parser.format_help() and "quick" not in parser.format_help()
    with pytest.raises(JobError, match=r"^argument --mode: invalid choice: 'slow'"):
        parse(parser, ["--mode=slow"])  # an unknown value is still refused by `choices`, in one line


def test_score_probes_bootstrap_keeps_n_boot_for_one_release(capsys):
    """score_probes' --n_boot is --bootstrap (the number of bootstrap replicates, as in score and report)."""
    from pipelines import score_probes

    _, args = score_probes.JOB.parse(["--n_boot=200"])
    assert args.bootstrap == 200 and not hasattr(args, "n_boot")
    assert "--n_boot is deprecated and goes in the next release: use --bootstrap" in capsys.readouterr().err
    _, args = score_probes.JOB.parse([])
    assert args.bootstrap == 1000 and capsys.readouterr().err == ""


def test_build_r4r_heading_convention_keeps_its_old_value_for_one_release(capsys):
    from pipelines import build_r4r

    _, args = build_r4r.JOB.parse(["--heading_convention=published_generator"])
    assert args.heading_convention == "r4r_generator"
    assert "use --heading_convention=r4r_generator" in capsys.readouterr().err


def test_beam_flags_pass_through():
    parser = job_parser("demo", "Demo.")
    add_shared(parser, "dataset")
    options, args = parse(parser, ["--runner=DirectRunner", "--direct_num_workers=2", "--dataset=x"])
    assert options.get_all_options()["direct_num_workers"] == 2 and args.dataset == "x"
    with pytest.raises(JobError, match="unknown flag --bogus"):
        parse(parser, ["--bogus", "1"])


def test_config_profiles_expand_before_explicit_flags(tmp_path):
    profile = tmp_path / "p.yaml"
    profile.write_text("distance_threshold: 2.5\nheading_threshold:\nverbose: true\nquiet: false\nlist: [a, b]\n")
    argv = expand_config(["--runner=DirectRunner", f"--config={profile}", "--distance_threshold=1.0"])
    assert argv == [
        "--distance_threshold=2.5",
        "--verbose",
        "--list=a",
        "--list=b",
        "--runner=DirectRunner",
        "--distance_threshold=1.0",
    ]


def test_profiles_write_inside_the_chosen_output_dir(tmp_path):
    from pipelines import build_r4r

    _, args = build_r4r.JOB.parse(["--config=configs/r4r_val_seen.yaml", f"--output_dir={tmp_path}/mine"])
    assert args.json_output == f"{tmp_path}/mine/R4R_val_seen.json"


def test_packaged_profiles_resolve_by_name_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = expand_config(["--config=configs/r4r_val_seen.yaml"])
    assert any(a.startswith("--dataset=") or a.startswith("--r2r_path=") for a in argv)


@pytest.mark.parametrize(
    "argv, one",
    [
        ([], True),
        (["--runner=DirectRunner"], True),
        (["--runner=DirectRunner", "--direct_running_mode=multi_threading", "--direct_num_workers=2"], True),
        (["--direct_running_mode=multi_processing"], True),  # one worker process is the default
        (["--runner=DirectRunner", "--direct_running_mode=multi_processing", "--direct_num_workers=2"], False),
        (["--direct_running_mode=multi_processing", "--direct_num_workers=0"], False),  # one per core
        (["--runner=PortableRunner"], False),
        (["--runner=DataflowRunner"], False),
    ],
)
def test_one_worker_process_is_known_only_for_the_direct_runner(argv, one):
    assert one_worker_process(PipelineOptions(argv)) is one


@pytest.mark.parametrize(
    "argv, fn_api",
    [
        ([], True),
        (["--runner=DirectRunner"], True),
        (["--runner=directrunner"], True),
        (["--runner=direct"], True),
        (["--runner=SwitchingDirectRunner"], True),
        (["--runner=PrismRunner"], False),  # asked for by name, Prism it is
        (["--runner=BundleBasedDirectRunner"], False),
        (["--runner=PortableRunner"], False),
        (["--runner=DataflowRunner"], False),
    ],
)
def test_direct_runner_means_beams_python_runner_and_nothing_else_is_touched(argv, fn_api):
    from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner

    runner = local_runner(PipelineOptions(argv))
    assert isinstance(runner, FnApiRunner) if fn_api else runner is None


def test_the_python_runner_hands_the_options_to_its_workers():
    """Built as Beam's DirectRunner builds it: worker processes see the job's pipeline options."""
    from google.protobuf import json_format

    runner = local_runner(PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=2"]))
    options = json_format.MessageToDict(runner._provision_info.provision_info.pipeline_options)
    assert int(options["beam:option:direct_num_workers:v1"]) == 2
    assert options["beam:option:direct_running_mode:v1"] == "multi_processing"
