"""Sub-instruction alignments from RxR pose traces: which words the guide spoke at which path viewpoint.

RxR's guides spoke their instructions while walking the path, and the pose trace records where they
stood at every moment; the timed words (`timed_instruction`) say when each word was spoken. So:

1. **Where the guide was**: the trace's snapshots are grouped into runs of one `pano`, and each run is
   matched to the first position of the path at or after the previous run's (the guide moves forward
   along the path; a run back at an earlier viewpoint keeps the furthest position reached). A
   snapshot at a viewpoint that is not on the path is an error.
2. **Which viewpoint a word belongs to**: the one the guide occupied at the word's `start_time`, the
   pano of the last snapshot at or before it (`searchsorted` over the snapshot times; a word spoken
   before the first snapshot belongs to the first). A word without times inherits the viewpoint of the
   timed word before it (or, at the start, of the first timed word). Viewpoints never go backwards
   from one word to the next: a word timed before its predecessor keeps the predecessor's viewpoint.
3. **Segments**: consecutive words at the same viewpoint form one segment, in order. Segment k
   describes the viewpoints from where the previous segment's guide stood to where this one's stands
   (`first` = previous `last`, 0 for the first; `last` = its viewpoint), and the last segment runs to
   the end of the path, so the segments cover the path as Fine-Grained R2R's do (shared boundary
   viewpoints, e.g. [0, 2], [2, 4], [4, 5]).

The output is the alignment record of `vlnkit.datasets.alignments` (`source`, `instr_id`, `path_id`,
`scan`, `path`, `heading`, `instruction`, `segments` of `{text, end, first, last}`), with `source`
"rxr", `instr_id` = `str(instruction_id)`, and `language` and `instruction_id` added, so the probe
builder (`vlnkit.probes.episodes.truncation_candidates`) consumes it unchanged.

>>> trace = parse_pose_trace({"pano": np.array([["a"], ["a"], ["b"], ["c"]]), "time": np.array([[0], [1], [2], [4]])})
>>> words = [{"word": w, "start_time": t, "end_time": t + 0.5} for w, t in [("Go", 0.5), ("ahead.", 1.2), ("Stop", 4.5)]]
>>> guide = {"instruction_id": 7, "path_id": 3, "scan": "s", "path": ["a", "b", "c"], "heading": 0.0,
...          "language": "en-US", "instruction": "Go ahead. Stop", "timed_instruction": words}
>>> [(s["text"], s["first"], s["last"]) for s in align_guide(guide, trace)["segments"]]
[('Go ahead.', 0, 0), ('Stop', 0, 2)]
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator

import numpy as np

from vlnkit.datasets.alignments import READERS, segment_ends, validate_segments
from vlnkit.datasets.pose_traces import (
    PoseTrace,
    PoseTraceError,
    load_pose_trace,
    parse_pose_trace,  # noqa: F401  (the docstring examples use it)
    pose_trace_path,
)
from vlnkit.io.dead_letters import RecordError

__all__ = [
    "align_guide",
    "word_viewpoints",
    "trace_path_indices",
    "rxr_alignments",
    "AlignmentError",
    "RXR_FORMAT",
    "ALIGNMENT_FORMATS",
]

# build_probes' --alignment_format of RxR guide files (aligned through their pose traces, so not a
# `READERS` entry: those read alignments from the file alone), and every format it takes.
RXR_FORMAT = "rxr"
ALIGNMENT_FORMATS = (*sorted(READERS), RXR_FORMAT)

_TOKEN = re.compile(r"\w+|[^\w\s]")
_NONSPACE = re.compile(r"\S+")


class AlignmentError(ValueError):
    """A guide annotation whose words cannot be placed on its path (the message says why)."""


def trace_path_indices(trace: PoseTrace, path: list[str]) -> np.ndarray:
    """The path position (0-based) the guide occupied at each snapshot of `trace` (step 1 of the module doc).

    >>> t = parse_pose_trace({"pano": np.array(["a", "b", "a", "c"]), "time": np.arange(4.0)})
    >>> trace_path_indices(t, ["a", "b", "c"]).tolist()
    [0, 1, 1, 2]
    """
    pano = trace.pano
    starts = np.concatenate(([0], np.flatnonzero(pano[1:] != pano[:-1]) + 1))
    positions: dict[str, list[int]] = defaultdict(list)
    for j, viewpoint in enumerate(path):
        positions[viewpoint].append(j)
    run_index = np.empty(len(starts), dtype=np.int64)
    current = 0
    for r, (s, viewpoint) in enumerate(zip(starts.tolist(), pano[starts].tolist())):  # per change of viewpoint
        at = positions.get(viewpoint)
        if at is None:
            raise PoseTraceError(
                trace.path, f"snapshot {s} (t={trace.time[s]:g} s) is at {viewpoint!r}, not on the path"
            )
        ahead = [j for j in at if j >= current]
        if ahead:
            current = ahead[0]
        run_index[r] = current
    lengths = np.diff(np.concatenate((starts, [len(pano)])))
    return np.repeat(run_index, lengths)


def _start_times(timed_instruction: list) -> np.ndarray:
    """Each word's start_time as float (NaN when the word has none, as a few RxR words have not)."""
    out = np.full(len(timed_instruction), np.nan)
    for i, entry in enumerate(timed_instruction):
        t = entry.get("start_time") if isinstance(entry, dict) else None
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
            out[i] = t
    return out


