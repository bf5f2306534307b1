"""`dictionary_columns`: a dictionary for the columns whose values repeat, named as pyarrow's writer names them."""

import io

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from vlnkit.evaluation.schemas import EPISODE_SCORES
from vlnkit.io.parquet_encoding import dictionary_columns


def _encodings(table: pa.Table, **options) -> dict[str, set[str]]:
    """Each Parquet column path of `table` written with `options` -> the encodings its first row group uses."""
    buf = io.BytesIO()
    pq.write_table(table, buf, **options)
    group = pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata.row_group(0)
    return {group.column(i).path_in_schema: set(group.column(i).encodings) for i in range(group.num_columns)}


def test_repeating_columns_get_a_dictionary_and_the_others_do_not():
    n = 1000
    table = pa.table(
        {
            "agent": ["a"] * n,
            "instr_id": [f"{i}_0" for i in range(n)],
            "sr": [float(i % 2) for i in range(n)],
            "ndtw": [i / n for i in range(n)],
            "language": pa.nulls(n, pa.string()),
            "path": [[f"v{i % 7}", f"v{i % 5}"] for i in range(n)],
            "pose": pa.array([{"x": float(i), "floor": i % 3} for i in range(n)]),
            "position": pa.array([[float(i), 0.0, 1.5] for i in range(n)], pa.list_(pa.float64(), 3)),
            "tags": pa.array([[("k", i % 2)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        }
    )
    # The names are the writer's own: a name it did not know would be ignored without a word.
    for options, item in (({}, "element"), ({"use_compliant_nested_type": False}, "item")):
        chosen = dictionary_columns(table, **options)
        # A fixed-size list's values repeat here (a third of them are 0.0, a third 1.5); a map keeps its dictionaries.
        repeated = ["agent", "sr", "language", f"path.list.{item}", "pose.floor", f"position.list.{item}"]
        assert chosen == [*repeated, "tags.key_value.key", "tags.key_value.value"]
        written = _encodings(table, use_dictionary=chosen, **options)
        assert set(written) >= set(chosen)
        dictionary = {path for path, used in written.items() if "RLE_DICTIONARY" in used or "PLAIN_DICTIONARY" in used}
        assert dictionary == set(chosen)


@given(st.lists(st.integers(0, 9), min_size=1, max_size=60), st.floats(0.05, 1.0))
def test_the_share_of_distinct_values_decides(values, repeats):
    table = pa.table({"v": values})
    assert (dictionary_columns(table, repeats) == ["v"]) == (len(set(values)) <= repeats * len(values))


def test_an_empty_episode_table_chooses_every_column():
    assert len(dictionary_columns(EPISODE_SCORES.empty_table())) == len(EPISODE_SCORES)
