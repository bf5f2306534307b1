"""What a launcher knows about a run's provenance: the settings that decide its outputs (and what
`--skip_if_unchanged` compares), the inputs it names, and Beam's counters of a run it waited for.

The checksums and the code identity come from the Beam-free core (`vlnkit.provenance`); the manifest
itself is written by the pipeline's last step (`vlnkit.runs.manifest`, `vlnkit.runs.ending`).
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from concurrent.futures import Future

from vlnkit.io import fileio, inputs, integrity
from vlnkit.navigation.graph import CONNECTIVITY_SUFFIX
from vlnkit.provenance import describe_inputs, fingerprint
from vlnkit.runs.manifest import describe_outputs, manifest

__all__ = [
    "NOT_FINGERPRINTED",
    "NOT_FINGERPRINTED_IN_JOB",
    "connectivity_files",
    "describe_inputs",
    "describe_outputs",
    "fingerprint",
    "fingerprinted_settings",
    "in_background",
    "intact",
    "manifest",
    "metrics_table",
]


# Flags whose values cannot change a job's outputs, left out of the --skip_if_unchanged fingerprint (and
# of the manifest's settings): first those of every job, then those of one job. Declared here only.
NOT_FINGERPRINTED = frozenset(
    {"config", "skip_if_unchanged", "plan_only", "max_cost_usd", "keep_versions", "lock_lease_seconds", "no_wait"}
)
NOT_FINGERPRINTED_IN_JOB = {
    "paraphrase": frozenset({"seed"}),  # seeds the jitter of retries only
    "score_instructions": frozenset({"spice_cache"}),  # where parses are kept, not what they are
}


def fingerprinted_settings(args: argparse.Namespace) -> dict:
    """The job's own flag values that decide its output: what --skip_if_unchanged compares, what the
    manifest records as the run's settings.

    >>> fingerprinted_settings(argparse.Namespace(_job="paraphrase", seed=3, languages="de", config=None))
    {'languages': 'de'}
    >>> fingerprinted_settings(argparse.Namespace(_job="perturb", seed=3, methods="random_walk"))
    {'methods': 'random_walk', 'seed': 3}
    """
    ignored = NOT_FINGERPRINTED | NOT_FINGERPRINTED_IN_JOB.get(getattr(args, "_job", None), frozenset())
    return {k: v for k, v in sorted(vars(args).items()) if k not in ignored and not k.startswith("_")}


def connectivity_files(connectivity_dir: str | None) -> list[tuple[str, int]]:
    """The graph files a run depends on (inputs of the manifest and of --skip_if_unchanged)."""
    if not connectivity_dir:
        return []
    return inputs.match_current(fileio.join(connectivity_dir, "*" + CONNECTIVITY_SUFFIX))


def in_background(fn: Callable, *args) -> Future:
    """Run fn(*args) in a daemon thread (a failed run does not wait for it at exit); its Future."""
    future: Future = Future()

    def work() -> None:
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to whoever asks for the result
            future.set_exception(exc)

    threading.Thread(target=work, name="vlnkit-background", daemon=True).start()
    return future


def metrics_table(result) -> list[dict]:
    """Beam counters of a finished pipeline as rows (namespace, name, value)."""
    try:
        counters = result.metrics().query()["counters"]
    except Exception:  # some runners do not support metric queries
        return []
    totals: dict[tuple[str, str], int] = {}
    for c in counters:
        key = (c.key.metric.namespace, c.key.metric.name)
        value = c.committed if c.committed is not None else c.attempted
        totals[key] = totals.get(key, 0) + (value or 0)
    return [{"namespace": ns, "name": name, "value": v} for (ns, name), v in sorted(totals.items())]


def intact(folder: str, previous: dict) -> bool:
    """Whether a published version still holds what its manifest records (sizes, checksums, rows), so a
    run may be skipped as unchanged; a manifest of an older vlnkit (no checksums) only needs its files."""
    if all("crc32c" in o for o in previous.get("outputs", [])):
        return not integrity.verify_version(folder)
    return all(fileio.exists(o["path"]) for o in previous.get("outputs", []))
