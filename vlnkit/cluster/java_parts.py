"""Where the Java parts of a Flink run are, and that they are the pinned ones.

Beam's Flink job server comes from Maven Central as the unshaded `beam-runners-flink-1.19:2.62.0` with
every jar it depends on (Central serves no shaded `beam-runners-flink-*-job-server` jar here); the
install step (`scripts/install_java_parts.sh`, run by `.ci/run`) copies them into `job_server_dir()`,
and `JARS_SHA256` (next to this module) pins each by name and sha256. Nothing is downloaded when a
cluster starts or a job runs: a missing or changed jar stops the start in one line.

Flink's own distribution jars (flink-dist 1.19.0, the version that Beam release was built against) come
from PyPI's `apache-flink-libraries`, installed with the project.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

BEAM_VERSION = "2.62.0"
JARS_SHA256 = Path(__file__).with_name("flink_job_server_jars.sha256")


class MissingJavaParts(Exception):
    """The pinned jars are not where the install step puts them, or differ from their checksums."""


def job_server_dir() -> Path:
    """The cache folder of the job server's jars ($VLNKIT_JAVA_CACHE or ~/.cache/vlnkit/java)."""
    root = os.environ.get("VLNKIT_JAVA_CACHE") or os.path.expanduser("~/.cache/vlnkit/java")
    return Path(root) / f"beam-flink-job-server-{BEAM_VERSION}"


def pinned() -> dict[str, str]:
    """Jar file name -> sha256, from the committed list (`sha256sum` format)."""
    out = {}
    for line in JARS_SHA256.read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            out[name.lstrip("*")] = digest
    return out


def check_job_server_jars(verify_digests: bool = True) -> list[Path]:
    """The job server's classpath: every pinned jar, checked; raises MissingJavaParts naming the first
    missing or changed one and the command that fetches them."""
    folder = job_server_dir()
    jars = []
    for name, digest in sorted(pinned().items()):
        path = folder / name
        if not path.exists():
            raise MissingJavaParts(f"{path} is missing; run scripts/install_java_parts.sh (fetches the pinned jars)")
        if verify_digests:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            if h.hexdigest() != digest:
                raise MissingJavaParts(f"{path} does not match its pinned sha256; rerun scripts/install_java_parts.sh")
        jars.append(path)
    return jars


def flink_dist_dir() -> Path:
    """Flink's distribution (lib/ and bin/bash-java-utils.jar) as `apache-flink-libraries` installs it."""
    try:
        import pyflink
    except ImportError as exc:
        raise MissingJavaParts("apache-flink-libraries is not installed (pip install -e .)") from exc
    folder = Path(pyflink.__path__[0])
    if not (folder / "lib").is_dir():
        raise MissingJavaParts(f"{folder}/lib is missing: apache-flink-libraries is incomplete")
    return folder
