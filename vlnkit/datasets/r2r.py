"""Reading R2R-format datasets (a JSON list, or JSON Lines), validated record by record.

What a valid record is lives in `vlnkit.datasets.records` (`R2RRecord`); this module finds the
records in a file and names them.

A malformed record never stops a file: it comes back as a `RecordError` naming the file,
the record and the reason, so callers can route it to a dead-letter output and go on.
A file that cannot be parsed at all is one `RecordError` for the whole file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from vlnkit.datasets.records import validate_record
from vlnkit.io.dead_letters import RecordError

BOM = "\ufeff"


@dataclass(frozen=True)
class _Documents:
    items: list | None = None  # parsed items (a _BadLine for a JSON Lines line that does not parse)
    lines: list | None = None  # for JSON Lines, the 1-based line number of each item
    error: str | None = None  # the whole file is unusable, and why
    single: bool = False  # the file is one top-level JSON object (indented, or a one-line JSON Lines file)


def _parse_documents(text: str) -> _Documents:
    """A JSON list, one JSON object, or JSON Lines, told apart by content, not by file name.

    The first non-space character decides (after a UTF-8 byte-order mark, which editors on
    Windows add): `[` is a JSON list; `{` is one object if the whole text parses as one, else
    JSON Lines. An indented object must not be read line by line (every line would be a dead
    letter), so when most lines of a `{` file fail to parse on their own the file is refused
    as a whole with the JSON error.
    """
    text = text.removeprefix(BOM)
    stripped = text.lstrip()
    if not stripped:
        return _Documents(items=[])
    if stripped[0] == "[":
        try:
            return _Documents(items=json.loads(text))
        except ValueError as exc:
            return _Documents(error=f"invalid JSON ({exc})")
        except RecursionError:
            return _Documents(error="invalid JSON (nested too deeply)")
    whole_error = None
    try:
        whole = json.loads(text)
    except ValueError as exc:
        whole_error = exc
    except RecursionError:
        return _Documents(error="invalid JSON (nested too deeply)")
    else:
        if isinstance(whole, dict):
            return _Documents(items=[whole], single=True)
        return _Documents(items=whole)  # a bare scalar: json_items says what it got
    items, lines, bad = [], [], 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        lines.append(lineno)
        try:
            items.append(json.loads(line))
        except (ValueError, RecursionError) as exc:
            bad += 1
            items.append(_BadLine(lineno, str(exc) if isinstance(exc, ValueError) else "nested too deeply"))
    if bad > 1 and 2 * bad > len(items):
        return _Documents(
            error=f"neither a JSON list, one JSON object nor JSON Lines ({bad} of {len(items)} lines are not "
            f"JSON objects; parsed as one document: {whole_error})"
        )
    return _Documents(items=items, lines=lines)


@dataclass(frozen=True)
class _BadLine:
    lineno: int
    error: str


def labelled_json_items(
    data: bytes | str, source: str, what: str = "records", validate=None
) -> Iterator[tuple[int, str, object] | RecordError]:
    """(index, label, item) of a JSON list, one JSON object, or JSON Lines; a broken file or line is a RecordError.

    `label` says where the item is for a person: "line N" in JSON Lines, "#index" otherwise.
    `validate(item) -> reason | None`, when given, is used on a file that is one JSON object:
    if that object is not a valid item, the file as a whole is the error ("the file is one JSON
    object, not a list of records"), rather than a record-level error about a missing field.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        yield RecordError(source, "", f"not UTF-8 text ({exc})")
        return
    docs = _parse_documents(text)
    if docs.error is not None:
        yield RecordError(source, "", docs.error)
        return
    items = docs.items
    if not isinstance(items, list):
        yield RecordError(source, "", f"expected a JSON list of {what} or JSON Lines, got {type(items).__name__}")
        return
    if docs.single and validate is not None:
        reason = validate(items[0])
        if reason is not None:
            keys = ", ".join(repr(k) for k in list(items[0])[:5]) or "no keys"
            yield RecordError(
                source,
                "",
                f"the file is one JSON object ({keys}), not a JSON list of {what} or JSON Lines; "
                f"as a single item it is unusable: {reason}",
            )
            return
    for index, obj in enumerate(items):
        if isinstance(obj, _BadLine):
            yield RecordError(source, f"line {obj.lineno}", f"invalid JSON ({obj.error})")
        else:
            yield index, (f"line {docs.lines[index]}" if docs.lines else f"#{index}"), obj


def json_items(
    data: bytes | str, source: str, what: str = "records", validate=None
) -> Iterator[tuple[int, object] | RecordError]:
    r"""(index, item) of a JSON list, one JSON object, or JSON Lines (see `labelled_json_items`).

    >>> list(json_items('\ufeff[\n  {"a": 1}\n]', "f.json"))
    [(0, {'a': 1})]
    """
    for item in labelled_json_items(data, source, what, validate):
        yield item if isinstance(item, RecordError) else (item[0], item[2])


def record_label(obj, index: int | None = None) -> str:
    """How a person finds a record in its file: "#<index>", with its path_id when it has one. `index`
    defaults to the `_index` the readers add to every record (`?` when there is none).

    >>> record_label({"path_id": 12}, 4), record_label({"_index": 4, "path_id": 12}), record_label([1], 0)
    ('#4 (path_id=12)', '#4 (path_id=12)', '#0')
    """
    if index is None:
        index = obj.get("_index", "?") if isinstance(obj, dict) else "?"
    if isinstance(obj, dict) and "path_id" in obj:
        return f"#{index} (path_id={obj['path_id']!r})"
    return f"#{index}"


def parse_r2r(data: bytes | str, source: str, *, require_distance: bool = False) -> Iterator[dict | RecordError]:
    """Yield each valid record (`vlnkit.datasets.records.R2RRecord`) as a dict (with `_source` and
    `_index` added) or a RecordError. `require_distance`: a record without `distance` is refused too
    (the R4R join needs it)."""
    for item in json_items(data, source, validate=validate_record):
        yield item if isinstance(item, RecordError) else r2r_record(item[1], source, item[0], require_distance)


def r2r_record(obj, source: str, index: int, require_distance: bool = False) -> dict | RecordError:
    """One parsed item as a valid R2R record dict (heading and distance as floats, `_source` and
    `_index` added) or the RecordError saying why it is not one."""
    reason = validate_record(obj)
    if reason is None and require_distance and "distance" not in obj:
        reason = "missing field 'distance'"
    if reason is not None:
        return RecordError(source, record_label(obj, index), reason)
    record = dict(obj)
    record["heading"] = float(record["heading"])
    if "distance" in record:
        record["distance"] = float(record["distance"])
    record["_source"] = source
    record["_index"] = index
    return record


def public(record: dict) -> dict:
    """The record without the bookkeeping fields this library adds (`_source`, `_index`, ...)."""
    return {k: v for k, v in record.items() if not k.startswith("_")}
