"""Room-across-Room (RxR) files: which format a dataset file holds, and RxR guide and follower lines as records.

RxR (Ku et al., EMNLP 2020) releases gzip JSON Lines: **guide** lines (`rxr_{split}_guide.jsonl.gz`,
one instruction each: `instruction_id`, `path_id`, `scan`, `path`, `heading`, `language`,
`instruction`, `annotator_id`, `timed_instruction`, ...) and **follower** lines (`instruction_id`,
`demonstration_id`, `annotator_id`, the `path` a person walked and the `metrics` RxR released with it). What
a valid line is lives in `vlnkit.datasets.records` (`RxRGuideLine`, `RxRFollowerLine`).

One RxR instruction is one episode, addressed by `instr_id = str(instruction_id)` (several
instructions share a path, so path_id addresses nothing); an R2R record holds several episodes
`"<path_id>_<k>"`. Every reader tells the formats apart per file, by its first record, never by the
file's name (`record_format`, `stream_format`, `file_format`):

- a record with `inst_idx` and a planner or player path is a CVDN instance (`vlnkit.datasets.cvdn`);
- a record with `instructions` is R2R (or R4R, or build_r4r's paths);
- one with `instruction_id` and `metrics` or `demonstration_id` but no `instruction` is an RxR follower line;
- any other with `instruction_id` is an RxR guide line (so a guide line without `instruction` is told so).

Every record of a file is then judged as that file's kind: a file that starts with R2R records and
goes on with RxR lines dead-letters the RxR lines, each with its reason.

`parse_dataset(data, source)` reads a whole file of either kind into record dicts (R2R records as
`vlnkit.datasets.r2r.parse_r2r` gives them; RxR guide lines with every released key kept, plus
`instr_id`); the scoring job reads the same files in columnar chunks
(`vlnkit.datasets.reference_batches`), which use the same detection and declarations.

>>> guide = {"instruction_id": 26, "path_id": 11, "scan": "s", "path": ["a", "b"], "heading": 3.1,
...          "language": "en-IN", "instruction": "Okay, ...", "annotator_id": 19,
...          "timed_instruction": [{"start_time": 0.4, "word": "Okay,", "end_time": 1.0}]}
>>> record_format(guide), record_format({"path_id": 1, "instructions": ["go"]})
('rxr_guide', 'r2r')
>>> [(r["instr_id"], r["language"]) for r in parse_dataset(json.dumps(guide), "rxr_guide.jsonl")]
[('26', 'en-IN')]
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator

from vlnkit.datasets.cvdn import CVDN_FORMAT, CVDN_INSTANCE, is_cvdn
from vlnkit.datasets.json_chunks import first_line, json_chunks
from vlnkit.datasets.r2r import json_items, r2r_record
from vlnkit.datasets.records import R2R_RECORD, RXR_FOLLOWER, RXR_GUIDE, RecordKind
from vlnkit.datasets.reverie import REVERIE_FORMAT, REVERIE_RECORD, REVERIE_TEST_FORMAT, TEST_SPLIT_REFUSED, is_reverie
from vlnkit.io.dead_letters import RecordError

R2R = "r2r"
RXR_GUIDE_FORMAT = "rxr_guide"
RXR_FOLLOWER_FORMAT = "rxr_follower"
KINDS: dict[str, RecordKind] = {
    R2R: R2R_RECORD,
    RXR_GUIDE_FORMAT: RXR_GUIDE,
    RXR_FOLLOWER_FORMAT: RXR_FOLLOWER,
    CVDN_FORMAT: CVDN_INSTANCE,
    REVERIE_FORMAT: REVERIE_RECORD,
    REVERIE_TEST_FORMAT: R2R_RECORD,  # never validated record by record: the file is refused as a whole
}
# The refusal of a CVDN instance file where R2R records or RxR guide lines belong: the file as a whole, once.
CVDN_AS_DATASET = (
    "a CVDN instance file (inst_idx, planner_path, player_path, end_panos): only the score job reads it "
    "(python -m pipelines.score --dataset=<file>)"
)
# The refusal of a follower file where a dataset belongs: the file as a whole, once.
FOLLOWER_AS_DATASET = (
    "an RxR follower file (instruction_id, path, metrics), not a dataset of guide lines or R2R records: "
    "give it as --predictions (e.g. --predictions=human=<file>) and the guide file as --dataset"
)
# The files `parse_dataset` refuses as a whole, by format, each with its one line.
WHOLE_FILE_REFUSALS = {
    RXR_FOLLOWER_FORMAT: FOLLOWER_AS_DATASET,
    REVERIE_TEST_FORMAT: TEST_SPLIT_REFUSED,
    CVDN_FORMAT: CVDN_AS_DATASET,
}


def record_format(obj) -> str:
    """The format of a parsed record: "r2r", "rxr_guide" or "rxr_follower" (see the module doc).

    >>> record_format({"instruction_id": 26, "path": ["a"], "metrics": {"ne": 0.0}})
    'rxr_follower'
    >>> record_format({"instruction_id": 26, "path": ["a"]}), record_format([1])
    ('rxr_guide', 'r2r')
    >>> record_format({"path_id": 1, "objId": 66, "instructions": ["go"]}), record_format({"id": "7", "instructions": []})
    ('reverie', 'reverie_test')
    >>> record_format({"inst_idx": 108, "planner_path": ["a"], "player_path": ["a"], "end_panos": ["a"]})
    'cvdn'
    """
    if is_reverie(obj):
        return REVERIE_FORMAT if "objId" in obj else REVERIE_TEST_FORMAT
    if is_cvdn(obj):
        return CVDN_FORMAT
    if not isinstance(obj, dict) or "instructions" in obj or "instruction_id" not in obj:
        return R2R
    if "instruction" not in obj and ("metrics" in obj or "demonstration_id" in obj):
        return RXR_FOLLOWER_FORMAT
    return RXR_GUIDE_FORMAT


def items_format(items) -> str | None:
    """The format of the first parsed record (a dict) among `items`, or None when they hold none."""
    for item in items:
        if isinstance(item, dict):
            return record_format(item)
    return None


def line_format(line: bytes) -> str | None:
    """The format of one JSON line, or None when it is not a JSON object."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return record_format(obj) if isinstance(obj, dict) else None


