"""The ending every job's pipeline shares: dead letters to one file, every tally summed, summary.json.

A job hands over what it could not use and what it counted; `FinishRun` writes
`dead_letter-00000-of-00001.jsonl`, counts the dead letters into the tallies, sums the tallies and
writes `summarize(totals, **side)` as `summary.json`. The job's `Run` then judges the summary and
writes the manifest and `_SUCCESS` (pipelines/job.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import apache_beam as beam

from transforms.deadletter import DEAD_LETTER_FILE, WriteDeadLetters
from transforms.gather import flatten
from transforms.write import WriteSummary
from vlnkit.io import fileio

STAGE = "dead_letters_at."  # tally keys counting dead letters per stage (read, join, graph, ...)


@dataclass
class FinishRun(beam.PTransform):
    """{"dead_letters": [PCollection[dict]], "tallies": [PCollection[{name: number}]]} -> the summary.

    `summarize(totals, **side)` turns the summed tallies (with `dead_letters` counted in) into the
    summary dict; `side` holds Beam side inputs by keyword (e.g. `AsSingleton(skills)`).
    The summary also gets `dead_letters_by_stage`, so a run can be judged against the records it was
    offered (records refused at reading never count as read; records refused later already do).
    Returns the PCollection holding the one summary dict.
    """

    output_dir: str
    summarize: Callable
    side: dict = field(default_factory=dict)

    def expand(self, parts):
        dead = _pcolls(parts.get("dead_letters", ())) | "DeadLetters" >> WriteDeadLetters(
            fileio.join(self.output_dir, DEAD_LETTER_FILE)
        )
        by_stage = dead | "TallyDead" >> beam.Map(lambda d: {"dead_letters": 1, f"{STAGE}{d.get('stage', '')}": 1})
        tallies = (*_pcolls(parts.get("tallies", ())), by_stage)
        summarize = self.summarize

        def with_stages(totals, **side):
            summary = summarize(totals, **side)
            stages = {k[len(STAGE) :]: v for k, v in sorted(totals.items()) if k.startswith(STAGE)}
            return {**summary, "dead_letters_by_stage": stages}

        return tallies | "Summary" >> WriteSummary(fileio.join(self.output_dir, "summary.json"), with_stages, self.side)


def _pcolls(value) -> tuple:
    """A PCollection or a sequence of them as a tuple (Beam may hand a one-item list over unwrapped)."""
    return (value,) if isinstance(value, beam.pvalue.PCollection) else tuple(value)


def finish_run(output_dir: str, summarize, dead_letters, tallies, side: dict | None = None):
    """Apply `FinishRun` to sequences of PCollections (each sequence is flattened into one first)."""
    dead = _pcolls(dead_letters)
    counted = _pcolls(tallies)
    pipeline = (dead + counted)[0].pipeline
    parts = {
        "dead_letters": flatten(dead, pipeline, "FlattenDeadLetters"),
        "tallies": flatten(counted, pipeline, "FlattenTallies"),
    }
    return parts | "Finish" >> FinishRun(output_dir, summarize, side or {})
