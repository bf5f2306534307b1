"""Where the Java parts of a Flink run are, and that they are the pinned ones.

Beam's Flink job server comes from Maven Central as the unshaded `beam-runners-flink-1.19:2.62.0` with
every jar it depends on (Central serves no shaded `beam-runners-flink-*-job-server` jar here);
`fetch_job_server_jars` (the install step, `python -m vlnkit.parts`) has Maven resolve
`flink_job_server.pom.xml` and copy them into `job_server_dir()`, and `JARS_SHA256` pins each by name and
sha256 (both files next to this module). Nothing is downloaded when a cluster starts or a job runs: a missing or changed jar stops the
start in one line.

Flink's own distribution jars (flink-dist 1.19.0, the version that Beam release was built against) come
from PyPI's `apache-flink-libraries`, installed with the project.

The job server's classes are loaded by a class loader of the project's own (`UnlistedClasspath.java`, next
to this module), compiled by the same install step (`build_unlisted_loader`) into a jar named by its source's
sha256: it keeps the job server from uploading its whole classpath with every job (the source says why and
how).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from vlnkit.provenance import file_digest

BEAM_VERSION = "2.62.0"
JARS_SHA256 = Path(__file__).with_name("flink_job_server_jars.sha256")
POM = Path(__file__).with_name("flink_job_server.pom.xml")
UNLISTED_LOADER_SOURCE = Path(__file__).with_name("UnlistedClasspath.java")
UNLISTED_LOADER_CLASS = "UnlistedClasspath"
INSTALL_COMMAND = "python -m vlnkit.parts"


def unlisted_loader_flags(classpath: str) -> list[str]:
    """`java` flags that make the unlisted class loader the JVM's system class loader over `classpath`
    (the main class is named after them, as usual)."""
    return [
        f"-Djava.system.class.loader={UNLISTED_LOADER_CLASS}",
        f"-Dvlnkit.unlisted.classpath={classpath}",
        "-cp",
        str(check_unlisted_loader()),
    ]


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


def fetch_job_server_jars(relist: bool = False) -> Path:
    """The install step: leave a folder that already holds exactly the pinned jars as it is; otherwise have
    Maven resolve `POM` from Maven Central into a fresh folder, check every jar against the committed list
    (a jar missing, unlisted or different fails the install, and the old folder stays), then move it into
    place. `relist=True`, after a deliberate pin change in the pom, rewrites the list instead.
    Maven is a plain `mvn dependency:copy-dependencies`: it resolves the transitive graph, which pip cannot."""
    folder = job_server_dir()
    wanted = pinned()
    if not relist and folder.is_dir() and sorted(p.name for p in folder.iterdir()) == sorted(wanted):
        try:
            check_job_server_jars()
            return folder
        except MissingJavaParts:
            pass
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MissingJavaParts("Maven (mvn) is needed to fetch the Flink job server (apt-get install maven)")
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    command = [mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(POM), "dependency:copy-dependencies"]
    command += ["-DincludeScope=runtime", f"-DoutputDirectory={partial}"]
    subprocess.run(command, check=True)
    got = {p.name: file_digest(str(p)) for p in partial.iterdir()}
    if relist:
        JARS_SHA256.write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(got.items())))
        wanted = got
    if got != wanted:
        odd = sorted(set(got.items()) ^ set(wanted.items()))[:3]
        raise MissingJavaParts(f"the jars Maven resolved differ from {JARS_SHA256.name}: {odd}")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def check_job_server_jars(verify_digests: bool = True) -> list[Path]:
    """The job server's classpath: every pinned jar, checked; raises MissingJavaParts naming the first
    missing or changed one and the command that fetches them."""
    folder = job_server_dir()
    jars = []
    for name, digest in sorted(pinned().items()):
        path = folder / name
        if not path.exists():
            raise MissingJavaParts(f"{path} is missing; run `{INSTALL_COMMAND}` (fetches the pinned jars)")
        if verify_digests:
            if file_digest(str(path)) != digest:
                raise MissingJavaParts(f"{path} does not match its pinned sha256; rerun `{INSTALL_COMMAND}`")
        jars.append(path)
    return jars


def unlisted_loader_jar() -> Path:
    """Where the install step leaves the compiled class loader: named by its source's sha256, so that a
    changed source is a missing jar, never a stale one."""
    digest = hashlib.sha256(UNLISTED_LOADER_SOURCE.read_bytes()).hexdigest()[:16]
    return job_server_dir().parent / f"unlisted-classpath-{digest}.jar"


def build_unlisted_loader() -> Path:
    """The install step's second half: compile `UNLISTED_LOADER_SOURCE` with the JDK's javac into
    `unlisted_loader_jar()` (kept when already there). Written in Java because it must be a class loader of
    the job server's JVM."""
    jar = unlisted_loader_jar()
    if jar.exists():
        return jar
    javac, jar_tool = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar_tool is None:
        raise MissingJavaParts(
            "a JDK's javac and jar are needed to build the Flink job server's class loader "
            "(apt-get install openjdk-17-jdk-headless)"
        )
    partial = jar.with_name(jar.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    classes = partial / "classes"
    classes.mkdir(parents=True)
    subprocess.run([javac, "--release", "17", "-d", str(classes), str(UNLISTED_LOADER_SOURCE)], check=True)
    subprocess.run([jar_tool, "cf", str(partial / jar.name), "-C", str(classes), "."], check=True)
    (partial / jar.name).rename(jar)
    shutil.rmtree(partial, ignore_errors=True)
    for stale in jar.parent.glob("unlisted-classpath-*.jar"):  # built from an earlier source
        if stale != jar:
            stale.unlink()
    return jar


def check_unlisted_loader() -> Path:
    """The compiled class loader, or MissingJavaParts naming the install command."""
    jar = unlisted_loader_jar()
    if not jar.exists():
        raise MissingJavaParts(f"{jar} is missing; run `{INSTALL_COMMAND}` (builds the job server's class loader)")
    return jar


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