HEAD_BYTES = 1 << 16  # a JSON list's first record is looked for in this much of the file first


def _first_listed(head: bytes):
    """The first item of a JSON list that starts in `head` and is a complete object there; None when it
    cannot be told from `head` alone (the whole file is parsed then). Telling a 4 MB R2R list this way
    takes microseconds, where parsing it whole takes most of a second.

    >>> _first_listed(b'[{"path_id": 1, "instructions": ["go"]}, {"pa'), _first_listed(b'[{"path_id": 1')
    ({'path_id': 1, 'instructions': ['go']}, None)
    """
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if not text.startswith("["):
        return None
    start = len(text) - len(text[1:].lstrip())
    try:
        obj, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def first_record(open_stream, source: str = ""):
    """The first record (a dict) of the file `open_stream()` opens, or None when it holds none. Plain JSON
    Lines are read no further than their first line; anything else (a JSON list, an indented object) is
    parsed whole, from a second `open_stream()`."""
    with open_stream() as stream:
        line = first_line(stream)
    if line is not None:
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None
    with open_stream() as stream:
        found = _first_listed(stream.read(HEAD_BYTES))
    if found is not None:
        return found
    with open_stream() as stream:
        for chunk in json_chunks(stream, source):
            if not isinstance(chunk, RecordError):
                found = next((item for item in chunk[1] if isinstance(item, dict)), None)
                if found is not None:
                    return found
    return None


def stream_format(open_stream, source: str = "") -> str:
    """The format of the file `open_stream()` opens (its first record, `first_record`). A file without any
    record is "r2r" (its reader then says what is wrong).

    >>> import io
    >>> stream_format(lambda: io.BytesIO(b'[{"instruction_id": 1, "path": ["a"], "metrics": {}}]'))
    'rxr_follower'
    """
    obj = first_record(open_stream, source)
    return R2R if obj is None else record_format(obj)


def file_record(path: str):
    """The first record of a dataset or prediction file, local or gs:// (gzip and bzip2 are read through);
    None for a file without records or one that cannot be read through (a truncated or corrupt `.gz`, a
    read error: its reader then makes it a dead letter naming the file and the error)."""
    from vlnkit.io import fileio

    try:
        return first_record(lambda: fileio.open_read(path), path)
    except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile and bz2's errors are OSErrors
        return None


def file_format(path: str) -> str:
    """The format of a dataset or prediction file (its first record, `file_record`); "r2r" for a file
    without records or one that cannot be read through."""
    obj = file_record(path)
    return R2R if obj is None else record_format(obj)


def rxr_label(obj, index: int) -> str:
    """How a person finds an RxR line in its file: "#<index>", with its instruction_id when it has one."""
    if isinstance(obj, dict) and "instruction_id" in obj:
        return f"#{index} (instruction_id={obj['instruction_id']!r:.40})"
    return f"#{index}"


