"""pycocoevalcap 1.2's `Spice().compute_score`, run on OpenJDK 17: the test oracle of `vlnkit.captioning.spice`.

The wrapper is called unmodified except for two things it cannot do on this machine, both outside
its scoring:
- its constructor's `get_stanford_models()` downloads CoreNLP 3.6.0 from nlp.stanford.edu (not
  reachable here): it is skipped, and the CoreNLP jars fetched by `vlnkit.captioning.jars` (same
  sha256 as the Stanford zip's, checks/SOURCE.md) go on the classpath instead;
- its `java -jar -Xmx8G spice-1.0.jar IN -cache DIR -out OUT -subset -silent` cannot run on JDK 17
  (the jar needs `--add-opens` and a JavaScript engine, checks/SOURCE.md): the same command is run
  with those JVM flags, the wrapper's own `spice-1.0.jar` and `lib/` started by class, and its parse
  cache in a fresh folder (its default, `cache/` inside the installed package, would carry parses
  from one test run to the next).
Input file, arguments after the class, output parsing and the mean are the wrapper's own.
"""

from __future__ import annotations

import subprocess
import types
from pathlib import Path

from tests.session_memo import key_of, memo_json, session_folder


def reference_spice(hypotheses: list[str], references: list[list[str]], ids: list[str], cache: Path):
    """(corpus SPICE, per-item F) as pycocoevalcap's Spice computes them, per-item in `ids` order."""
    import pycocoevalcap.spice.spice as wrapper

    from vlnkit.captioning.jars import jar_folder, rhino_jar
    from vlnkit.captioning.spice import MAIN_CLASS, OPENS

    corenlp = [jar_folder() / "spice" / "lib" / f"stanford-corenlp-3.6.0{s}.jar" for s in ("", "-models")]
    cache.mkdir(parents=True, exist_ok=True)

    def check_call(cmd, cwd=None):
        java, jar_flag, heap, jar, *rest = cmd
        assert (java, jar_flag, jar) == ("java", "-jar", wrapper.SPICE_JAR), cmd  # the wrapper's command
        rest[rest.index("-cache") + 1] = str(cache)
        classpath = ":".join([jar, "lib/*", *map(str, corenlp), str(rhino_jar())])
        opens = [f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in OPENS]
        return subprocess.check_call([java, heap, *opens, "-cp", classpath, MAIN_CLASS, *rest], cwd=cwd)

    original, models = wrapper.subprocess, wrapper.get_stanford_models
    wrapper.subprocess, wrapper.get_stanford_models = types.SimpleNamespace(check_call=check_call), lambda: None
    try:
        score, items = wrapper.Spice().compute_score(
            {i: list(r) for i, r in zip(ids, references)}, {i: [h] for i, h in zip(ids, hypotheses)}
        )
    finally:
        wrapper.subprocess, wrapper.get_stanford_models = original, models
    order = sorted(ids)  # the wrapper returns items in sorted id order
    by_id = {i: s["All"]["f"] for i, s in zip(order, items)}
    return score, [by_id[i] for i in ids]


def reference_spice_once(tmp_path_factory, hypotheses: list[str], references: list[list[str]], ids: list[str]):
    """`reference_spice` of this input, computed once per test session (tests.session_memo): each jar call
    loads CoreNLP's models first, 30-60 s of CPU, and two test files check against the same set."""
    key = key_of(hypotheses, references, ids)
    cache = session_folder(tmp_path_factory) / f"coco-spice-cache-{key}"
    score, items = memo_json(
        tmp_path_factory, "coco-spice", key, lambda: reference_spice(hypotheses, references, ids, cache)
    )
    return score, items
