"""Inputs a job cannot run without: refuse them before the pipeline starts when they hold no usable record.

A module of its own because it reads both dataset formats (`vlnkit.datasets.rxr.parse_dataset` for R2R
and RxR guide files, Parquet rows checked by the one record definition), and the R2R reader must not
depend on the RxR one, which builds on it.
"""

from __future__ import annotations

from collections.abc import Iterator

from vlnkit.datasets.records import validate_record
from vlnkit.datasets.rxr import parse_dataset
from vlnkit.io.dead_letters import RecordError

__all__ = ["NoUsableRecords", "require_usable_records"]


class NoUsableRecords(ValueError):
    """An input flag's files hold no record a job can use (the message names flag, files and why)."""


def _parquet_records(data: bytes, source: str) -> Iterator[dict | RecordError]:
    """Rows of a Parquet table (e.g. build_r4r's paths-*.parquet) validated like JSON records."""
    import io

    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(io.BytesIO(data)).to_pylist()
    except Exception as exc:  # ArrowInvalid and friends: the whole file is the problem
        yield RecordError(source, "", f"cannot read Parquet ({type(exc).__name__}: {exc})")
        return
    for index, row in enumerate(rows):
        reason = validate_record(row)
        yield RecordError(source, f"#{index}", reason) if reason else row


def require_usable_records(flag: str, paths: list[str], *, require_distance: bool = False) -> int:
    """Raise NoUsableRecords unless the files hold at least one valid record; return how many they hold.

    A record is an R2R-format one or an RxR guide line (`vlnkit.datasets.rxr.parse_dataset`, per file by
    its first record; an RxR follower file is refused as a whole).

    For inputs a job cannot run without (a random baseline draws walk lengths from `--steps_from`;
    with no usable record it would fail deep in a worker with `ValueError: high <= 0`). JSON,
    JSON Lines and Parquet (by content: Parquet files start with `PAR1`) are read as the jobs read them.

        require_usable_records("--steps_from", ["../shared/data/r2r/R2R_train.json"])   # 4675
        require_usable_records("--steps_from", ["empty.json"])
        # NoUsableRecords: --steps_from: no usable record in empty.json (the files hold no records)
    """
    from vlnkit.io import fileio

    usable, refused, first_reason = 0, 0, None
    for path in paths:
        try:
            data = fileio.read_bytes(path)
        except Exception as exc:  # any filesystem error
            refused += 1
            first_reason = first_reason or f"{path}: cannot read ({exc})"
            continue
        items = (
            _parquet_records(data, path)
            if data[:4] == b"PAR1"
            else parse_dataset(data, path, require_distance=require_distance)
        )
        for item in items:
            if isinstance(item, RecordError):
                refused += 1
                first_reason = first_reason or item.message()
            else:
                usable += 1
    if not usable:
        files = ", ".join(paths[:3]) + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")
        why = f"{refused} refused; first: {first_reason}" if refused else "the files hold no records"
        raise NoUsableRecords(f"{flag}: no usable record in {files} ({why})")
    return usable