def rxr_guide_record(obj, source: str, index: int) -> dict | RecordError:
    """One parsed guide line as a record dict (every key kept; `heading` a float; `instr_id`,
    `_source` and `_index` added) or the RecordError saying why it is not a valid one."""
    reason = RXR_GUIDE.reason(obj)
    if reason is not None:
        return RecordError(source, rxr_label(obj, index), reason)
    record = dict(obj)
    record["heading"] = float(record["heading"])
    record["instr_id"] = str(record["instruction_id"])
    record["_source"] = source
    record["_index"] = index
    return record


def rxr_follower_record(obj, source: str, index: int) -> dict | RecordError:
    """One parsed follower line as a record dict (every key kept; `instr_id`, `_source`, `_index` added)."""
    reason = RXR_FOLLOWER.reason(obj)
    if reason is not None:
        return RecordError(source, rxr_label(obj, index), reason)
    return {**obj, "instr_id": str(obj["instruction_id"]), "_source": source, "_index": index}


def _validate(obj) -> str | None:
    return KINDS[record_format(obj)].reason(obj)


def parse_dataset(data: bytes | str, source: str, *, require_distance: bool = False) -> Iterator[dict | RecordError]:
    """Each valid record of an R2R-format, REVERIE or RxR guide file (the format of its first record) as a
    dict, or a RecordError per unusable record; a follower file, a REVERIE test split or a CVDN file is
    one RecordError for the whole file.

    R2R records come as `vlnkit.datasets.r2r.parse_r2r` gives them; guide lines as `rxr_guide_record`
    (`require_distance` concerns R2R records only: a guide line has no distance).
    """
    fmt = None
    for item in json_items(data, source, validate=_validate):
        if isinstance(item, RecordError):
            yield item
            continue
        index, obj = item
        if fmt is None:
            fmt = record_format(obj)
            if fmt in WHOLE_FILE_REFUSALS:
                yield RecordError(source, "", WHOLE_FILE_REFUSALS[fmt])
                return
        if fmt in (R2R, REVERIE_FORMAT):  # a REVERIE record is an R2R record with its target (`objId`)
            yield r2r_record(obj, source, index, require_distance)
        else:
            yield rxr_guide_record(obj, source, index)


def parse_followers(data: bytes | str, source: str) -> Iterator[dict | RecordError]:
    """Each valid follower line of an RxR follower file as a dict (`rxr_follower_record`), or a RecordError."""
    for item in json_items(data, source, "follower lines"):
        yield item if isinstance(item, RecordError) else rxr_follower_record(item[1], source, item[0])


def is_rxr(record: dict) -> bool:
    """Whether a record dict read by `parse_dataset` is an RxR guide line (one episode) rather than R2R."""
    return "instruction_id" in record and "instructions" not in record


def path_key(record: dict) -> tuple:
    """What makes records share one path: the same path_id within one format (an R2R record is one path;
    several RxR guide lines, one per instruction, share their path_id; a REVERIE record is one path to one
    target object, so its key holds the objId too).

    >>> path_key({"instruction_id": 26, "path_id": 11}), path_key({"path_id": 11, "instructions": []})
    ((True, 11), (False, 11))
    >>> path_key({"path_id": 11, "objId": 5, "instructions": []})
    (False, 11, 5)
    """
    if "objId" in record:
        return False, record["path_id"], record["objId"]
    return is_rxr(record), record["path_id"]


def episode_ids(record: dict) -> list[str]:
    """The instr_ids of a record read by `parse_dataset`: `[str(instruction_id)]` for an RxR guide line,
    "<path_id>_<k>" per instruction for an R2R record.

    >>> episode_ids({"instruction_id": 26, "instruction": "go"}), episode_ids({"path_id": 4, "instructions": ["a", "b"]})
    (['26'], ['4_0', '4_1'])
    >>> episode_ids({"path_id": 4, "objId": 66, "instructions": ["a"]})
    ['4_66_0']
    """
    if is_rxr(record):
        return [str(record["instruction_id"])]
    if "objId" in record:  # REVERIE: "<path_id>_<objId>_<k>"
        return [f"{record['path_id']}_{record['objId']}_{k}" for k in range(len(record.get("instructions") or ()))]
    return [f"{record['path_id']}_{k}" for k in range(len(record.get("instructions") or ()))]


def instructions(record: dict) -> list[str]:
    """The instruction texts of a record read by `parse_dataset`, one per episode (`episode_ids` order)."""
    return [record["instruction"]] if is_rxr(record) else list(record.get("instructions") or ())
