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
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["dictionary_columns", "REPEATS"]

REPEATS = 0.5  # a column gets a dictionary when its distinct values are at most this share of its values


def _leaf_values(column: pa.ChunkedArray | pa.Array) -> list[pa.ChunkedArray | pa.Array]:
    """The values of each Parquet leaf column of a column, depth first as Parquet orders them."""
    kind = column.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _leaf_values(pc.list_flatten(column))
    if pa.types.is_struct(kind):
        parts = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        return [
            leaf
            for i, field in enumerate(kind)
            for leaf in _leaf_values(pa.chunked_array([p.field(i) for p in parts], field.type))
        ]
    return [column]


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
    leaves = [values for name in table.column_names for values in _leaf_values(table.column(name))]
    paths = _leaf_paths(table.schema, writer_options)
    chosen = []
    for path, values in zip(paths, leaves, strict=True):
        count = len(values) - values.null_count
        if count == 0 or pc.count_distinct(values).as_py() <= repeats * count:
            chosen.append(path)
    return chosen
