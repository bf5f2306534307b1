"""CVDN's navigation-from-dialog-history task (NDH): instance files, and which path an instance is scored against.

A CVDN instance (Thomason et al. 2019, Cooperative Vision-and-Dialog Navigation; `tasks/NDH/data/<split>.json`
of mmurray/cvdn) is one moment of a navigator-oracle dialog, addressed by its integer `inst_idx`: in scan
`scan`, the navigator stands at the start of `planner_path` and `player_path`, has read `dialog_history`,
and should move towards the dialog's goal region `end_panos`. `planner_path` is the shortest path to the
next goal the oracle's answer described; `player_path` the path the navigator walked after that answer.
The other keys (`start_pano`, `dialog_history`, `target`, game qualities ...) are kept and not scored.
What a valid instance is: `CVDNInstance`. Predictions are `{"inst_idx": int, "trajectory": [...]}`, read by
`vlnkit.datasets.records.prediction` (instr_id = the integer's text), as a file of them is by every reader.

The target path of an instance (`TARGET_PATHS`, `target_path`) is what success, SPL and navigation error
are measured against, as the evaluator's `path_type` chooses it (mmurray/cvdn `tasks/NDH/eval.py`,
commit 0f0ca33, lines 20 and 31-37):

- `planner` (`planner_path`, the evaluator's default);
- `player` (`player_path`);
- `trusted`: `player_path` when the planner's goal is among its viewpoints after the first (the navigator
  reached the described goal), else `planner_path`.

>>> text = '''[{"inst_idx": 108, "scan": "s", "planner_path": ["a", "b"], "player_path": ["a", "c", "b", "d"],
...            "end_panos": ["d"]}, {"inst_idx": 3, "scan": "s"}]'''
>>> [r if isinstance(r, dict) else r.message() for r in parse_cvdn(text, "val.json")][1]
"val.json #1 (inst_idx=3): missing field 'planner_path'"
>>> target_path(next(parse_cvdn(text, "val.json")), "trusted")
['a', 'c', 'b', 'd']
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import msgspec
import numpy as np

from vlnkit.datasets.columns import flat_paths
from vlnkit.datasets.r2r import json_items
from vlnkit.datasets.records import Int64, NonEmptyString, RecordKind, ViewpointId, ViewpointPath
from vlnkit.io.dead_letters import RecordError

CVDN_FORMAT = "cvdn"  # the dataset format of CVDN instance files (`vlnkit.datasets.formats.record_format`)
TARGET_PATHS = ("planner", "player", "trusted")
DEFAULT_TARGET_PATH = "planner"  # eval.py:20, `path_type='planner_path'`
TARGET_PATH = "target_path"  # the setting's name: its flag, and its key in a score summary's options


class CVDNInstance(msgspec.Struct, kw_only=True):
    """A CVDN instance as the evaluator reads it (eval.py:26-37, 60-80); other keys are kept by the reader
    and ignored here. Fields are checked in this order."""

    inst_idx: Int64
    scan: NonEmptyString
    planner_path: ViewpointPath
    player_path: ViewpointPath
    end_panos: Annotated[list[ViewpointId], msgspec.Meta(min_length=1)]


def _path_refused(name: str):
    def refused(value) -> str:
        if isinstance(value, list) and not value:
            return f"{name!r} has 0 viewpoints, at least 1 required"
        return f"{name!r} must be a list of viewpoint id strings"

    return refused


def _int_refused(value) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"'inst_idx' must fit in a 64-bit integer, got one of {len(str(abs(value)))} digits"
    return f"'inst_idx' must be an integer, got {value!r:.40}"


CVDN_INSTANCE = RecordKind(
    CVDNInstance,
    {
        "inst_idx": _int_refused,
        "scan": lambda v: "'scan' must be a non-empty string",
        "planner_path": _path_refused("planner_path"),
        "player_path": _path_refused("player_path"),
        # Goal progress is a minimum over the goal region (eval.py:70-76): an empty one has none.
        "end_panos": lambda v: "'end_panos' must be a non-empty list of viewpoint id strings",
    },
)


def is_cvdn(obj) -> bool:
    """Whether a parsed record is a CVDN instance (it has `inst_idx` and a planner or player path), whatever
    else it holds or lacks: a file is told CVDN by its first record, then each record judged as one.

    >>> is_cvdn({"inst_idx": 1, "planner_path": []}), is_cvdn({"path_id": 1, "instructions": ["go"]})
    (True, False)
    """
    return isinstance(obj, dict) and "inst_idx" in obj and ("planner_path" in obj or "player_path" in obj)


def cvdn_label(obj, index: int) -> str:
    """How a person finds an instance in its file: "#<index>", with its inst_idx when it has one."""
    if isinstance(obj, dict) and "inst_idx" in obj:
        return f"#{index} (inst_idx={obj['inst_idx']!r:.40})"
    return f"#{index}"


def cvdn_record(obj, source: str, index: int) -> dict | RecordError:
    """One parsed instance as a record dict (every key kept; `instr_id`, `_source` and `_index` added) or the
    RecordError saying why it is not a valid one."""
    reason = CVDN_INSTANCE.reason(obj)
    if reason is not None:
        return RecordError(source, cvdn_label(obj, index), reason)
    return {**obj, "instr_id": str(obj["inst_idx"]), "_source": source, "_index": index}


def parse_cvdn(data: bytes | str, source: str) -> Iterator[dict | RecordError]:
    """Each valid instance of a CVDN file (a JSON list, as released, or JSON Lines) as a dict (`cvdn_record`),
    or a RecordError per unusable instance (or one for the whole file)."""
    for item in json_items(data, source, "CVDN instances", validate=CVDN_INSTANCE.reason):
        yield item if isinstance(item, RecordError) else cvdn_record(item[1], source, item[0])


def check_target_path(which: str) -> str:
    """`which` itself when it names a target path, else ValueError listing them."""
    if which not in TARGET_PATHS:
        raise ValueError(f"target path must be one of {TARGET_PATHS}, got {which!r}")
    return which


def target_path(record: dict, which: str = DEFAULT_TARGET_PATH) -> list[str]:
    """The path an instance is scored against (see the module docstring; eval.py:31-37, 61-63).

    >>> rec = {"planner_path": ["a", "b"], "player_path": ["a", "c"]}
    >>> target_path(rec, "planner"), target_path(rec, "player"), target_path(rec, "trusted")
    (['a', 'b'], ['a', 'c'], ['a', 'b'])
    """
    planner, player = record["planner_path"], record["player_path"]
    if check_target_path(which) == "planner":
        return planner
    if which == "player":
        return player
    return player if planner[-1] in player[1:] else planner


# The extra columns of a CVDN reference row (`vlnkit.datasets.columns.ReferenceBatch.extras`), each a `Paths`
# of viewpoints: the last viewpoint of the planner path, and the goal region.
PLANNER_GOAL, END_PANOS = "planner_goal", "end_panos"


def cvdn_columns(instances: list, which: str = DEFAULT_TARGET_PATH) -> dict:
    """The columns the score job reads instances into (`vlnkit.datasets.reference_batches`): `inst_idx`,
    `scans`, the target paths (`lengths`, `viewpoints`, as `flat_paths` gives them) and the extras
    `PLANNER_GOAL` and `END_PANOS` as (lengths, viewpoints) pairs. `instances` are `CVDNInstance`s or valid
    instance dicts.

        >>> c = cvdn_columns([{"inst_idx": 3, "scan": "s", "planner_path": ["a", "b"], "player_path": ["a"],
        ...                   "end_panos": ["b", "c"]}], "player")
        >>> c["inst_idx"].tolist(), c["viewpoints"], c[PLANNER_GOAL][1], c[END_PANOS][1]
        ([3], ['a'], ['b'], ['b', 'c'])
    """
    if instances and isinstance(instances[0], CVDNInstance):
        instances = [msgspec.structs.asdict(i) for i in instances]
    lengths, flat = flat_paths([target_path(i, which) for i in instances])
    goals = [i["planner_path"][-1] for i in instances]
    return {
        "inst_idx": np.asarray([i["inst_idx"] for i in instances], np.int64),
        "scans": [i["scan"] for i in instances],
        "lengths": lengths,
        "viewpoints": flat,
        PLANNER_GOAL: (np.ones(len(goals), np.int64), goals),
        END_PANOS: flat_paths([i["end_panos"] for i in instances]),
    }


def reference_paths(data: bytes | str, source: str, which: str = DEFAULT_TARGET_PATH) -> tuple[dict, list]:
    """({instr_id: target path} of a CVDN file, its RecordErrors): each episode's reference path as the score
    job scored it with `--target_path=which` (what the report's comparison page draws and measures).

        >>> refs, errors = reference_paths('[{"inst_idx": 4, "scan": "s", "planner_path": ["a", "b"], '
        ...                                '"player_path": ["a"], "end_panos": ["b"]}]', "val.json", "planner")
        >>> refs, errors
        ({'4': ['a', 'b']}, [])
    """
    check_target_path(which)
    refs, errors = {}, []
    for r in parse_cvdn(data, source):
        if isinstance(r, RecordError):
            errors.append(r)
        else:
            refs.setdefault(r["instr_id"], list(target_path(r, which)))
    return refs, errors