def word_viewpoints(start_times: np.ndarray, snapshot_times: np.ndarray, snapshot_index: np.ndarray) -> np.ndarray:
    """The path position of each word (steps 2 of the module doc): NaN start times inherit their neighbours'.

    >>> word_viewpoints(np.array([np.nan, 0.5, 2.5, np.nan, 1.0]), np.array([0.0, 2.0]), np.array([0, 3])).tolist()
    [0, 0, 3, 3, 3]
    """
    timed = ~np.isnan(start_times)
    if not timed.any():
        raise AlignmentError("no word of 'timed_instruction' has a start_time")
    snapshot = np.searchsorted(snapshot_times, start_times[timed], side="right") - 1
    at = np.full(len(start_times), -1, dtype=np.int64)
    at[timed] = snapshot_index[np.maximum(snapshot, 0)]
    at = np.maximum.accumulate(at)  # untimed words take the previous word's; never backwards
    at[at < 0] = at[np.argmax(timed)]  # leading untimed words take the first timed word's
    return at


def _word_starts(instruction: str, words: list[str]) -> list[int] | None:
    """Character offset of each word in `instruction` when the instruction is exactly these words."""
    found = list(_NONSPACE.finditer(instruction))
    if [m.group() for m in found] != words:
        return None
    return [m.start() for m in found]


def align_guide(guide: dict, trace: PoseTrace) -> dict:
    """The alignment record of one RxR guide annotation and its pose trace (see the module doc).

    Raises PoseTraceError (naming the trace file) when the trace leaves the path, AlignmentError when the
    words cannot be placed (no timed word, words not found in the instruction).
    """
    path, text = list(guide["path"]), guide["instruction"]
    timed = guide["timed_instruction"]
    if not isinstance(timed, list) or not timed:
        raise AlignmentError("'timed_instruction' must be a non-empty list of words")
    words = [str(entry.get("word", "")) if isinstance(entry, dict) else "" for entry in timed]
    at = word_viewpoints(_start_times(timed), trace.time, trace_path_indices(trace, path))
    cuts = np.concatenate(([0], np.flatnonzero(np.diff(at)) + 1, [len(at)]))
    lasts = at[cuts[:-1]].tolist()
    lasts[-1] = len(path) - 1
    firsts = [0] + lasts[:-1]
    starts = _word_starts(text, words)
    if starts is not None:
        ends = [starts[c] for c in cuts[1:-1].tolist()] + [len(text)]
    else:  # the text differs from the timed words (spacing, punctuation): align the two as FGR2R's are
        token_lists = [[t for w in words[a:b] for t in _TOKEN.findall(w)] for a, b in zip(cuts[:-1], cuts[1:])]
        try:
            ends = segment_ends(text, token_lists)
        except ValueError as exc:
            raise AlignmentError(f"the timed words do not match the instruction text ({exc})") from None
    segment_starts = [0] + ends[:-1]
    segments = [
        {"text": text[a:b].strip(), "end": b, "first": f, "last": last}
        for a, b, f, last in zip(segment_starts, ends, firsts, lasts)
    ]
    reason = validate_segments(segments, len(path))
    if reason is not None:  # pragma: no cover - the construction above satisfies it; kept as a guard
        raise AlignmentError(reason)
    record = {
        "source": "rxr",
        "instr_id": str(guide["instruction_id"]),
        "instruction_id": guide["instruction_id"],
        "language": guide.get("language"),
        "path_id": guide["path_id"],
        "scan": guide["scan"],
        "path": path,
        "heading": guide["heading"],
        "instruction": text,
        "segments": segments,
    }
    for key in ("_source", "_index"):
        if key in guide:
            record[key] = guide[key]
    return record


def rxr_alignments(guides: Iterable[dict], pose_trace_dir: str) -> Iterator[dict | RecordError]:
    """Alignment records of parsed RxR guide annotations, their traces read from `pose_trace_dir`.

    A missing, corrupt or off-path trace is a RecordError naming the trace file; a guide whose words
    cannot be placed is one naming the guide file (`_source`) and the instruction id.
    """
    for guide in guides:
        record = f"instruction_id={guide.get('instruction_id')!r}"
        try:
            path = pose_trace_path(pose_trace_dir, str(guide["split"]), guide["instruction_id"])
            yield align_guide(guide, load_pose_trace(path))
        except PoseTraceError as exc:
            yield exc.record_error(record)
        except (AlignmentError, KeyError, TypeError, ValueError) as exc:
            reason = f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            yield RecordError(source=guide.get("_source", "<guide>"), record=record, reason=reason)
