"""The dataset card (`README.md`) of a published version, as the Hugging Face convention reads it.

Why: derived VLN data (R4R joins, perturbations, paraphrases, episode scores) is shared as a dataset
repository: Parquet files and a `README.md` whose YAML front matter names, per config, the data files of
each split. `datasets.load_dataset(folder)` then reads the job's main rows and nothing else: without the
card it guesses from the most common file format of the folder and would read the R4R JSON or the dead
letters. The card also says, for whoever opens the folder, what each column means (the declared schema's
`description` of each field, stored in every Parquet footer), the job and its settings, the inputs with
their checksums, the row counts as read back, and the license note the inputs carry.

A main table is a sharded Parquet output of the job (`<prefix>-SSSSS-of-NNNNN.parquet`, dead letters
excluded): one config per table, named after it, whose one split (named after it too) is `<prefix>-*.parquet`;
the first table is the default config.

    >>> import pyarrow as pa
    >>> schema = pa.schema([pa.field("path_id", pa.int64(), metadata={"description": "the path's id"})])
    >>> text = card_text(
    ...     job="build_r4r",
    ...     version="v1",
    ...     tables=[Table("paths", schema, rows=3, files=1)],
    ...     settings={"num_shards": 0},
    ...     inputs=[{"path": "/data/R2R_val_seen.json", "bytes": 10, "sha256": "ab" * 32}],
    ... )
    >>> print(text.split("---")[1].strip())  # the YAML front matter
    configs:
    - config_name: paths
      data_files:
      - path: paths-*.parquet
        split: paths
      default: true
    license: other
    license_link: https://kaldir.vc.in.tum.de/matterport/MP_TOS.pdf
    license_name: matterport3d-terms-of-use
    pretty_name: vlnkit build_r4r (v1)
    tags:
    - vision-and-language-navigation
    - vlnkit
    >>> "| `path_id` | int64 | the path's id |" in text
    True
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pyarrow as pa
import yaml

from vlnkit.io import fileio, integrity
from vlnkit.io.schemas import meaning

__all__ = ["README", "Table", "card_text", "tables_of", "write_card", "license_notes", "task_licenses"]

README = "README.md"
_PARQUET_SHARD = re.compile(r"^(?P<prefix>[^/]+)-\d{5}-of-\d{5}\.parquet$")

# Every VLN dataset vlnkit reads is built on the Matterport3D scans (their ids, viewpoints and, for the
# continuous datasets, the meshes' coordinates): their terms of use cover what is derived from them.
MATTERPORT_TERMS = (
    "matterport3d-terms-of-use",
    "https://kaldir.vc.in.tum.de/matterport/MP_TOS.pdf",
    "Matterport3D Terms of Use: non-commercial academic research only",
)
# The license note of an input, recognised by its path (first match): (pattern, dataset, note). A VLN task
# brings the note of its own dataset files (`vlnkit.scoring.task.Task.license`, carried by the summary's `task`
# block: `task_licenses`); REVERIE's stays here, by path, since every job reads its records (as R2R's).
LICENSES = (
    (r"_connectivity\.json$", "Matterport3DSimulator navigation graphs", "MIT (Matterport3DSimulator repository)"),
    (r"(?i)vln-?ce|_gt\.json(\.gz)?$", "VLN-CE", "MIT (code); Matterport3D terms (episodes)"),
    (r"(?i)(^|/)rxr[^/]*$", "RxR", "CC BY 4.0 (annotations); Matterport3D terms"),
    (r"(?i)(^|/)fgr2r[^/]*$", "Fine-Grained R2R", "MIT; Matterport3D terms"),
    (r"(?i)(^|/)r4r[^/]*$", "R4R", "Apache 2.0 (google-research r4r); Matterport3D terms"),
    (r"(?i)(^|/)reverie[^/]*$", "REVERIE", "MIT (code); Matterport3D terms (data)"),
    (r"(?i)(^|/)r2r[^/]*$", "Room-to-Room", "Matterport3D terms (non-commercial research)"),
)
UNKNOWN = "not known to vlnkit: see where the file came from"


@dataclass(frozen=True)
class Table:
    """One main table of a version: its prefix, its schema (as written), its rows and files."""

    prefix: str
    schema: pa.Schema
    rows: int
    files: int


def license_notes(paths: list[str], own: dict[str, tuple[str, str]] | None = None) -> list[tuple[str, str, str]]:
    """(file name, dataset, license note) of each input: the run's `own` note for it ({path: (dataset, note)},
    `task_licenses`), else by the first pattern of `LICENSES` its path matches.

    >>> license_notes(["/d/R2R_val_seen.json", "/d/conn/17DRP5sb8fy_connectivity.json", "/x/preds.json"])[0]
    ('R2R_val_seen.json', 'Room-to-Room', 'Matterport3D terms (non-commercial research)')
    >>> license_notes(["/x/preds.json"])[0][2] == UNKNOWN, license_notes(["/x/d.json"], {"/x/d.json": ("D", "MIT")})
    (True, [('d.json', 'D', 'MIT')])
    """
    out = []
    for path in paths:
        name = path.rstrip("/").rsplit("/", 1)[-1]
        found = (own or {}).get(path) or next(
            ((d, n) for pattern, d, n in LICENSES if re.search(pattern, path)), ("", UNKNOWN)
        )
        out.append((name, *found))
    return out


def task_licenses(summary: dict) -> dict[str, tuple[str, str]]:
    """{dataset file: (dataset, license note)} of a run whose VLN task brings its own note (the summary's
    `task` block has `license`, for the files of its `dataset`); empty for any other run.

    >>> task_licenses({"dataset": ["/d/val.json"], "task": {"license": {"dataset": "CVDN", "note": "MIT"}}})
    {'/d/val.json': ('CVDN', 'MIT')}
    """
    own = (summary.get("task") or {}).get("license")
    return {path: (own["dataset"], own["note"]) for path in summary.get("dataset") or ()} if own else {}


def tables_of(folder: str, outputs: list[dict]) -> list[Table]:
    """The main tables among a version's described outputs (`vlnkit.io.integrity.describe` entries with
    their `name`), in order of first appearance, each schema read from its first shard's footer."""
    import pyarrow.parquet as pq

    shards: dict[str, list[dict]] = {}
    for out in outputs:
        m = _PARQUET_SHARD.match(out["name"])
        if m and not m["prefix"].startswith("dead_letter"):
            shards.setdefault(m["prefix"], []).append(out)
    tables = []
    for prefix, found in shards.items():
        first = min(found, key=lambda o: o["name"])
        with fileio.open_read(fileio.join(folder, first["name"])) as f:
            schema = pq.read_schema(f)
        tables.append(Table(prefix, schema, sum(int(o.get("rows") or 0) for o in found), len(found)))
    return tables


