"""fileio.expand_inputs / match: named inputs must exist, globs must match, errors name flag and pattern."""

from __future__ import annotations

import pytest

from vlnkit.io import fileio


@pytest.fixture
def files(tmp_path):
    for name, text in {"a.json": "[]", "b.json": "[1]", "c.txt": "x"}.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.json").write_text("[2,3]")
    return tmp_path


def test_missing_file_names_flag_and_path(tmp_path):
    missing = str(tmp_path / "nope.json")
    with pytest.raises(FileNotFoundError, match=rf"^--dataset: {missing} does not exist$"):
        fileio.expand_inputs("--dataset", missing)


def test_glob_with_no_match(files):
    pattern = str(files / "*.parquet")
    with pytest.raises(FileNotFoundError, match=r"--predictions: .*\*\.parquet matches no file"):
        fileio.expand_inputs("--predictions", pattern)


def test_a_folder_is_not_a_file(files):
    with pytest.raises(FileNotFoundError, match="is a folder, not a file"):
        fileio.expand_inputs("--dataset", str(files / "sub"))


def test_nothing_named(files):
    with pytest.raises(FileNotFoundError, match="no file named"):
        fileio.expand_inputs("--dataset", " , ")


def test_comma_list_glob_and_sizes_sorted_and_deduplicated(files):
    a, b = str(files / "a.json"), str(files / "b.json")
    got = fileio.expand_inputs("--dataset", f"{b}, {files}/*.json,{a}")
    assert got == [(a, 2), (b, 3)]


def test_a_list_of_patterns_and_one_bad_entry_fails_the_whole(files):
    a = str(files / "a.json")
    assert fileio.expand_inputs("--x", [a, str(files / "sub" / "*.json")]) == [
        (a, 2),
        (str(files / "sub" / "d.json"), 5),
    ]
    with pytest.raises(FileNotFoundError, match="missing.json does not exist"):
        fileio.expand_inputs("--x", [a, str(files / "missing.json")])


def test_match_is_lenient_and_skips_folders(files):
    assert fileio.match(str(files / "*")) == sorted(
        [(str(files / "a.json"), 2), (str(files / "b.json"), 3), (str(files / "c.txt"), 1)]
    )
    assert fileio.match(str(files / "none-*.json")) == []


def test_is_glob():
    assert fileio.is_glob("a/*.json") and fileio.is_glob("a?.json") and fileio.is_glob("a[12].json")
    assert not fileio.is_glob("a/b.json")


def test_write_read_exists_join_remove_tree(tmp_path):
    path = fileio.join(str(tmp_path), "deep", "x.bin")
    with fileio.open_write(path) as f:
        f.write(b"abc")
    assert fileio.exists(path) and fileio.read_bytes(path) == b"abc"
    fileio.remove_tree(str(tmp_path / "deep"))
    assert not fileio.exists(path)
    assert fileio.join("gs://bucket/dir", "f.json") == "gs://bucket/dir/f.json"
