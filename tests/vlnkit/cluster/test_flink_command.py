"""`vlnkit flink-cluster start` without the Java parts the install step fetches: one line naming the
install command, exit 2, and no process started."""

from __future__ import annotations

import socket

import yaml

from tests.conftest import ROOT
from vlnkit.cluster import flink


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_start_without_the_java_parts_says_which_command_fetches_them(tmp_path, monkeypatch, capsys):
    config = yaml.safe_load((ROOT / "configs" / "flink-cluster.yaml").read_text())
    config["state_dir"] = str(tmp_path / "state")
    config["flink"]["rest.port"] = _free_port()
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("VLNKIT_JAVA_CACHE", str(tmp_path / "empty"))
    assert flink.main(["start", f"--config={path}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "python -m vlnkit.parts" in err[0], err
    assert flink.read_pids(flink.load_config(str(path))) == {}
