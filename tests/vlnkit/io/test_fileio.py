"""fileio: the plain primitives (open, read, write, exists, join, match, remove, is_remote)."""

from __future__ import annotations

import errno
import os
import re
import socket
import subprocess
import sys
import textwrap

import pytest

from vlnkit.io import fileio


def test_match_is_lenient_and_skips_folders(files):
    assert fileio.match(str(files / "*")) == sorted(
        [(str(files / "a.json"), 2), (str(files / "b.json"), 3), (str(files / "c.txt"), 1)]
    )
    assert fileio.match(str(files / "none-*.json")) == []


def test_any_match_is_match_stopping_at_the_first_file(files):
    (files / "folder.json").mkdir()  # a folder is not a file, as for match
    (files / "broken.json").symlink_to(files / "gone.json")  # nor is a link to nothing
    (files / "link.json").symlink_to(files / "a.json")  # a link to a file is one
    assert [p.rsplit("/", 1)[-1] for p, _ in fileio.match(str(files / "*.json"))] == ["a.json", "b.json", "link.json"]
    for pattern in ("*.json", "*.txt", "folder.json", "none-*.json", "sub/*.json", "sub", "*/d.json"):
        assert fileio.any_match(str(files / pattern)) == bool(fileio.match(str(files / pattern))), pattern
    assert fileio.any_match(str(files / "*.txt")) and not fileio.any_match(str(files / "folder.json"))


def test_read_small_files_reads_what_match_lists_in_its_order(files):
    """The same files as `match`, in its order, with their bytes: folders, links to nothing, FIFOs and sockets are
    not files (a FIFO is not opened for reading, which would block); a file past one read's 64 KiB is whole."""
    (files / "folder.json").mkdir()
    (files / "broken.json").symlink_to(files / "gone.json")
    (files / "link.json").symlink_to(files / "a.json")
    os.mkfifo(files / "pipe.json")
    listening = socket.socket(socket.AF_UNIX)  # a socket cannot even be opened
    listening.bind(str(files / "sock.json"))
    (files / "big.json").write_bytes(bytes(range(256)) * 1000)
    (files / "edge.json").write_bytes(b"x" * (1 << 16))  # exactly one read's worth: a second read finds the end
    (files / ".hidden.json").write_bytes(b"{}")  # a glob's '*' matches no leading dot; '.*' does
    patterns = ("*.json", "*", "*/d.json", "none-*.json", ".*", "a.json", "none/*.json", "[s]ub/../*", "sock.json")
    for pattern in patterns:  # a glob in the last part (one listing), elsewhere or nowhere (glob's way)
        got = list(fileio.read_small_files(str(files / pattern)))
        assert [(p, len(b)) for p, b in got] == fileio.match(str(files / pattern)), pattern
        assert all(b == open(p, "rb").read() for p, b in got)
    assert "pipe.json" not in {p.rsplit("/", 1)[-1] for p, _ in fileio.read_small_files(str(files / "*"))}
    listening.close()


@pytest.mark.parametrize("pattern", ["*.json", "*/../*.json", "a.json"])  # a folder's listing, glob's, one name
def test_read_small_files_names_a_file_it_cannot_open(files, monkeypatch, pattern):
    """A file that is there but cannot be read (no permission, simulated: the suite runs as root) is an
    OSError naming it, never left out; a file gone since the listing is left out, as `match` leaves it."""
    real_open, refused = os.open, {}

    def refusing_open(path, flags, *args, **kwargs):
        err = refused.get(os.path.basename(os.fsdecode(path)))
        if err:
            raise OSError(err, os.strerror(err), os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    a = next(p for p, _ in fileio.match(str(files / pattern)) if p.endswith("a.json"))
    refused["a.json"] = errno.EACCES
    with pytest.raises(OSError, match=f"cannot read {re.escape(a)}: Permission denied"):
        list(fileio.read_small_files(str(files / pattern)))
    refused["a.json"] = errno.ENOENT
    assert a not in {p for p, _ in fileio.read_small_files(str(files / pattern))}


def test_is_remote_and_is_glob():
    assert fileio.is_remote("gs://bucket/a.json") and fileio.is_remote("s3://b/a") and not fileio.is_remote("/a/b")
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


def test_compressed_files_read_like_plain_ones(tmp_path):
    import bz2
    import gzip

    from vlnkit.io import fileio

    data = b'[{"path_id": 1}]\n'
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(data))
    (tmp_path / "a.json.bz2").write_bytes(bz2.compress(data))
    assert fileio.read_bytes(str(tmp_path / "a.json.gz")) == data
    assert fileio.read_bytes(str(tmp_path / "a.json.bz2")) == data


def test_build_r4r_reads_a_gzipped_dataset_like_the_plain_one(tmp_path):
    import gzip
    import json

    from pipelines import build_r4r
    from vlnkit.fixtures.grid import write_environment

    r2r, conn = write_environment(str(tmp_path / "env"), scans=1, paths_per_scan=8)
    packed = tmp_path / "r2r.json.gz"
    packed.write_bytes(gzip.compress(open(r2r, "rb").read()))
    plain = build_r4r.main([f"--dataset={r2r}", f"--connectivity_dir={conn}", f"--output_dir={tmp_path}/a"])
    zipped = build_r4r.main([f"--dataset={packed}", f"--connectivity_dir={conn}", f"--output_dir={tmp_path}/b"])
    assert json.dumps(plain["dataset"], sort_keys=True) == json.dumps(zipped["dataset"], sort_keys=True)
    assert plain["records_read"] == zipped["records_read"] == 8


def test_a_cloud_storage_path_works_after_beams_own_import_of_its_filesystem_failed():
    """Beam imports its Cloud Storage filesystem once, at its start, and skips it silently when that import
    fails: a gs:// path then had no filesystem for the life of the process ("Unable to get filesystem", seen
    once in CI from a launcher started beside three others, where the same command passes otherwise). The
    first failure is simulated (Google's storage client refused during Beam's import); a gs:// path named
    afterwards loads the filesystem, or says why it cannot."""
    code = textwrap.dedent(
        """
        from vlnkit.refused_imports import refused
        with refused(("google.cloud.storage",), "the test"):
            from apache_beam.io.filesystems import FileSystems
        from vlnkit.io import fileio
        print(fileio.join("gs://bucket/dir", "f.json"))
        with refused(("google.cloud.storage",), "the test"):
            try:
                fileio.join("gs://bucket/x", "y")  # already loaded: the refusal changes nothing now
                print("still loaded")
            except OSError as exc:
                print(exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["gs://bucket/dir/f.json", "still loaded"], done.stdout
