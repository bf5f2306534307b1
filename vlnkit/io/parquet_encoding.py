"""Which columns of a table a Parquet file stores with a dictionary: those whose values repeat.

Why: Parquet writers give every column a dictionary by default. For a column whose values hardly repeat
(an episode's instr_id, its path length, nDTW or CLS: one value per row) the dictionary holds every
value once more and each row an index into it, so the file is larger and the writer hashes every value
for nothing: on a million scored episodes, dictionaries on those six columns made the episode file
71 MB instead of 64 MB and took a fifth of the writer's time. A column whose values repeat (agent, scan,
viewpoint ids, success, distances between a few thousand viewpoints) keeps its dictionary, which makes
it several times smaller. Whether values repeat is read from a table (the first a file is written
with), not assumed from a column's name, so it holds for any dataset.

    >>> import pyarrow as pa
    >>> table = pa.table({"id": ["a", "b", "c", "d"], "sr": [1.0, 0.0, 1.0, 1.0], "path": [["x", "y"], ["x"], ["y"], ["x"]]})
    >>> dictionary_columns(table)
    ['sr', 'path.list.element']
    >>> dictionary_columns(table, use_compliant_nested_type=False)  # the names follow the writer's options
    ['sr', 'path.list.item']

`parquet_writer(sink, schema, first)` opens a writer with the project's options (`WRITER_OPTIONS`) and
this rule applied to `first`, the first table it will write: every Parquet file the jobs write goes
through it.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["dictionary_columns", "parquet_writer", "REPEATS", "WRITER_OPTIONS"]

REPEATS = 0.5  # a column gets a dictionary when its distinct values are at most this share of its values
# Snappy (fast to write and read, what Parquet tools expect); lists keep the child name "item" that
# pyarrow's list type declares (not the compliant "element"), so a file reads back as its declared schema.
WRITER_OPTIONS = {"compression": "snappy", "use_compliant_nested_type": False}


_LISTS = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)


def _leaf_count(kind: pa.DataType) -> int:
    """How many Parquet leaf columns a column of this type has."""
    if any(test(kind) for test in _LISTS):
        return _leaf_count(kind.value_type)
    if pa.types.is_struct(kind):
        return sum(_leaf_count(field.type) for field in kind)
    if pa.types.is_map(kind):
        return _leaf_count(kind.key_type) + _leaf_count(kind.item_type)
    return 1


def _leaf_values(column: pa.ChunkedArray | pa.Array) -> list | None:
    """The values of each Parquet leaf column of a column, depth first as Parquet orders them (None for a
    map: its leaves keep their dictionaries)."""
    kind = column.type
    if any(test(kind) for test in _LISTS):
        return _leaf_values(pc.list_flatten(column))
    if pa.types.is_struct(kind):
        parts = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        found = [
            _leaf_values(pa.chunked_array([p.field(i) for p in parts], field.type)) for i, field in enumerate(kind)
        ]
        return None if any(f is None for f in found) else [leaf for leaves in found for leaf in leaves]
    if pa.types.is_map(kind):
        return None
    return [column]


def _repeats(values, repeats: float) -> bool:
    count = len(values) - values.null_count
    try:
        return count == 0 or pc.count_distinct(values).as_py() <= repeats * count
    except pa.ArrowNotImplementedError:  # a type Arrow cannot count: the writer's default, a dictionary
        return True


def _leaf_paths(schema: pa.Schema, writer_options: dict) -> list[str]:
    """The column paths the Parquet writer gives `schema`'s leaves with `writer_options` (a list's leaf is
    `<name>.list.element`, or `<name>.list.item` without compliant nested types), read from its own output."""
    buf = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), buf, **writer_options)
    parquet_schema = pq.ParquetFile(pa.BufferReader(buf.getvalue())).schema
    return [parquet_schema.column(i).path for i in range(len(parquet_schema))]


def dictionary_columns(table: pa.Table, repeats: float = REPEATS, **writer_options) -> list[str]:
    """The Parquet column paths of `table` (as a writer with `writer_options` names them) whose distinct
    values are at most `repeats` of their values (an empty or all-null column counts as repeating)."""
    paths = iter(_leaf_paths(table.schema, writer_options))
    chosen = []
    for name in table.column_names:
        column = table.column(name)
        mine = [next(paths) for _ in range(_leaf_count(column.type))]
        leaves = _leaf_values(column)
        chosen += mine if leaves is None else [p for p, v in zip(mine, leaves, strict=True) if _repeats(v, repeats)]
    return chosen


def parquet_writer(sink, schema: pa.Schema, first: pa.Table, repeats: float = REPEATS) -> pq.ParquetWriter:
    """A `pq.ParquetWriter` of `schema` into `sink` (a path or a binary file object) with `WRITER_OPTIONS`
    and a dictionary for the columns whose values repeat in `first`, the first table it will write."""
    return pq.ParquetWriter(
        sink, schema, use_dictionary=dictionary_columns(first, repeats, **WRITER_OPTIONS), **WRITER_OPTIONS
    )
