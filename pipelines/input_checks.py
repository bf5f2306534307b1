"""What a job's flags may name, checked before anything runs, the same way in every job: input files of a
kind the flag does not take (RxR follower files as datasets, continuous-environment files where a job reads
graphs), URLs with credentials in them, inputs inside the run's own output folder, an output folder or file
that cannot be written, and the agents named by --predictions (`NAME=FILES`, or a file named by its stem).
`pipelines.job.Run` calls these and records what they accept as the run's inputs.
"""

from __future__ import annotations

import os
import re

from pipelines.verdict import JobError
from vlnkit.datasets.formats import RXR_FOLLOWER_FORMAT
from vlnkit.datasets.rxr import FOLLOWER_AS_DATASET
from vlnkit.io import fileio, layout
from vlnkit.io.redact import redact_text

# `--predictions NAME=PATTERNS`: the agent's name (any text but "=" and the characters that separate an
# agent from an id in the job's outputs: tab, line breaks, and the summary keys' unit separator), then its files.
AGENT_NAME = re.compile(r"([^=\t\n\r\x1f]*[^=\s\x1f][^=\t\n\r\x1f]*)=(.+)", re.S)
COMPRESSED = (".gz", ".bz2")


def file_agent_name(path: str) -> str:
    """The name of an agent given as a file without NAME=: the file's stem (its name without its extension,
    and without a compression suffix before that).

    >>> file_agent_name("runs/dagger/val_unseen_preds.jsonl.gz"), file_agent_name("gs://b/rl.json")
    ('val_unseen_preds', 'rl')
    """
    name = path.rstrip("/").rsplit("/", 1)[-1]
    for suffix in COMPRESSED:
        name = name.removesuffix(suffix) if len(name) > len(suffix) else name
    stem = name.rsplit(".", 1)[0]
    return stem or name


def writable_folder(folder: str, flag: str, name: str) -> None:
    """Create a local folder if needed and check it can be written; `flag` and `name` word the error."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise JobError(f"{flag}: cannot create {name} ({exc.strerror or exc})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise JobError(f"{flag}: {name} is not writable")


# Flags whose files are datasets (R2R-format records or RxR guide lines, or build_r4r's Parquet), in every
# job; what is refused among them, by the format `vlnkit.datasets.formats.file_format` tells from content.
DATASET_FLAGS = frozenset({"dataset", "steps_from", "compose_from"})
DATASET_REFUSED = {RXR_FOLLOWER_FORMAT: FOLLOWER_AS_DATASET}
# Continuous-environment (VLN-CE) files, told by content (`vlnkit.continuous.documents.sniff_kind`, described by
# its DESCRIPTIONS): refused by every dataset flag and by the --predictions of jobs on graphs, unless a job takes
# a kind (`accept`).
CONTINUOUS_SCORED = (
    "continuous environments (VLN-CE) are scored by the score job, whose output folder the report draws "
    '(docs/jobs/score.md, "Continuous environments (VLN-CE)")'
)


def refuse_continuous(job: str) -> dict[str, str]:
    """{continuous layout: why} for a flag of `job` that takes none of them (`inputs(..., refuse=)`)."""
    from vlnkit.continuous.documents import DESCRIPTIONS

    return {kind: continuous_refusal(kind, job) for kind in DESCRIPTIONS}


def continuous_refusal(kind: str, job: str) -> str:
    """The one wording of a continuous file given where `job` does not take it."""
    from vlnkit.continuous.documents import DESCRIPTIONS

    return f"{DESCRIPTIONS[kind]}, which {job} does not read: {CONTINUOUS_SCORED}"


# What each flag's files hold ("job.flag" first, then "flag"), for the line that refuses a file wrapping
# its records in an object.
_RECORD_FILES = "a JSON list or JSON Lines of"
FLAG_READS = {
    "build_r4r.dataset": f"{_RECORD_FILES} R2R records",
    "dataset": f"{_RECORD_FILES} R2R records or RxR guide lines",
    "steps_from": f"{_RECORD_FILES} R2R records or RxR guide lines",
    "compose_from": f"{_RECORD_FILES} R2R records or RxR guide lines",
    "predictions": f"{_RECORD_FILES} predictions",
    "score_instructions.predictions": f"{_RECORD_FILES} generated instructions (or one of the layouts of its page)",
    "alignments": f"{_RECORD_FILES} alignment records (FGR2R records, or RxR guide lines)",
    "inputs": f"a job's output folder or {_RECORD_FILES} dataset records (R2R format)",
    "compare": f"a job's output folder or {_RECORD_FILES} dataset records (R2R format)",
}


def wrapped_refusal(flag: str, key: str, what: str, job: str) -> str:
    """The one wording of a file that is one JSON object wrapping a list of records under `key`.

    >>> wrapped_refusal("dataset", "data", "R2R records", "perturb")[:60]
    "one JSON object whose top-level key 'data' holds a list of R"
    """
    reads = FLAG_READS.get(f"{job}.{flag}") or FLAG_READS.get(flag, f"{_RECORD_FILES} records")
    return (
        f"one JSON object whose top-level key {key!r} holds a list of {what}, not a file of records: "
        f"{job} reads --{flag} as {reads} (give the list under {key!r} as its own file)"
    )


def refuse_kinds(flag: str, files: list[str], refused: dict[str, str], job: str, accept=()) -> dict[str, str | None]:
    """Stop before the pipeline when a file is of a kind the flag does not take (one line naming it):
    every record would otherwise be dead-lettered one by one, or the run would fail late. A JSON object
    wrapping a list of records (`{"data": [...]}`) is refused by every flag, naming its key. Returns each
    file's continuous layout (None for every other file)."""
    from vlnkit.continuous.documents import DESCRIPTIONS, sniff_kind, sniff_wrapped
    from vlnkit.datasets.formats import file_format
    from vlnkit.datasets.trajectories import is_parquet

    kinds = {}
    for path in files:
        kind = None if is_parquet(path) else sniff_kind(path)
        wrapped = sniff_wrapped(path) if kind is None and not is_parquet(path) else None
        if wrapped is not None:
            why = wrapped_refusal(flag, *wrapped, job)
        elif kind is not None and kind not in accept:
            why = refused.get(kind) or continuous_refusal(kind, job)
        elif kind is None and not is_parquet(path) and set(refused) - set(DESCRIPTIONS):
            why = refused.get(file_format(path))  # an R2R-format file: RxR guide or follower, or R2R
        else:
            why = None
        if why:
            raise JobError(f"--{flag}: {path} is {why}")
        kinds[path] = kind
    return kinds


