"""Reading R2R-format datasets into validated records, with per-record dead letters.

Every reader can hand its records over one by one (the default, for chaining per-record
transforms) or, with `batched=True`, as lists of records: one Beam element per list, so a job
that only regroups records (deduplication, the R4R join) pays Beam's per-element cost per
list, not per record.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from vlnkit.datasets.buckets import bucket_count
from vlnkit.datasets.r2r import RecordError, parse_r2r
from vlnkit.datasets.records import validate_record
from vlnkit.datasets.rxr import is_rxr, parse_dataset
from vlnkit.datasets.trajectories import is_parquet
from vlnkit.hashing import stable_bucket
from vlnkit.io import fileio

BATCH_RECORDS = 4096  # records per list when readers hand over batches


@dataclass
class _ParseFiles(beam.DoFn):
    """(rank, path) -> the file's parsed items (or lists of them); an unreadable file or a bad record is a dead letter."""

    parse: Callable
    namespace: str  # of the counters of records read and dead-lettered
    order_key: Callable
    batch_records: int | None = None

    def setup(self):
        self.read = Metrics.counter(self.namespace, "records")
        self.bad = Metrics.counter(self.namespace, "dead_letter")

    def process(self, element):
        rank, path = element
        try:
            data = fileio.read_bytes(path)
        except Exception as exc:  # any filesystem error: the file is the dead letter
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read file ({exc})"))
            return
        kept = []  # the whole file is in memory already; with batches, its records leave in lists
        for item in self.parse(data, path):
            if isinstance(item, RecordError):
                self.bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, item.to_dict())
                continue
            item["_order"] = (rank, *self.order_key(item))
            if self.batch_records is None:
                self.read.inc()
                yield item
            else:
                kept.append(item)
        if self.batch_records is not None:
            yield from in_lists(kept, self.batch_records, self.read)


def in_lists(records: list, size: int, counter=None):
    """Consecutive lists of at most `size` records (counted on `counter`, a Beam counter, if given)."""
    for start in range(0, len(records), size):
        batch = records[start : start + size]
        if counter is not None:
            counter.inc(len(batch))
        yield batch


def _index_in_file(item: dict) -> tuple:
    return (item["_index"],)


@dataclass
class ReadFiles(beam.PTransform):
    """Files -> parsed record dicts (main output `records`) and dead letters.

    `parse(data: bytes, path) -> iterable of dict | RecordError`; each dict must carry `_index`
    (its position in the file) and gains `_order` = (file rank, *order_key(item)): a total order
    that does not depend on the runner, used for stable tie-breaking and output ordering.
    `order_key` must make it unique when a file yields several items per position.
    With `batched=True`, `records` holds lists of up to BATCH_RECORDS dicts (one file's, in file order).
    """

    files: list[str]
    parse: Callable
    namespace: str = "read"
    reshuffle: bool = True
    order_key: Callable = _index_in_file
    batched: bool = False

    def expand(self, pbegin):
        parsed = (
            pbegin
            | "Files" >> beam.Create(list(enumerate(self.files)))
            | "Parse"
            >> beam.ParDo(
                _ParseFiles(self.parse, self.namespace, self.order_key, BATCH_RECORDS if self.batched else None)
            ).with_outputs(DEAD_LETTER, main="records")
        )
        # One file holds many records: spread them over workers (skip it when a grouping follows anyway).
        records = parsed.records | "Spread" >> beam.Reshuffle() if self.reshuffle else parsed.records
        return {"records": records, DEAD_LETTER: parsed[DEAD_LETTER]}


@dataclass
class ReadR2R(beam.PTransform):
    """R2R JSON / JSON Lines files -> validated record dicts (with `_source`, `_index`, `_order`) and dead letters.

    With `rxr_guides=True` a file may also be an RxR guide file (told apart per file by its first record,
    `vlnkit.datasets.rxr.parse_dataset`): its lines are RxR records, one instruction each. The reading
    is `ReadFiles`'.
    """

    files: list[str]
    require_distance: bool = False
    reshuffle: bool = True
    batched: bool = False
    rxr_guides: bool = False

    def expand(self, pbegin):
        parse = parse_dataset if self.rxr_guides else parse_r2r
        parse = functools.partial(parse, require_distance=self.require_distance)
        return ReadFiles(self.files, parse, "read", self.reshuffle, batched=self.batched).expand(pbegin)


def record_order(record: dict):
    """A read record's `_order`: the total order every reader gives (a sort key)."""
    return record["_order"]


def split_by(batch: list[dict], key) -> list[tuple]:
    """A list of records -> (key, the list's records with that key, in list order) per key it holds."""
    parts = defaultdict(list)
    for record in batch:
        parts[key(record)].append(record)
    return list(parts.items())


