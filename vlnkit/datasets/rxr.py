"""Room-across-Room (RxR) files: RxR guide and follower lines as records, and a whole dataset file of any
format read into record dicts.

RxR (Ku et al., EMNLP 2020) releases gzip JSON Lines: **guide** lines (`rxr_{split}_guide.jsonl.gz`,
one instruction each: `instruction_id`, `path_id`, `scan`, `path`, `heading`, `language`,
`instruction`, `annotator_id`, `timed_instruction`, ...) and **follower** lines (`instruction_id`,
`demonstration_id`, `annotator_id`, the `path` a person walked and the `metrics` RxR released with it). What
a valid line is lives in `vlnkit.datasets.records` (`RxRGuideLine`, `RxRFollowerLine`).

One RxR instruction is one episode, addressed by `instr_id = str(instruction_id)` (several
instructions share a path, so path_id addresses nothing); an R2R record holds several episodes
`"<path_id>_<k>"`. Which format a file holds is told by its first record, never by the file's name
(`vlnkit.datasets.formats`); every record of a file is then judged as that file's format.

`parse_dataset(data, source)` reads a whole file of either kind into record dicts (R2R records as
`vlnkit.datasets.r2r.parse_r2r` gives them; RxR guide lines with every released key kept, plus
`instr_id`); the scoring job reads the same files in columnar chunks
(`vlnkit.datasets.reference_batches`), which use the same detection and declarations.

>>> import json
>>> guide = {"instruction_id": 26, "path_id": 11, "scan": "s", "path": ["a", "b"], "heading": 3.1,
...          "language": "en-IN", "instruction": "Okay, ...", "annotator_id": 19,
...          "timed_instruction": [{"start_time": 0.4, "word": "Okay,", "end_time": 1.0}]}
>>> [(r["instr_id"], r["language"]) for r in parse_dataset(json.dumps(guide), "rxr_guide.jsonl")]
[('26', 'en-IN')]
"""

from __future__ import annotations

from collections.abc import Iterator

from vlnkit.datasets.cvdn import CVDN_FORMAT
from vlnkit.datasets.formats import KINDS, R2R, RXR_FOLLOWER_FORMAT, record_format
from vlnkit.datasets.r2r import json_items, r2r_record
from vlnkit.datasets.records import RXR_FOLLOWER, RXR_GUIDE
from vlnkit.datasets.reverie import REVERIE_FORMAT, REVERIE_TEST_FORMAT, TEST_SPLIT_REFUSED
from vlnkit.io.dead_letters import RecordError

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
