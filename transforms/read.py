"""Reading R2R-format datasets into validated records, with per-record dead letters."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from vlnkit import fileio
from vlnkit.r2r import RecordError, parse_r2r


class _ParseR2RFile(beam.DoFn):
    def __init__(self, require_distance: bool, min_path_len: int):
        self.require_distance = require_distance
        self.min_path_len = min_path_len
        self.read = Metrics.counter("read", "records")
        self.bad = Metrics.counter("read", "dead_letter")

    def process(self, element):
        rank, path = element
        try:
            data = fileio.read_bytes(path)
        except Exception as exc:  # any filesystem error: the file is the dead letter
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read file ({exc})"))
            return
        for item in parse_r2r(data, path, require_distance=self.require_distance, min_path_len=self.min_path_len):
            if isinstance(item, RecordError):
                self.bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, item.to_dict())
            else:
                self.read.inc()
                item["_order"] = (rank, item["_index"])
                yield item


class ReadR2R(beam.PTransform):
    """R2R JSON / JSON Lines files -> validated record dicts (main output) and dead letters.

    Each record gains `_source`, `_index` and `_order` (file rank, index): a total order that
    does not depend on the runner, used for stable tie-breaking and output ordering.
    """

    def __init__(self, files: list[str], require_distance: bool = False, min_path_len: int = 1, reshuffle: bool = True):
        super().__init__()
        self.reshuffle = reshuffle
        self.files = list(files)
        self.require_distance = require_distance
        self.min_path_len = min_path_len

    def expand(self, pbegin):
        parsed = (
            pbegin
            | "Files" >> beam.Create(list(enumerate(self.files)))
            | "Parse"
            >> beam.ParDo(_ParseR2RFile(self.require_distance, self.min_path_len)).with_outputs(
                DEAD_LETTER, main="records"
            )
        )
        # One file holds many records: spread them over workers (skip it when a grouping follows anyway).
        records = parsed.records | "Spread" >> beam.Reshuffle() if self.reshuffle else parsed.records
        return {"records": records, DEAD_LETTER: parsed[DEAD_LETTER]}


class _KeepFirst(beam.DoFn):
    def __init__(self, what: str):
        self.what = what
        self.duplicates = Metrics.counter("dedupe", "dead_letter")

    def process(self, element):
        key, records = element
        records = sorted(records, key=lambda r: r["_order"])
        yield records[0]
        first = records[0]
        for dup in records[1:]:
            self.duplicates.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                dead_letter(
                    "dedupe",
                    dup.get("_source", ""),
                    f"#{dup.get('_index', '?')}",
                    f"duplicate {self.what} {key!r} (kept {first.get('_source', '')} #{first.get('_index', '?')})",
                ),
            )


class DedupeBy(beam.PTransform):
    """Keep the first record (by `_order`) of each key; the others become dead letters."""

    def __init__(self, key_fn, what: str):
        super().__init__()
        self.key_fn = key_fn
        self.what = what

    def expand(self, records):
        out = (
            records
            | "Key" >> beam.Map(lambda r, f=self.key_fn: (f(r), r))
            | "Group" >> beam.GroupByKey()
            | "KeepFirst" >> beam.ParDo(_KeepFirst(self.what)).with_outputs(DEAD_LETTER, main="records")
        )
        return {"records": out.records, DEAD_LETTER: out[DEAD_LETTER]}
