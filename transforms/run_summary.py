"""The ending every job's pipeline shares: dead letters to one file, every tally summed, summary.json.

A job hands over what it could not use and what it counted; `FinishRun` writes
`dead_letter-00000-of-00001.jsonl`, counts the dead letters into the tallies, sums the tallies and
writes `summarize(totals, **side)` as `summary.json`. The job's `Run` then judges the summary and
writes the manifest and `_SUCCESS` (pipelines/job.py).
"""

from __future__ import annotations

import apache_beam as beam

from transforms.deadletter import DEAD_LETTER_FILE, WriteDeadLetters
from transforms.tally import tally
from transforms.write import WriteSummary
from vlnkit.io import fileio


class FinishRun(beam.PTransform):
    """{"dead_letters": [PCollection[dict]], "tallies": [PCollection[{name: number}]]} -> the summary.

    `summarize(totals, **side)` turns the summed tallies (with `dead_letters` counted in) into the
    summary dict; `side_inputs` are passed to it as Beam side inputs (e.g. `AsSingleton(skills)`).
    Returns the PCollection holding the one summary dict.
    """

    def __init__(self, output_dir: str, summarize, side_inputs: dict | None = None):
        super().__init__()
        self.output_dir = output_dir
        self.summarize = summarize
        self.side_values = side_inputs or {}

    def expand(self, parts):
        dead = _pcolls(parts.get("dead_letters", ())) | "DeadLetters" >> WriteDeadLetters(
            fileio.join(self.output_dir, DEAD_LETTER_FILE)
        )
        tallies = (*_pcolls(parts.get("tallies", ())), dead | "TallyDead" >> tally("dead_letters"))
        return tallies | "Summary" >> WriteSummary(
            fileio.join(self.output_dir, "summary.json"), self.summarize, self.side_values
        )


def _pcolls(value) -> tuple:
    """A PCollection or a sequence of them as a tuple (Beam may hand a one-item list over unwrapped)."""
    return (value,) if isinstance(value, beam.pvalue.PCollection) else tuple(value)


def finish_run(output_dir: str, summarize, dead_letters, tallies, side_inputs: dict | None = None):
    """Apply `FinishRun` to sequences of PCollections (each sequence is flattened into one first)."""
    dead = _pcolls(dead_letters)
    counted = _pcolls(tallies)
    pipeline = (dead + counted)[0].pipeline
    if not dead:
        dead = (pipeline | "NoDeadLetters" >> beam.Create([]),)
    parts = {
        "dead_letters": dead | "FlattenDeadLetters" >> beam.Flatten(pipeline=pipeline),
        "tallies": counted | "FlattenTallies" >> beam.Flatten(pipeline=pipeline),
    }
    return parts | "Finish" >> FinishRun(output_dir, summarize, side_inputs)
