"""Agent prediction files: every layout VLN agents actually write, read into plain viewpoint lists.

A prediction is `{"instr_id": "<path_id>_<k>", "trajectory": ...}`, in a JSON list or JSON Lines, or
a Parquet row with `instr_id` and `path` columns. The trajectory may be:

- `r2r_submission`: `[[viewpoint, heading, elevation], ...]`, one entry per move or per low-level
  action (turning in place then repeats a viewpoint);
- `viewpoints`: a plain list of viewpoint ids;
- `nested` (DUET-style): `[[vp], [vp, vp, vp], [], ...]`, one list per decision step, flattened in
  order; empty steps are allowed.

Parsing keeps the viewpoints exactly as written (repeats included); scoring decides whether to
collapse them (`collapse_repeats`). A malformed prediction is a `RecordError` naming the file, the
record and the reason, so it can go to a dead-letter output.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator

from vlnkit.datasets.r2r import RecordError, json_items

LAYOUTS = ("r2r_submission", "viewpoints", "nested")


class TrajectoryError(ValueError):
    """A trajectory that is not in any known layout (or mixes layouts)."""


def _is_number(x) -> bool:
    """A JSON number other than NaN and infinities: any int (however long; `math.isfinite` would
    raise on one beyond the float range) or a finite float, never a bool."""
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or isinstance(x, float) and math.isfinite(x)


def _entry_layout(entry) -> str:
    if isinstance(entry, str):
        return "viewpoints"
    if isinstance(entry, (list, tuple)):
        if all(isinstance(v, str) for v in entry):
            return "nested"
        if len(entry) >= 1 and isinstance(entry[0], str) and all(_is_number(v) for v in entry[1:]):
            return "r2r_submission"
    raise TrajectoryError(
        f"entry {entry!r:.80} is neither a viewpoint id, [viewpoint, heading, elevation] nor a list of viewpoint ids"
    )


def flatten_trajectory(trajectory) -> tuple[list[str], str]:
    """(viewpoint ids in order, layout name). Raises TrajectoryError on anything else.

    A one-item entry `[vp]` reads as a nested step; `[vp, heading, elevation]` as a submission
    entry. All entries of one trajectory must share a layout (a single-viewpoint nested step and
    a submission entry without angles are the same thing and may mix).
    """
    if not isinstance(trajectory, (list, tuple)):
        raise TrajectoryError(f"trajectory must be a list, got {type(trajectory).__name__}")
    layouts = set()
    out: list[str] = []
    for n, entry in enumerate(trajectory):
        try:
            layout = _entry_layout(entry)
        except TrajectoryError as exc:
            raise TrajectoryError(f"step {n}: {exc}") from None
        if layout == "viewpoints":
            out.append(entry)
        elif layout == "nested":
            out.extend(entry)
            if len(entry) != 1:  # [vp] alone is ambiguous between nested and angle-less submission
                layouts.add(layout)
            continue
        else:
            out.append(entry[0])
        layouts.add(layout)
    if not all(out):
        raise TrajectoryError("trajectory contains an empty viewpoint id")
    if len(layouts) > 1:
        raise TrajectoryError(f"trajectory mixes layouts {sorted(layouts)}")
    if not layouts:
        layouts = {"nested" if trajectory and not isinstance(trajectory[0], str) else "viewpoints"}
    return out, layouts.pop()


def collapse_repeats(viewpoints: list) -> list:
    """Drop consecutive repeats (turning in place): [a, a, b, b, a] -> [a, b, a]."""
    return [v for n, v in enumerate(viewpoints) if n == 0 or v != viewpoints[n - 1]]


def _instr_id(value) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value:
        return value
    return None


def prediction(obj, source: str, index: int) -> dict | RecordError:
    """One prediction object -> {"instr_id", "path", "layout", "_source", "_index"} or a RecordError."""
    label = f"#{index}"
    if not isinstance(obj, dict):
        return RecordError(source, label, f"expected a JSON object, got {type(obj).__name__}")
    instr_id = _instr_id(obj.get("instr_id"))
    if instr_id is None:
        return RecordError(source, label, f"missing or invalid 'instr_id' ({obj.get('instr_id')!r:.40})")
    label = f"#{index} (instr_id={instr_id})"
    key = "trajectory" if "trajectory" in obj else "path" if "path" in obj else None
    if key is None:
        return RecordError(source, label, "missing field 'trajectory'")
    try:
        path, layout = flatten_trajectory(obj[key])
    except TrajectoryError as exc:
        return RecordError(source, label, str(exc))
    if not path:
        return RecordError(source, label, "empty trajectory (no viewpoints)")
    return {"instr_id": instr_id, "path": path, "layout": layout, "_source": source, "_index": index}


def parse_predictions(data: bytes | str, source: str) -> Iterator[dict | RecordError]:
    """Predictions of a JSON list or JSON Lines file (see `prediction` for what each item becomes)."""
    for item in json_items(data, source, "predictions"):
        if isinstance(item, RecordError):
            yield item
        else:
            index, obj = item
            yield prediction(obj, source, index)


PREDICTION_COLUMNS = ("instr_id", "path")


def prediction_table(read, source: str):
    """`read()`'s Parquet table of predictions, checked to hold `instr_id` and `path`, or the RecordError
    that makes the whole file a dead letter (a damaged file, or one without those columns)."""
    try:
        table = read()
    except Exception as exc:  # pyarrow raises several error types for a damaged file
        return RecordError(source, "", f"not a readable Parquet file ({exc})")
    missing = [c for c in PREDICTION_COLUMNS if c not in table.column_names]
    if missing:
        return RecordError(source, "", f"Parquet predictions need columns instr_id and path; missing {missing}")
    return table


def parse_predictions_parquet(data: bytes, source: str) -> Iterator[dict | RecordError]:
    """Predictions of a Parquet file with columns `instr_id` and `path` (a list of viewpoint ids)."""
    import pyarrow.parquet as pq

    table = prediction_table(lambda: pq.read_table(io.BytesIO(data)), source)
    if isinstance(table, RecordError):
        yield table
        return
    ids, paths = table.column("instr_id").to_pylist(), table.column("path").to_pylist()
    for index, (instr_id, path) in enumerate(zip(ids, paths)):
        yield prediction({"instr_id": instr_id, "trajectory": path if path is not None else None}, source, index)


def is_parquet(path: str) -> bool:
    return path.lower().endswith((".parquet", ".pq"))


def episode_ids(record: dict) -> list[str]:
    """instr_ids of a dataset record: "<path_id>_<k>" for each of its instructions."""
    return [f"{record['path_id']}_{k}" for k in range(len(record.get("instructions") or ()))]
