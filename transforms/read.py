"""Reading R2R-format datasets into validated records, with per-record dead letters."""

from __future__ import annotations

import functools

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from vlnkit.datasets.r2r import RecordError, parse_r2r
from vlnkit.io import fileio


class _ParseFiles(beam.DoFn):
    """(rank, path) -> the file's parsed items; an unreadable file or a bad record is a dead letter."""

    def __init__(self, parse, namespace: str, order_key):
        super().__init__()
        self.parse = parse
        self.order_key = order_key
        self.read = Metrics.counter(namespace, "records")
        self.bad = Metrics.counter(namespace, "dead_letter")

    def process(self, element):
        rank, path = element
        try:
            data = fileio.read_bytes(path)
        except Exception as exc:  # any filesystem error: the file is the dead letter
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read file ({exc})"))
            return
        for item in self.parse(data, path):
            if isinstance(item, RecordError):
                self.bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, item.to_dict())
            else:
                self.read.inc()
                item["_order"] = (rank, *self.order_key(item))
                yield item


def _index_in_file(item: dict) -> tuple:
    return (item["_index"],)


class ReadFiles(beam.PTransform):
    """Files -> parsed record dicts (main output `records`) and dead letters.

    `parse(data: bytes, path) -> iterable of dict | RecordError`; each dict must carry `_index`
    (its position in the file) and gains `_order` = (file rank, *order_key(item)): a total order
    that does not depend on the runner, used for stable tie-breaking and output ordering.
    `order_key` must make it unique when a file yields several items per position.
    """

    def __init__(
        self, files: list[str], parse, namespace: str = "read", reshuffle: bool = True, order_key=_index_in_file
    ):
        super().__init__()
        self.order_key = order_key
        self.files = list(files)
        self.parse = parse
        self.namespace = namespace
        self.reshuffle = reshuffle

    def expand(self, pbegin):
        parsed = (
            pbegin
            | "Files" >> beam.Create(list(enumerate(self.files)))
            | "Parse"
            >> beam.ParDo(_ParseFiles(self.parse, self.namespace, self.order_key)).with_outputs(
                DEAD_LETTER, main="records"
            )
        )
        # One file holds many records: spread them over workers (skip it when a grouping follows anyway).
        records = parsed.records | "Spread" >> beam.Reshuffle() if self.reshuffle else parsed.records
        return {"records": records, DEAD_LETTER: parsed[DEAD_LETTER]}


class ReadR2R(ReadFiles):
    """R2R JSON / JSON Lines files -> validated record dicts (with `_source`, `_index`, `_order`) and dead letters."""

    def __init__(self, files: list[str], require_distance: bool = False, min_path_len: int = 1, reshuffle: bool = True):
        parse = functools.partial(parse_r2r, require_distance=require_distance, min_path_len=min_path_len)
        super().__init__(files, parse, "read", reshuffle)


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


class ReadUniqueR2R(beam.PTransform):
    """R2R-format files -> {"records": validated records with unique path ids, "dead_letter": what could not be used}.

    Unique path ids make instruction ids unique, which every per-instruction job relies on.
    """

    def __init__(self, files: list[str], min_path_len: int = 1, **read_kwargs):
        super().__init__()
        self.files = list(files)
        self.min_path_len = min_path_len
        self.read_kwargs = read_kwargs

    def expand(self, pbegin):
        read = pbegin | "Read" >> ReadR2R(self.files, min_path_len=self.min_path_len, **self.read_kwargs)
        unique = read["records"] | "UniquePathIds" >> DedupeBy(lambda r: r["path_id"], "path_id")
        dead = (read[DEAD_LETTER], unique[DEAD_LETTER]) | "FlattenDead" >> beam.Flatten()
        return {"records": unique["records"], DEAD_LETTER: dead}
