"""Jobs imported together (as in a test session or a scheduler) keep their own flags and defaults."""

import importlib
import pkgutil

import pipelines
from pipelines.common import JobOptions, default_output_dir, expand_config

JOB_MODULES = sorted(m.name for m in pkgutil.iter_modules(pipelines.__path__) if m.name not in ("common", "__init__"))


def test_all_jobs_import_together_and_parse_their_flags():
    modules = {name: importlib.import_module(f"pipelines.{name}") for name in JOB_MODULES}
    assert {"build_r4r", "perturb", "build_compat", "paraphrase", "build_probes", "score_probes"} <= set(modules)
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(["--output_dir=/tmp/x", "--skip_if_unchanged"])
    assert options.view_as(JobOptions).skip_if_unchanged is True
    for name, module in modules.items():
        for attr in dir(module):
            cls = getattr(module, attr)
            if isinstance(cls, type) and issubclass(cls, PipelineOptions) and cls.__module__ == module.__name__:
                view = PipelineOptions([]).view_as(cls)
                # No job may impose its --output_dir default on another.
                assert getattr(view, "output_dir", None) is None, f"{name}.{attr} gives --output_dir a default"


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
    assert default_output_dir("score") == "output/score"


def test_packaged_profiles_resolve_by_name_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = expand_config(["--config=configs/r4r_val_seen.yaml"])
    assert "--r2r_path=../shared/data/r2r/R2R_val_seen.json" in argv
