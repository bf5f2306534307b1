"""The command line of every job: --help without Beam, every flag with its default, one meaning per flag name."""

import argparse
import importlib
import os
import re
import subprocess
import sys

import pytest

from pipelines.cli import JOBS

# Flag names several jobs share with a help text of their own, and why that is still one meaning.
SAME_MEANING_OWN_WORDS = {
    "--dataset": "always the R2R-format dataset the job reads; each job names the formats it accepts",
    "--seed": "always the one seed of the job's random choices; each job names what it draws",
    "--predictions": "always the agents' outputs (NAME=FILES names an agent); each job names what an output holds",
    "--bootstrap": "always the number of bootstrap replicates; each job names what it resamples",
}


def parser_of(job: str) -> argparse.ArgumentParser:
    return importlib.import_module(f"pipelines.{job}").JOB.parser()


def visible_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS and a.dest != "help"]


def help_blocks(text: str) -> dict[str, str]:
    """--help text -> {option string: its whole entry}: an entry starts with '  -' and runs to the next."""
    blocks: dict[str, str] = {}
    for entry in re.split(r"\n(?=  -)", text):
        head = entry.strip().split("  ")[0]
        for option in re.findall(r"--[a-z0-9_]+", head):
            blocks[option] = " ".join(entry.split())
    return blocks


@pytest.mark.parametrize("job", JOBS)
def test_help_names_no_beam_module_and_lists_every_flag_with_its_default(job):
    """`python -m pipelines.<job> --help` imports nothing of Beam (the import log says what was imported)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", f"pipelines.{job}", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "100000"},  # no wrapping inside a default,
    )
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "pipelines.command" in imported  # the log is the one of this command
    assert not [m for m in imported if m.split(".")[0] in ("apache_beam", "transforms")]
    blocks = help_blocks(done.stdout)
    for action in visible_actions(parser_of(job)):
        entry = blocks[action.option_strings[0]]
        assert f"(default: {action.default})" in entry, (job, action.option_strings, entry)


def test_listing_the_jobs_imports_none_of_them():
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from pipelines.cli import main; main(['--help'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "pipelines.cli" in imported
    assert not [m for m in imported if m.split(".")[0] in ("apache_beam", "transforms", "numpy")]
    assert not [m for m in imported if m in {f"pipelines.{job}" for job in JOBS}]
    for job in JOBS:
        assert f"  {job} " in done.stdout


def test_a_flag_name_means_one_thing_in_every_job():
    """Two jobs with the same flag give it the same help text, unless it is listed above with the reason."""
    helps: dict[str, dict[str, str]] = {}
    for job in JOBS:
        for action in visible_actions(parser_of(job)):
            name, *aliases = action.option_strings
            helps.setdefault(name, {})[job] = action.help
            for alias in aliases:  # another spelling: of the same flag in every job
                helps.setdefault(alias, {})[job] = f"alias of {name}"
    differing = {flag: by_job for flag, by_job in helps.items() if len(set(by_job.values())) > 1}
    assert set(differing) <= set(SAME_MEANING_OWN_WORDS), {
        f: differing[f] for f in set(differing) - set(SAME_MEANING_OWN_WORDS)
    }
    for flag in SAME_MEANING_OWN_WORDS:  # the allow-list holds only flags that need it
        assert flag in differing, flag


def test_settings_left_out_of_the_fingerprint_are_flags_of_their_job():
    """The one list of settings that cannot change outputs names real flags (a renamed flag cannot linger)."""
    from pipelines.provenance import NOT_FINGERPRINTED, NOT_FINGERPRINTED_IN_JOB, fingerprinted_settings

    every = {a.dest for job in JOBS for a in parser_of(job)._actions}
    assert NOT_FINGERPRINTED <= every
    for job, names in NOT_FINGERPRINTED_IN_JOB.items():
        parser = parser_of(job)
        assert names <= {a.dest for a in parser._actions}, job
        one, two = parser.parse_args([]), parser.parse_args([])
        for name in names:
            setattr(two, name, "changed")
        assert fingerprinted_settings(one) == fingerprinted_settings(two)
    perturb = parser_of("perturb")
    assert fingerprinted_settings(perturb.parse_args(["--seed=1"])) != fingerprinted_settings(
        perturb.parse_args(["--seed=2"])
    )
