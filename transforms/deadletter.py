"""Dead letters: records that could not be processed, with the reason, never dropped silently."""

from __future__ import annotations

import json
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.gather import GatherToOne
from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError

DEAD_LETTER = "dead_letter"
DEAD_LETTER_FILE = "dead_letter-00000-of-00001.jsonl"


def dead_letter(stage: str, source: str, record: str, reason: str) -> dict:
    return RecordError(source=source, record=record, reason=reason, stage=stage).to_dict()


@dataclass
class WriteDeadLetters(beam.PTransform):
    """Flatten dead-letter PCollections into one JSON Lines file (empty when there are none).

    Dead letters are few by nature, so they are gathered to one writer: one file, sorted, no
    sharding machinery. Returns the flattened PCollection (for counting).
    """

    path: str

    def expand(self, pcolls):
        # One PCollection (e.g. already flattened) or several.
        pcolls = (pcolls,) if isinstance(pcolls, beam.pvalue.PCollection) else tuple(pcolls)
        flat = pcolls | "FlattenDeadLetters" >> beam.Flatten()
        counter = Metrics.counter("dead_letter", "records")
        path = self.path

        def write(records):
            lines = sorted(json.dumps(d, sort_keys=True, ensure_ascii=False) for d in records)
            counter.inc(len(lines))
            with fileio.open_write(path) as f:
                f.write("".join(line + "\n" for line in lines).encode("utf-8"))

        _ = flat | "Gather" >> GatherToOne() | "WriteDeadLetterJsonl" >> beam.Map(write)
        return flat