def _duplicate(what, key, dup: dict, first: dict) -> dict:
    """`what`: the key's name ("path_id"), or a function giving the name and value of a key ("path_id 5")."""
    return dead_letter(
        "dedupe",
        dup.get("_source", ""),
        f"#{dup.get('_index', '?')}",
        f"duplicate {what(key) if callable(what) else f'{what} {key!r}'} (kept {first.get('_source', '')} #{first.get('_index', '?')})",
    )


# Groups of the per-record dedupe: a key's 63-bit stable hash (equal keys of any type, one group; fits
# Beam's signed 64-bit ints). Two keys that share a group are still told apart by value in `_KeepFirst`.
KEY_GROUPS = 1 << 63


@dataclass
class _SplitByBucket(beam.DoFn):
    """A list of records -> (bucket, the list's records of that bucket) per bucket it touches."""

    key_fn: Callable
    buckets: int

    def _bucket(self, record: dict) -> int:
        return stable_bucket(self.key_fn(record), buckets=self.buckets)

    def process(self, batch):
        if self.buckets == 1:
            yield 0, batch
            return
        yield from split_by(batch, self._bucket)


@dataclass
class _KeepFirst(beam.DoFn):
    """A group (a stable hash of the key) -> the first record (by `_order`) of each key; the others
    become dead letters. Keys are compared by value, as dict keys: 5, 5.0 and numpy.int64(5) are one.

    With `lists` a group holds lists of records and the kept records leave as one list in `_order`;
    without, a group holds records and each kept record leaves alone.
    """

    what: str | Callable
    key_fn: Callable
    lists: bool
    duplicates = Metrics.counter("dedupe", "dead_letter")

    def process(self, element):
        _, values = element
        records = (r for batch in values for r in batch) if self.lists else values
        kept, first_of = [], {}
        for record in sorted(records, key=record_order):
            key = self.key_fn(record)
            first = first_of.setdefault(key, record)
            if first is record:
                kept.append(record)
            else:
                self.duplicates.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, _duplicate(self.what, key, record, first))
        if not self.lists:
            yield from kept
        elif kept:
            yield kept


@dataclass
class DedupeBy(beam.PTransform):
    """Keep the first record (by `_order`) of each key; the others become dead letters.

    Keys are compared by value, as dict keys are (5, 5.0 and numpy.int64(5) are one key, "5" another),
    and grouped by their `vlnkit.hashing` hash, never by their type or `repr`.

    With `batched=True` it takes and gives lists of records: records are shuffled in lists keyed by
    `buckets` stable buckets of the key (each bucket holds about 1/buckets of the records), and each
    output list is one bucket's kept records in `_order`.
    """

    key_fn: Callable
    what: str | Callable  # the key's name ("path_id"), or a function wording a key for its dead letter
    batched: bool = False
    buckets: int = 1

    def expand(self, records):
        if self.batched:
            out = (
                records
                | "SplitByBucket" >> beam.ParDo(_SplitByBucket(self.key_fn, self.buckets))
                | "GroupBuckets" >> beam.GroupByKey()
                | "KeepFirst"
                >> beam.ParDo(_KeepFirst(self.what, self.key_fn, lists=True)).with_outputs(DEAD_LETTER, main="records")
            )
            return {"records": out.records, DEAD_LETTER: out[DEAD_LETTER]}
        out = (
            records
            | "Key" >> beam.Map(lambda r, f=self.key_fn: (stable_bucket(f(r), buckets=KEY_GROUPS), r))
            | "Group" >> beam.GroupByKey()
            | "KeepFirst"
            >> beam.ParDo(_KeepFirst(self.what, self.key_fn, lists=False)).with_outputs(DEAD_LETTER, main="records")
        )
        return {"records": out.records, DEAD_LETTER: out[DEAD_LETTER]}


SPREAD_RECORDS = 256  # records per list when records are spread over workers one by one


class SpreadRecords(beam.PTransform):
    """Lists of records -> single records, spread over workers in lists of SPREAD_RECORDS first.

    A grouped list (a whole dedupe bucket, say) would otherwise be one worker's: per-record work
    downstream (spaCy, translation, probe building) then runs in parallel, and the shuffle moves
    small lists, not records.
    """

    def expand(self, lists):
        return (
            lists
            | "SmallLists" >> beam.FlatMap(in_lists, SPREAD_RECORDS)
            | "Spread" >> beam.Reshuffle()
            | "OneByOne" >> beam.FlatMap(lambda batch: batch)
        )


@dataclass
class UniqueBy(beam.PTransform):
    """Lists of records read from `files` -> {"records", "dead_letter"}: the first record of each key.

    The one way every reader deduplicates: in lists, with buckets sized by the input
    (`vlnkit.datasets.buckets.bucket_count`); `batched=True` hands the kept lists on, otherwise single
    records, spread over workers (`SpreadRecords`).
    """

    key_fn: Callable
    what: str | Callable
    files: list[str]  # what was read: its size chooses the number of buckets
    batched: bool = False

    def expand(self, lists):
        buckets = bucket_count(list(self.files))
        unique = lists | "Dedupe" >> DedupeBy(self.key_fn, self.what, batched=True, buckets=buckets)
        records = unique["records"] if self.batched else unique["records"] | "SpreadRecords" >> SpreadRecords()
        return {"records": records, DEAD_LETTER: unique[DEAD_LETTER]}