def refuse_credentials(flag: str, value: str) -> None:
    """A URL with a user name (and password) in it: credentials come from the standard auth chain of the
    filesystem, never from a flag, and a path that holds one must not travel into logs and manifests."""
    for part in value.split(","):
        scheme, sep, rest = part.partition("://")
        if sep and "@" in rest.split("/", 1)[0]:
            raise JobError(
                f"--{flag}={redact_text(part.strip())}: a URL with credentials in it; name the file without them "
                "(access comes from the filesystem's own credentials, e.g. Google's auth chain for gs://)"
            )


def same_file(a: str, b: str) -> bool:
    if fileio.is_remote(a) or fileio.is_remote(b):
        return a == b
    return os.path.realpath(a) == os.path.realpath(b)


def refuse_own_output(output_dir: str, flag: str, path: str) -> None:
    """An input inside this run's own output folder (a file of its published version) would be replaced
    by what the run publishes, and the same command would then read its own output."""
    out = output_dir.rstrip("/")
    if fileio.is_remote(out):
        inside = path.startswith(fileio.join(out, layout.VERSIONS) + "/")
    else:
        inside = os.path.realpath(path).startswith(os.path.realpath(fileio.join(out, layout.VERSIONS)) + os.sep)
    if inside:
        raise JobError(
            f"--output_dir={output_dir} holds {path}, an input of this run (--{flag}): publishing there "
            "would replace what the run reads; write elsewhere"
        )


def check_output_folder(out: str) -> None:
    """--output_dir: named, no credentials, not inside the versions of an output folder, a writable folder."""
    if not out:
        raise JobError("--output_dir is empty")
    refuse_credentials("output_dir", out)
    root = layout.holding_versions(out)
    if root is not None:
        raise JobError(
            f"--output_dir={out}: inside the versions of the output folder {root} (what its readers see, "
            "and its own runs prune); choose a folder outside it"
        )
    if fileio.is_remote(out):
        return
    if os.path.exists(out) and not os.path.isdir(out):
        raise JobError(f"--output_dir={out}: is a file, not a folder")
    writable_folder(out, f"--output_dir={out}", "the folder")


def check_output_file(flag: str, path: str | None) -> None:
    """An output file named by a flag (e.g. --json_output): not a folder, its folder writable."""
    if not path or fileio.is_remote(path):
        return
    if os.path.isdir(path):
        raise JobError(f"--{flag}={path}: is a folder; name a file")
    parent = os.path.dirname(os.path.abspath(path))
    writable_folder(parent, f"--{flag}={path}", parent)


def agents_of(values: str | list[str] | None, flag: str, listed) -> dict[str, list[str]]:
    """`Run.agents`: --predictions values -> {agent: [files]}; `listed(flag, patterns)` lists and records
    the files of one value (`Run.inputs`)."""
    values = [values] if isinstance(values, str) else list(values or [])
    agents: dict[str, list[str]] = {}
    given: dict[str, str] = {}  # agent -> the value that named it

    def add(name: str, files: list[str], value: str) -> None:
        if name in agents:
            raise JobError(
                f"--{flag}: two values name the agent {name!r} ({given[name]!r} and {value!r}); give each "
                f"agent once, with all its files in one value (comma-separated or a glob), or name them "
                f"apart with --{flag}=NAME=FILES"
            )
        agents[name], given[name] = files, value

    for value in values:
        m = AGENT_NAME.fullmatch(value)
        if m and not fileio.exists(value):
            files = listed(f"{flag}={m.group(1)}", m.group(2))
            add(m.group(1), list(dict.fromkeys(files)), value)
        else:
            for path in listed(flag, value):
                add(file_agent_name(path), [path], path)
    return agents
