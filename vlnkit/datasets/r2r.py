"""Reading R2R-format datasets (a JSON list, or JSON Lines), validated record by record.

A malformed record never stops a file: it comes back as a `RecordError` naming the file,
the record and the reason, so callers can route it to a dead-letter output and go on.
A file that cannot be parsed at all is one `RecordError` for the whole file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class RecordError:
    """A record (or a whole file) that could not be used, and why."""

    source: str
    record: str  # "#<index>" or "path_id=<id>", or "" for the whole file
    reason: str
    stage: str = "read"

    def message(self) -> str:
        where = f"{self.source} {self.record}".strip()
        return f"{where}: {self.reason}"

    def to_dict(self) -> dict:
        return {"stage": self.stage, "source": self.source, "record": self.record, "reason": self.reason}


def _parse_documents(text: str) -> tuple[list | None, str | None]:
    """A JSON list, or JSON Lines (one object per non-empty line). Returns (items, error)."""
    stripped = text.lstrip()
    if not stripped:
        return [], None
    if stripped[0] == "[":
        try:
            data = json.loads(text)
        except ValueError as exc:
            return None, f"invalid JSON ({exc})"
        return data, None
    items = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except ValueError as exc:
            items.append(_BadLine(lineno, str(exc)))
    return items, None


@dataclass(frozen=True)
class _BadLine:
    lineno: int
    error: str


def json_items(data: bytes | str, source: str, what: str = "records") -> Iterator[tuple[int, object] | RecordError]:
    """(index, item) of a JSON list or JSON Lines file; a broken file or line is a RecordError."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        yield RecordError(source, "", f"not UTF-8 text ({exc})")
        return
    items, error = _parse_documents(text)
    if error is not None:
        yield RecordError(source, "", error)
        return
    if not isinstance(items, list):
        yield RecordError(source, "", f"expected a JSON list of {what}, got {type(items).__name__}")
        return
    for index, obj in enumerate(items):
        if isinstance(obj, _BadLine):
            yield RecordError(source, f"line {obj.lineno}", f"invalid JSON ({obj.error})")
        else:
            yield index, obj


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate_record(obj, *, require_instructions: bool = True, min_path_len: int = 1) -> str | None:
    """Why an R2R record is unusable, or None when it is fine."""
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    for key in ("scan", "path_id", "path", "heading"):
        if key not in obj:
            return f"missing field {key!r}"
    if not isinstance(obj["scan"], str) or not obj["scan"]:
        return "'scan' must be a non-empty string"
    pid = obj["path_id"]
    if not isinstance(pid, int) or isinstance(pid, bool):
        return f"'path_id' must be an integer, got {pid!r}"
    path = obj["path"]
    if not isinstance(path, list) or not all(isinstance(v, str) and v for v in path):
        return "'path' must be a list of viewpoint id strings"
    if len(path) < min_path_len:
        return f"'path' has {len(path)} viewpoints, at least {min_path_len} required"
    if not _is_number(obj["heading"]):
        return f"'heading' must be a finite number, got {obj['heading']!r}"
    if "distance" in obj and not _is_number(obj["distance"]):
        return f"'distance' must be a finite number, got {obj['distance']!r}"
    if require_instructions:
        ins = obj.get("instructions")
        if not isinstance(ins, list) or not ins or not all(isinstance(s, str) for s in ins):
            return "'instructions' must be a non-empty list of strings"
    return None


def _record_label(obj, index: int) -> str:
    if isinstance(obj, dict) and "path_id" in obj:
        return f"#{index} (path_id={obj['path_id']!r})"
    return f"#{index}"


def parse_r2r(
    data: bytes | str, source: str, *, require_distance: bool = False, min_path_len: int = 1
) -> Iterator[dict | RecordError]:
    """Yield each valid record as a dict (with `_source` and `_index` added) or a RecordError."""
    for item in json_items(data, source):
        if isinstance(item, RecordError):
            yield item
            continue
        index, obj = item
        reason = validate_record(obj, min_path_len=min_path_len)
        if reason is None and require_distance and "distance" not in obj:
            reason = "missing field 'distance'"
        if reason is not None:
            yield RecordError(source, _record_label(obj, index), reason)
            continue
        record = dict(obj)
        record["heading"] = float(record["heading"])
        if "distance" in record:
            record["distance"] = float(record["distance"])
        record["_source"] = source
        record["_index"] = index
        yield record


def public(record: dict) -> dict:
    """The record without the bookkeeping fields this library adds (`_source`, `_index`, ...)."""
    return {k: v for k, v in record.items() if not k.startswith("_")}
