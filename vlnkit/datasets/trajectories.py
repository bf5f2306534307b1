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
record and the reason, so it can go to a dead-letter output. What a valid prediction is (the layouts
above) is declared in `vlnkit.datasets.records` (`prediction`, `flatten_trajectory`, `SubmissionLine`).
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from vlnkit.datasets.r2r import RecordError, json_items
from vlnkit.datasets.records import prediction


def collapse_repeats(viewpoints: list) -> list:
    """Drop consecutive repeats (turning in place): [a, a, b, b, a] -> [a, b, a].

    >>> collapse_repeats(["a", "a", "b", "b", "a"])
    ['a', 'b', 'a']
    """
    return [v for n, v in enumerate(viewpoints) if n == 0 or v != viewpoints[n - 1]]


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
