"""Files of generated instructions in the layouts the field publishes, read into one record kind.

A system's file is one of:
- `spice`: the SPICE jar's input list `[{"image_id", "refs": [str], "test": str}]` (references carried);
- `multi_system`: `{system: {path_id: {"generated_instr", "instr_id", "instructions", ...}}}`, as
  zhao2023's human evaluation (several systems in one file; references and `human_scores` carried; its
  human row, one of the path's own references, is scored against the others);
- `keyed`: a dict keyed by instr_id or path_id whose values are a string or a record with the
  instruction under `generated_instr`, `instruction` or `prediction` (coop_instruction, hear);
- `list`: a list of such records, each naming `instr_id` or `path_id`;
- `jsonl`: JSON Lines of such records;
- `r2r`: an R2R-format list (`path_id`, `instructions`: [str], no text field), as written by instruction
  generators whose output agent code reads directly (`build_crafty`'s `instructions.json`): every entry of
  `instructions` is a generated instruction, id `<path_id>_<k>`, with no references carried (they come
  from `--references`). Without this layout such a file read as `list`, its instructions as references
  and no text, so every record was a dead letter.

A record's references (`instructions` or `refs`) travel with it when the file has them; a reference
file (R2R and the like) can supply them instead (`vlnkit.captioning.references`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

LAYOUTS = ("spice", "multi_system", "keyed", "list", "jsonl", "r2r")
TEXT_FIELDS = ("generated_instr", "instruction", "prediction", "test", "caption")
REF_FIELDS = ("instructions", "refs", "references")


class LayoutError(ValueError):
    """A file that is not any known layout: the message names the file and why."""


@dataclass(frozen=True)
class Generated:
    """One generated instruction of one system."""

    system: str
    instr_id: str
    path_id: str
    text: object  # a str when valid; anything else is a dead letter downstream, not dropped here
    references: tuple | None = None
    scan: str | None = None
    extra: dict = field(default_factory=dict)


def path_id_of(instr_id: str) -> str:
    """R2R ids are `<path_id>_<k>` (zhao2023's human row `<path_id>_0_<ref>`): the path is the first part."""
    return str(instr_id).split("_", 1)[0]


def _text_of(record) -> object:
    if isinstance(record, str):
        return record
    if isinstance(record, dict):
        for name in TEXT_FIELDS:
            if name in record:
                return record[name]
    return None


def _refs_of(record) -> tuple | None:
    if isinstance(record, dict):
        for name in REF_FIELDS:
            if name in record and isinstance(record[name], list):
                return tuple(record[name])
    return None


def _record(system: str, key: str | None, record, extra_fields=("human_scores", "model", "path")) -> Generated:
    instr_id = str(record.get("instr_id", key)) if isinstance(record, dict) else str(key)
    path_id = str(record["path_id"]) if isinstance(record, dict) and "path_id" in record else path_id_of(instr_id)
    scan = record.get("scan") if isinstance(record, dict) else None
    extra = {k: record[k] for k in extra_fields if isinstance(record, dict) and k in record}
    return Generated(system, instr_id, path_id, _text_of(record), _refs_of(record), scan, extra)


def _is_r2r_record(record) -> bool:
    """An R2R-format record of generated instructions: a path, a list of instructions and no single text."""
    return (
        isinstance(record, dict)
        and "path_id" in record
        and isinstance(record.get("instructions"), list)
        and _text_of(record) is None
    )


def detect(data) -> str:
    """Which layout a parsed JSON document is in (JSON Lines are detected before parsing)."""
    if isinstance(data, list):
        if data and all(isinstance(r, dict) and {"image_id", "test"} <= r.keys() for r in data):
            return "spice"
        if data and all(_is_r2r_record(r) for r in data):
            return "r2r"
        if all(isinstance(r, dict) and ("instr_id" in r or "path_id" in r) for r in data):
            return "list"
        raise LayoutError("a list whose records name neither image_id/test nor instr_id/path_id")
    if isinstance(data, dict):
        values = list(data.values())
        if values and all(
            isinstance(v, dict) and v and all(isinstance(r, dict) and "generated_instr" in r for r in v.values())
            for v in values
        ):
            return "multi_system"
        if all(isinstance(v, str) or (isinstance(v, dict) and _text_of(v) is not None) for v in values):
            return "keyed"
        raise LayoutError("a dict whose values are neither instructions, records with one, nor systems of records")
    raise LayoutError(f"a JSON {type(data).__name__}, not a list or a dict")


def _parse_lines(text: str, system: str, source: str, whole_error: Exception) -> list[Generated]:
    """JSON Lines: one record per line (the text as a whole was not JSON)."""
    if not text.lstrip().startswith("{"):
        raise LayoutError(f"{source}: not JSON ({whole_error})")
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise LayoutError(f"{source}: neither JSON nor JSON Lines (line {number}: {error})") from None
    if not all(isinstance(r, dict) and ("instr_id" in r or "path_id" in r) for r in rows):
        raise LayoutError(f"{source}: JSON Lines whose records name neither instr_id nor path_id")
    return [_record(system, None, r) for r in rows]


def parse(text: str, system: str, source: str = "<text>") -> list[Generated]:
    """The generated instructions of a file's text; `system` names them (multi-system files name their own)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return _parse_lines(text, system, source, error)
    try:
        layout = detect(data)
    except LayoutError as error:
        raise LayoutError(f"{source}: {error}") from None
    if layout == "spice":
        return [Generated(system, str(r["image_id"]), path_id_of(r["image_id"]), r["test"], _refs_of(r)) for r in data]
    if layout == "list":
        return [_record(system, None, r) for r in data]
    if layout == "r2r":
        return [
            Generated(system, f"{r['path_id']}_{k}", str(r["path_id"]), text, None, r.get("scan"))
            for r in data
            for k, text in enumerate(r["instructions"])
        ]
    if layout == "keyed":
        return [_record(system, k, v) for k, v in data.items()]
    return [_own_reference_left_out(_record(name, k, v)) for name, records in data.items() for k, v in records.items()]


def _own_reference_left_out(g: Generated) -> Generated:
    """zhao2023's human row shows reference k of its own path (instr_id `<path_id>_<n>_<k>`, text equal to
    `instructions[k]`): it is scored against the other references, as the study scores it."""
    parts = g.instr_id.split("_")
    if g.references and len(parts) == 3 and parts[2].isdigit():
        k = int(parts[2])
        if k < len(g.references) and g.references[k] == g.text:
            return Generated(
                g.system, g.instr_id, g.path_id, g.text, g.references[:k] + g.references[k + 1 :], g.scan, g.extra
            )
    return g
