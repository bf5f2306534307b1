"""vlnkit.io.inputs: what a user names as input files. Named inputs must exist, globs must match, errors
name flag and pattern; a published output folder (or a glob inside it) is read in its current version."""

from __future__ import annotations

import os

import pytest

from vlnkit.io import fileio, inputs, layout


def test_missing_file_names_flag_and_path(tmp_path):
    missing = str(tmp_path / "nope.json")
    with pytest.raises(FileNotFoundError, match=rf"^--dataset: {missing} does not exist$"):
        inputs.expand_inputs("--dataset", missing)


def test_glob_with_no_match(files):
    pattern = str(files / "*.parquet")
    with pytest.raises(FileNotFoundError, match=r"--predictions: .*\*\.parquet matches no file"):
        inputs.expand_inputs("--predictions", pattern)


def test_a_folder_is_not_a_file(files):
    with pytest.raises(FileNotFoundError, match="is a folder, not a file"):
        inputs.expand_inputs("--dataset", str(files / "sub"))


def test_nothing_named(files):
    with pytest.raises(FileNotFoundError, match="no file named"):
        inputs.expand_inputs("--dataset", " , ")


def test_comma_list_glob_and_sizes_sorted_and_deduplicated(files):
    a, b = str(files / "a.json"), str(files / "b.json")
    got = inputs.expand_inputs("--dataset", f"{b}, {files}/*.json,{a}")
    assert got == [(a, 2), (b, 3)]


def test_a_list_of_patterns_and_one_bad_entry_fails_the_whole(files):
    a = str(files / "a.json")
    assert inputs.expand_inputs("--x", [a, str(files / "sub" / "*.json")]) == [
        (a, 2),
        (str(files / "sub" / "d.json"), 5),
    ]
    with pytest.raises(FileNotFoundError, match="missing.json does not exist"):
        inputs.expand_inputs("--x", [a, str(files / "missing.json")])


def published_folder(root, files: dict[str, str]) -> str:
    """A job's output folder with one published version holding `files` (the layout of vlnkit.io.layout)."""
    version = layout.new_version_id()
    folder = layout.version_folder(str(root), version)
    os.makedirs(folder)
    for name, text in {**files, layout.SUCCESS: ""}.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    layout.point(str(root), version)
    layout.link_top_level(str(root), version, [])
    return folder


def test_a_glob_inside_a_published_folder_is_matched_in_its_current_version(tmp_path):
    first = published_folder(tmp_path, {"paths-00000-of-00001.parquet": "a"})
    assert inputs.match_current(str(tmp_path / "paths-*.parquet")) == [(f"{first}/paths-00000-of-00001.parquet", 1)]
    second = published_folder(tmp_path, {"paths-00000-of-00001.parquet": "bb"})
    assert inputs.match_current(str(tmp_path / "paths-*.parquet")) == [(f"{second}/paths-00000-of-00001.parquet", 2)]
    # the plain listing sees the top-level links, whichever version they lead to at this moment
    assert fileio.match(str(tmp_path / "paths-*.parquet")) == [(str(tmp_path / "paths-00000-of-00001.parquet"), 2)]


def test_a_published_folder_names_the_data_files_of_its_current_version(tmp_path):
    folder = published_folder(
        tmp_path, {"paths-00000-of-00001.parquet": "abc", "dead_letter-00000-of-00001.jsonl": "", "summary.json": "{}"}
    )
    assert inputs.expand_inputs("--dataset", str(tmp_path)) == [(f"{folder}/paths-00000-of-00001.parquet", 3)]
