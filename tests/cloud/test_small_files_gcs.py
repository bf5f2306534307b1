"""A set of small files read from `gs://` (the Cloud Storage emulator) as from a local folder: the same
bytes as stored, in the same order, and so the same set checksum (REVERIE's visibility folder)."""

from __future__ import annotations

import gzip

from vlnkit.io import fileio
from vlnkit.provenance import set_digest


def test_small_files_and_their_set_digest_are_the_same_in_a_bucket(gcs_emulator, tmp_path):
    files = {"b.json": b'{"x": 1}', "a.json": b"{}", "c.json.gz": gzip.compress(b"[1, 2]"), "d.txt": b"no"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        gcs_emulator.put(f"small_files/{name}", data)
    for pattern in ("*.json", "*.json*"):
        local = list(fileio.read_small_files(str(tmp_path / pattern)))
        remote = list(fileio.read_small_files(gcs_emulator.url("small_files", pattern)))
        assert [(p.rsplit("/", 1)[-1], b) for p, b in remote] == [(p.rsplit("/", 1)[-1], b) for p, b in local]
        assert [b for _, b in local] == [files[p.rsplit("/", 1)[-1]] for p, _ in local]  # stored, not unzipped
        assert set_digest(gcs_emulator.url("small_files", pattern)) == set_digest(str(tmp_path / pattern))
