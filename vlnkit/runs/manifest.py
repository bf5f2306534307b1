"""What a run records about itself in `manifest.json`: how it ended, the settings that decide its
outputs, its inputs and their checksums, the code, and the outputs it wrote as read back (size, rows,
crc32c, schema).

The manifest is written by the pipeline's last step, on a worker when the runner has workers, so it
holds what the run itself knows. Beam's counters are not among it: a runner reports them to whoever
waits for the job (the launcher prints them), not to the job's own steps; the job's tallies, which
decide the verdict, are in the manifest's `summary`.
"""

from __future__ import annotations

import datetime

from vlnkit.io import integrity
from vlnkit.provenance import code_identity


def describe_outputs(folder: str) -> list[dict]:
    """Every file a run wrote into its version folder (but the manifest and `_SUCCESS`), as read back:
    its `name` inside the folder, path, bytes, rows, crc32c and, for Parquet, the declared schema
    (`vlnkit.io.integrity.describe`)."""
    return [
        {"name": integrity.relative(folder, path), **integrity.describe(path)} for path in integrity.files_of(folder)
    ]


def manifest(
    *, job: str, verdict: str | None, run_fingerprint: str, version: str, code: dict | None = None, **facts
) -> dict:
    """The manifest of a finished run: its status and, besides `facts` (settings, options, inputs,
    outputs, summary, wall_seconds), the code that made it (`code`: the launcher's `code_identity()`,
    this process's when not given) and the version it wrote.

        >>> m = manifest(job="demo", verdict=None, run_fingerprint="f", version="v1", summary={})
        >>> m["status"], m["version"], sorted(m["code"])
        ('complete', 'v1', ['git_revision', 'source_sha256', 'version'])
    """
    code = code or code_identity()
    return {
        "job": job,
        "status": "failed" if verdict else "complete",
        "failure": verdict,
        "fingerprint": run_fingerprint,
        "version": version,
        "code": code,
        "code_version": code_version(code),
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **facts,
    }


def code_version(code: dict) -> str:
    """How a run names the code that made it: `vlnkit <version> (<source hash, 12 digits>)`."""
    return f"vlnkit {code['version']} ({code['source_sha256'][:12]})"
