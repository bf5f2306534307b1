"""A small folder of input files for the file-access and input-listing tests."""

import pytest


@pytest.fixture
def files(tmp_path):
    for name, text in {"a.json": "[]", "b.json": "[1]", "c.txt": "x"}.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.json").write_text("[2,3]")
    return tmp_path
