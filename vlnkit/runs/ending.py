"""The last step of every run, wherever the pipeline runs: judge what was written, record it, publish it.

After every write of a run has finished, one step (`finish`) reads back the declared outputs
(`vlnkit.io.integrity`), judges the run (`vlnkit.runs.verdict`), writes `manifest.json` (`vlnkit.runs.manifest`)
and, for a good run, `_SUCCESS`, switches the pointer, prunes old versions and releases the lock
(`vlnkit.runs.publication`). It runs as the pipeline's last step (`transforms.publish.publish`), so a run
publishes the same way whether its launcher waits for it, exits, or is killed: a launcher that waits
reads the verdict back from the manifest (`read_ending`).

An `Ending` is what the launcher decides before the pipeline runs and the step needs (it pickles: it
travels to a worker): the job's declarations, the run's settings, its inputs, the code that launched it.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from vlnkit.io import fileio, integrity, layout
from vlnkit.io.dataset_card import README, task_licenses, write_card
from vlnkit.io.layout import fault_point
from vlnkit.io.redact import redact
from vlnkit.provenance import describe_inputs, fingerprint
from vlnkit.runs.manifest import code_version, describe_outputs, manifest
from vlnkit.runs.publication import Publication
from vlnkit.runs.verdict import Outcome, default_outcome, judge, with_stages, written

SUMMARY = "summary.json"
DEAD_LETTER_PREFIX = "dead_letter"


class Failed(RuntimeError):
    """A run that nobody waits for was judged failed: the runner shows the job as failed, with this reason
    (its manifest, in the run's folder, says the same)."""


@dataclass
class Ending:
    """What the last step of one run needs: the run's publication (folder, lock, pointer generation), what
    the job declares it writes, how it is judged, and the facts the manifest records."""

    job: str
    publication: Publication
    prefixes: list[str]  # the sharded outputs (`<prefix>-SSSSS-of-NNNNN.*`), dead letters included
    staged: dict[str, str]  # each other output as the job names it -> where this run wrote it
    max_failure_fraction: float
    settings: dict  # the job's redacted settings (what the fingerprint hashes)
    options: dict  # every pipeline option, redacted
    inputs: list[tuple[str, int | None]]  # (path, bytes) of every input, hashed for the manifest (and redacted)
    code: dict  # the launcher's `code_identity()`
    outcome: Callable[[dict], Outcome] = default_outcome
    declared: Callable[[dict], dict[str, int | None]] | None = None
    digests_file: str | None = None  # where a launcher on this machine leaves the inputs' checksums
    waited: bool = True  # a launcher reads the verdict back; else a failed run fails the job (`Failed`)
    started: float = field(default_factory=time.time)

    @property
    def folder(self) -> str:
        return self.publication.folder


def digests_file(version: str) -> str:
    """Where the launcher of a run on the local runner leaves its inputs' checksums for the run's last step
    (in its own process or in a worker process of this machine), by version (`hand_digests`)."""
    return os.path.join(tempfile.gettempdir(), f"vlnkit-inputs-{version}.json")


def hand_digests(digests: Future, path: str) -> None:
    """Hand the last step of a run on this machine (the local runner, in this process or in its worker
    processes) the inputs' checksums through the file `path`: created and locked now, before the pipeline
    runs, written and unlocked once they are computed (empty when hashing failed). The step's read waits
    on the lock (`input_digests`); a launcher that dies releases it with its process."""
    handed = open(path, "wb")  # noqa: SIM115 -- closed by `write`, which releases the lock
    fcntl.flock(handed, fcntl.LOCK_EX)

    def write(done: Future) -> None:
        try:
            if done.exception() is None:
                handed.write(json.dumps(done.result()).encode())
        finally:
            handed.close()

    digests.add_done_callback(write)


def input_digests(ending: Ending) -> list[dict]:
    """The inputs' checksums as a local launcher handed them over (`hand_digests`: the read waits until the
    launcher has written them), else read here (a launcher that failed to hash them). A run on any other
    runner gets them from a branch of its pipeline (`transforms.publish.publish`), so that its workers
    read its inputs, not the launcher."""
    if ending.digests_file and os.path.exists(ending.digests_file):
        with open(ending.digests_file, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_SH)  # held by the launcher until its checksums are written
            data = f.read()
        os.remove(ending.digests_file)
        if data:
            return json.loads(data)
    return describe_inputs(ending.inputs)


def expected_outputs(ending: Ending, summary: dict) -> dict[str, int | None]:
    """The job's declaration (from the run's own tallies) as names inside the version folder, with what
    every job writes: one dead-letter line per dead letter counted, summary.json and the dataset card.

    A declared key is a sharded output's prefix, an output the job named (as staged), a path inside the
    published folder, or a name inside the version folder."""
    pub = ending.publication
    expected: dict[str, int | None] = {
        f"{DEAD_LETTER_PREFIX}-*-of-*": int(summary.get("dead_letters", 0) or 0),
        SUMMARY: None,
        README: None,
    }
    where = {**ending.staged, **{p: p for p in ending.staged.values()}}
    for key, rows in (ending.declared(summary) if ending.declared else {}).items():
        if key in ending.prefixes:
            name = f"{key}-*-of-*"
        elif key in where or key.startswith(pub.folder.rstrip("/") + "/"):
            name = integrity.relative(pub.folder, where.get(key, key))
        elif key.startswith(pub.root.rstrip("/") + "/"):
            name = integrity.relative(pub.root, key)
        else:
            name = key
        expected[name] = rows
    return expected


def finish(ending: Ending, digests: list[dict] | None = None) -> str | None:
    """Judge and end one run whose every write has finished; the reason it failed, or None once published.

    Safe to run again (a runner retries a step whose worker died): a run whose version the pointer already
    names is left as it is; any earlier attempt that stopped short is done again from the start. A failed
    run's folder is kept (and marked `failed` on local disk) with its manifest; the published version stays.
    """
    pub = ending.publication
    if layout.current_version(pub.root) == pub.version:
        pub.end()
        return None
    fault_point("written")
    with fileio.open_read(fileio.join(pub.folder, SUMMARY)) as f:
        summary = json.load(f)
    inputs = redact(digests if digests is not None else input_digests(ending))
    # The card is written from the same facts as the manifest, before it, so the manifest records its checksum.
    card = {
        "job": ending.job,
        "version": pub.version,
        "settings": ending.settings,
        "inputs": inputs,
        "licenses": task_licenses(summary),
    }
    outputs = write_card(pub.folder, describe_outputs(pub.folder), **card, code_version=code_version(ending.code))
    problems = integrity.check(pub.folder, expected_outputs(ending, summary), outputs)
    verdict = written(problems) or judge(with_stages(ending.outcome(summary), summary), ending.max_failure_fraction)
    facts = {
        "settings": ending.settings,
        "wall_seconds": round(time.time() - ending.started, 3),
        "options": ending.options,
        "inputs": inputs,
        "outputs": outputs,
        "summary": summary,
    }
    if problems:
        facts["output_problems"] = [p.to_dict() for p in problems]
    run_fingerprint = fingerprint(ending.job, ending.settings, inputs, ending.code["source_sha256"])
    record = manifest(
        job=ending.job,
        verdict=verdict,
        run_fingerprint=run_fingerprint,
        version=pub.version,
        code=ending.code,
        **facts,
    )
    with fileio.open_write(fileio.join(pub.folder, layout.MANIFEST)) as f:
        f.write(json.dumps(record, indent=2, sort_keys=True, default=str).encode())
    fault_point("manifest")
    if verdict:
        pub.fail()
        pub.end()
        return verdict
    with fileio.open_write(fileio.join(pub.folder, layout.SUCCESS)) as f:
        f.write(b"")
    fault_point("success")
    owned = [f"{p}-*-of-*" for p in ending.prefixes] + [SUMMARY, layout.MANIFEST, layout.SUCCESS, "beam-temp-*"]
    pub.publish(owned)
    pub.end()
    return None


def read_ending(folder: str) -> dict | None:
    """The manifest the last step wrote into a run's folder, or None when it wrote none (the step never ran)."""
    path = fileio.join(folder, layout.MANIFEST)
    if not fileio.exists(path):
        return None
    with fileio.open_read(path) as f:
        return json.load(f)