def episode_key(record: dict):
    """What makes a record's instruction ids unique: its path_id (R2R), or ("instruction_id", id) (RxR, where
    several instructions share a path)."""
    return ("instruction_id", record["instruction_id"]) if is_rxr(record) else record["path_id"]


def episode_key_text(key) -> str:
    """An `episode_key` as a person reads it in a duplicate's dead letter, as the score job words it:
    "instruction_id 26" (RxR) or "path_id 4" (R2R)."""
    if isinstance(key, tuple) and key[:1] == ("instruction_id",):
        return f"instruction_id {key[1]!r}"
    return f"path_id {key!r}"


@dataclass
class ReadUniqueR2R(beam.PTransform):
    """R2R-format files -> {"records": validated records with unique path ids, "dead_letter": what could not be used}.

    Unique path ids make instruction ids unique, which every per-instruction job relies on (with
    `rxr_guides=True`, RxR guide files too, unique by instruction_id: `episode_key`).
    Records are read and deduplicated in lists (buckets chosen from the input size, see
    `vlnkit.datasets.buckets.bucket_count`); with `batched=True` `records` holds those lists, otherwise
    single records, spread over workers in small lists first so per-record work downstream runs
    in parallel. `require_distance` and `rxr_guides` are `ReadR2R`'s.
    """

    files: list[str]
    batched: bool = False
    require_distance: bool = False
    rxr_guides: bool = False

    def expand(self, pbegin):
        read = pbegin | "Read" >> ReadR2R(
            self.files, self.require_distance, reshuffle=False, batched=True, rxr_guides=self.rxr_guides
        )
        unique = read["records"] | "UniquePathIds" >> UniqueBy(episode_key, episode_key_text, self.files, self.batched)
        dead = (read[DEAD_LETTER], unique[DEAD_LETTER]) | "FlattenDead" >> beam.Flatten()
        return {"records": unique["records"], DEAD_LETTER: dead}


# ----------------------------------------------------------------------------- datasets with Parquet
class _ReadParquetPaths(beam.DoFn):
    """`build_r4r`'s paths-*.parquet -> lists of validated record dicts, like ReadR2R(batched=True) does for JSON."""

    read = Metrics.counter("read", "records")
    bad = Metrics.counter("read", "dead_letter")

    def process(self, element):
        import pyarrow.parquet as pq

        rank, path = element
        try:
            with fileio.open_read(path) as f:
                rows = pq.read_table(f).to_pylist()
        except Exception as exc:  # unreadable or not Parquet: the file is the dead letter
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, "", f"cannot read Parquet ({exc})"))
            return
        kept = []
        for index, row in enumerate(rows):
            reason = validate_record(row)
            if reason is not None:
                self.bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("read", path, f"#{index}", reason))
                continue
            kept.append({**row, "_source": path, "_index": index, "_order": (rank, index)})
        yield from in_lists(kept, BATCH_RECORDS, self.read)


@dataclass
class ReadDataset(beam.PTransform):
    """Dataset files (R2R/R4R JSON or JSON Lines, RxR guide files, or build_r4r Parquet) -> records unique
    by `episode_key` (path_id for R2R-format records, instruction_id for RxR guide lines: one episode each).

    Records are read and deduplicated in lists (see `ReadUniqueR2R`); `batched=True` hands the lists
    on, otherwise single records, spread over workers.
    """

    files: list[str]
    batched: bool = False

    def expand(self, pbegin):
        from vlnkit.scoring.reading import dataset_ranks  # the one rank rule: JSON files first, then Parquet

        ranked = dataset_ranks(self.files)
        json_files = [p for _, p in ranked if not is_parquet(p)]
        parquet = [(r, p) for r, p in ranked if is_parquet(p)]
        pieces, dead = [], []
        if json_files:
            read = pbegin | "ReadJson" >> ReadR2R(json_files, reshuffle=False, batched=True, rxr_guides=True)
            pieces.append(read["records"])
            dead.append(read[DEAD_LETTER])
        if parquet:
            read = (
                pbegin
                | "ParquetFiles" >> beam.Create(parquet)
                | "ReadParquet" >> beam.ParDo(_ReadParquetPaths()).with_outputs(DEAD_LETTER, main="records")
            )
            pieces.append(read.records)
            dead.append(read[DEAD_LETTER])
        records = tuple(pieces) | "AllRecords" >> beam.Flatten()
        unique = records | "UniquePathIds" >> UniqueBy(episode_key, episode_key_text, self.files, self.batched)
        dead.append(unique[DEAD_LETTER])
        return {"records": unique["records"], DEAD_LETTER: tuple(dead) | "DatasetDeadLetters" >> beam.Flatten()}
