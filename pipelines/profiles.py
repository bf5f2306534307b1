r"""Profiles: `--config=FILE.yaml` (repeatable) expands to flags before parsing.

Explicit flags win over profiles, later profiles over earlier ones. Relative paths in a profile are
relative to the directory you run from; a profile value may say `{output_dir}` (filled in by
`pipelines.flags.parse`), so a profile never writes outside the output folder the user chose unless
it names a path of its own. A profile path that does not exist is looked up in the installed
`configs` package, so `--config=configs/r4r_train.yaml` works from any directory.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.yaml")
    >>> _ = open(path, "w").write("seed: 3\nkeep_repeats: true\nlanguages: [de, fr]\n")
    >>> expand_config([f"--config={path}", "--seed=4"])
    ['--seed=3', '--keep_repeats', '--languages=de', '--languages=fr', '--seed=4']
"""

from __future__ import annotations

import os

import yaml

from pipelines.verdict import JobError


def config_to_argv(path: str) -> list[str]:
    """A YAML profile of `flag: value` pairs as command-line arguments (lists become repeated flags)."""
    try:
        with open(path) as f:
            data = yaml.safe_load(f) or {}
    except OSError as exc:
        raise JobError(f"--config {path}: cannot read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise JobError(f"--config {path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise JobError(f"--config {path}: expected a mapping of flag names to values")
    argv = []
    for key, value in data.items():
        for v in value if isinstance(value, list) else [value]:
            if v is None:
                continue
            if isinstance(v, bool):
                if v:
                    argv.append(f"--{key}")
                continue
            argv.append(f"--{key}={v}")
    return argv


def resolve_config_path(path: str) -> str:
    """A profile path as given, or else the same name inside the installed `configs` package."""
    if os.path.exists(path):
        return path
    try:
        import configs as _configs

        packaged = os.path.join(os.path.dirname(_configs.__file__), os.path.basename(path))
    except ImportError:
        return path
    return packaged if os.path.exists(packaged) else path


def expand_config(argv: list[str]) -> list[str]:
    """Replace `--config=FILE` (or `--config FILE`) by the profile's flags; explicit flags still win."""
    out, configs, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--config="):
            configs.append(arg.split("=", 1)[1])
        elif arg == "--config" and i + 1 < len(argv):
            configs.append(argv[i + 1])
            i += 1
        else:
            out.append(arg)
        i += 1
    prefix = [a for c in configs for a in config_to_argv(resolve_config_path(c))]
    return prefix + out  # later flags override earlier ones in argparse
