"""METEOR 1.5 through the reference jar, as pycocoevalcap 1.2's wrapper drives it (`meteor/meteor.py`).

The wrapper starts `java -jar -Xmx2G meteor-1.5.jar - - -stdio -l en -norm` (l. 18-19), sends one line
`SCORE ||| ref 1 ||| ... ||| hypothesis` per item (the hypothesis with `|||` removed and double spaces
made single, l. 59-61) and reads back the item's statistics, then one `EVAL ||| stats ||| ...` line for
the set, and reads one score per item and then the set's aggregate (l. 35-45). The aggregate is the jar's
own (from pooled statistics), not the mean of the items' scores. "Equal" for METEOR is identical output
of the same jar on the same lines.

Here one JVM serves a whole process (`Meteor.shared()`): the paraphrase table loads once per worker, about
10 s of CPU, and the run's corpus scores (evaluated from summed statistics at its end) use the jar the
batches used when both run in one process. The jar keeps no state between lines (each SCORE line is
scored alone; EVAL reads only the statistics it is given), so sharing it changes no output. A batch's
SCORE lines are written by a thread while its statistics are read, so the pipe never blocks.
"""

from __future__ import annotations

import atexit
import subprocess
import threading

import numpy as np

from vlnkit.captioning.jars import java, meteor_jar, missing


class MeteorUnavailable(RuntimeError):
    """Java or the jar is missing: the message is one line naming the install command."""


def _score_line(hypothesis: str, references: list[str]) -> str:
    hypothesis = hypothesis.replace("|||", "").replace("  ", " ")
    return " ||| ".join(("SCORE", " ||| ".join(references), hypothesis))


class Meteor:
    """A running METEOR 1.5 jar: `score(hypotheses, references)` -> (aggregate, per-item scores)."""

    _shared: Meteor | None = None
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls) -> Meteor:
        """This process's jar: started at the first call, the same running one after it, a new one if it has
        ended; stopped when the process exits. Callers do not close it."""
        with cls._shared_lock:
            jar = cls._shared
            if jar is None or jar._process.poll() is not None:
                jar = cls._shared = cls()
                atexit.register(jar.close)
            return jar

    def __init__(self):
        reason = missing("meteor")
        if reason:
            raise MeteorUnavailable(reason)
        jar = meteor_jar()
        self._process = subprocess.Popen(
            [java(), "-jar", "-Xmx2G", jar.name, "-", "-", "-stdio", "-l", "en", "-norm"],
            cwd=jar.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._lock = threading.Lock()

    def score(self, hypotheses: list[str], references: list[list[str]]) -> tuple[float, list[float]]:
        """Tokenized, space-joined captions (as the reference feeds the jar); one list of references per item."""
        if len(hypotheses) != len(references):
            raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
        lines = [_score_line(h, r) for h, r in zip(hypotheses, references)]
        with self._lock:
            proc = self._process

            def write():
                for line in lines:
                    proc.stdin.write(line + "\n")
                proc.stdin.flush()

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            stats = [proc.stdout.readline().strip() for _ in lines]
            writer.join()
            proc.stdin.write("EVAL ||| " + " ||| ".join(stats) + "\n" if stats else "EVAL\n")
            proc.stdin.flush()
            scores = [float(proc.stdout.readline().strip()) for _ in lines]
            aggregate = float(proc.stdout.readline().strip())
        return aggregate, scores

    def statistics(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        """(items, k) the jar's sufficient statistics per item (its SCORE replies). They add: the jar's
        aggregate of a set is its EVAL of the summed statistics (checked in the tests), so a corpus METEOR,
        and each bootstrap replicate's, comes from sums made anywhere."""
        lines = [_score_line(h, r) for h, r in zip(hypotheses, references)]
        with self._lock:
            proc = self._process
            writer = threading.Thread(
                target=lambda: (proc.stdin.writelines(x + "\n" for x in lines), proc.stdin.flush())
            )
            writer.start()
            replies = [proc.stdout.readline().split() for _ in lines]
            writer.join()
        return np.array(replies, dtype=np.float64).reshape(len(lines), -1)

    def evaluate(self, statistics: np.ndarray) -> list[float]:
        """METEOR of each row of summed statistics (one EVAL line; the jar scores each row on its own)."""
        rows = np.atleast_2d(statistics)
        line = "EVAL ||| " + " ||| ".join(" ".join(repr(float(x)) for x in row) for row in rows)
        with self._lock:
            self._process.stdin.write(line + "\n")
            self._process.stdin.flush()
            scores = [float(self._process.stdout.readline().strip()) for _ in rows]
            self._process.stdout.readline()  # the aggregate of all rows: not asked for
        return scores

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            self._process.kill()
            self._process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