def _cell(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text.replace("|", "\\|").replace("\n", " ")


def _type(kind: pa.DataType) -> str:
    return re.sub(r"<(item|element): ", "<", str(kind))  # list<string>, however the writer named the child


def card_text(
    job: str,
    version: str,
    tables: list[Table],
    settings: dict,
    inputs: list[dict],
    code_version: str = "",
    licenses: dict[str, tuple[str, str]] | None = None,
) -> str:
    """The card of one version (see the module docstring): YAML front matter, then the tables with each
    column's type and meaning, the job's settings, the inputs with checksums and license notes (`licenses`:
    the run's own notes by input path, `task_licenses`)."""
    configs = [
        {
            "config_name": t.prefix,
            "data_files": [{"split": t.prefix, "path": f"{t.prefix}-*.parquet"}],
            **({"default": True} if n == 0 else {}),
        }
        for n, t in enumerate(tables)
    ]
    name, link, terms = MATTERPORT_TERMS
    front = {
        "pretty_name": f"vlnkit {job} ({version})",
        "license": "other",
        "license_name": name,
        "license_link": link,
        "tags": ["vision-and-language-navigation", "vlnkit"],
        **({"configs": configs} if configs else {}),  # a job without tables (the report) is no dataset
    }
    lines = ["---", yaml.safe_dump(front, sort_keys=True).rstrip(), "---", ""]
    lines += [
        f"# vlnkit `{job}` output, version `{version}`",
        "",
        f"Written by vlnkit's `{job}` job (`python -m pipelines.{job}`{', ' + code_version if code_version else ''}).",
        "Each table below is one config with one split of the same name:",
        "`datasets.load_dataset(<this folder>, <table>, split=<table>)`, or DuckDB / pyarrow on `<table>-*.parquet`.",
        "`manifest.json` records every file of this version with its checksum; `summary.json` the run's counts;",
        "`dead_letter-*.jsonl` the records that could not be used (not rows of any table).",
        "",
    ]
    for t in tables:
        meta = t.schema.metadata or {}
        declared = meta.get(b"vlnkit.schema", b"").decode()
        version_of = meta.get(b"vlnkit.schema_version", b"").decode()
        lines += [
            f"## `{t.prefix}`: {t.rows:,} rows in {t.files} file(s) `{t.prefix}-*.parquet`"
            + (f" (schema `{declared}` v{version_of})" if declared else ""),
            "",
            "| column | type | meaning |",
            "| --- | --- | --- |",
        ]
        for field in t.schema:
            about = meaning(field) or "(not described)"
            nullable = "" if field.nullable else ", never null"
            lines.append(f"| `{field.name}` | {_type(field.type)}{nullable} | {_cell(about)} |")
        lines.append("")
    lines += ["## Settings", "", "| setting | value |", "| --- | --- |"]
    lines += [f"| `{key}` | `{_cell(settings[key])}` |" for key in sorted(settings)]
    lines += ["", "## Inputs", "", "| file | bytes | sha256 | dataset | license |", "| --- | ---: | --- | --- | --- |"]
    notes = license_notes([i["path"] for i in inputs], licenses)
    for i, (_, dataset, note) in zip(inputs, notes, strict=True):
        lines.append(f"| `{_cell(i['path'])}` | {i.get('bytes', '')} | `{i.get('sha256', '')}` | {dataset} | {note} |")
    lines += [
        "",
        "## License",
        "",
        f"Derived from the inputs above and bound by their licenses; all of them are built on the Matterport3D "
        f"scans, so the {terms} ({link}) apply to this data.",
        "",
    ]
    return "\n".join(lines)


def write_card(folder: str, outputs: list[dict], **facts) -> list[dict]:
    """Write `README.md` into the version `folder` from its described `outputs` and `facts` (`card_text`'s
    job, version, settings, inputs, code_version, licenses); return the outputs with the card's own entry (replacing
    one an earlier attempt wrote), so the manifest records and checks it like any other output."""
    path = fileio.join(folder, README)
    kept = [o for o in outputs if o["name"] != README]
    with fileio.open_write(path) as f:
        f.write(card_text(tables=tables_of(folder, kept), **facts).encode("utf-8"))
    return sorted([*kept, {"name": README, **integrity.describe(path)}], key=lambda o: o["name"])
