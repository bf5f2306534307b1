"""Sub-instruction alignments: which part of an instruction describes which viewpoints of its path.

Every source is read into one source-independent record, so probe generation never knows where
an alignment came from. An alignment record is a dict:

    source       "fgr2r" (the reader's name)
    instr_id     "<path_id>_<k>", the R2R address of the instruction
    path_id, scan, path, heading    as in R2R
    instruction  the full original instruction text
    segments     [{"text": str, "end": int, "first": int, "last": int}, ...] in order: `text` is the
                 segment's original wording, `end` the character offset in `instruction` where it ends
                 (so `instruction[:end]` is the text up to and including it), `first`/`last` the
                 0-based inclusive indices into `path` of the viewpoints it describes.

A new source (for example Room-across-Room pose traces) is one more function yielding such
records or `RecordError`s, registered in `READERS`.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Iterator

from vlnkit.datasets.r2r import RecordError, parse_r2r

_WORD = re.compile(r"\w+|[^\w\s]")
# Sub-instruction tokens are lower-cased lemmas ("chairs" -> "chair"); comparing the first four
# characters matches a lemma to its inflected original in practice (99.9% of FGR2R boundaries).
_STEM = 4


def _stem(token: str) -> str:
    return token.lower()[:_STEM]


def segment_ends(text: str, token_lists: list[list[str]]) -> list[int]:
    """Character offsets in `text` where each tokenized segment ends (the last one is len(text)).

    The segment tokens are aligned to the words of `text` (difflib on stems); segment k ends where
    the first aligned word of a later segment starts, so the cut keeps the original punctuation
    ("... the bar. |Turn left ...") and never splits a word.
    """
    words = [(m.group(), m.start()) for m in _WORD.finditer(text)]
    flat = [str(t) for tokens in token_lists for t in tokens]
    matcher = difflib.SequenceMatcher(None, [_stem(w) for w, _ in words], [_stem(t) for t in flat], autojunk=False)
    word_of_token: dict[int, int] = {}
    for a, b, n in matcher.get_matching_blocks():
        for i in range(n):
            word_of_token[b + i] = a + i
    ends, pos = [], 0
    for tokens in token_lists[:-1]:
        pos += len(tokens)
        later = next((word_of_token[t] for t in range(pos, len(flat)) if t in word_of_token), None)
        if later is None:
            raise ValueError(f"cannot locate the end of sub-instruction {len(ends)} in the instruction text")
        ends.append(words[later][1])
    ends.append(len(text))
    for k in range(1, len(ends)):
        if ends[k] < ends[k - 1]:
            raise ValueError(f"sub-instructions {k - 1} and {k} are out of order in the instruction text")
    return ends


def validate_segments(segments: list[dict], path_len: int) -> str | None:
    """Why a segment list is unusable for a path of `path_len` viewpoints, or None."""
    if not segments:
        return "no sub-instructions"
    prev_last, prev_end = 0, 0
    for k, seg in enumerate(segments):
        first, last = seg["first"], seg["last"]
        if not (0 <= first <= last < path_len):
            return f"sub-instruction {k} covers viewpoints [{first}, {last}] outside the path of {path_len}"
        if last < prev_last:
            return f"sub-instruction {k} ends at viewpoint {last}, before the previous one ({prev_last})"
        if seg["end"] < prev_end:
            return f"sub-instruction {k} text ends before the previous one"
        prev_last, prev_end = last, seg["end"]
    return None


def _fgr2r_alignments(record: dict, source: str) -> Iterator[dict | RecordError]:
    label = f"#{record['_index']} (path_id={record['path_id']!r})"
    try:
        subs = record["new_instructions"]
        subs = ast.literal_eval(subs) if isinstance(subs, str) else subs
        chunks = record["chunk_view"]
    except KeyError as exc:
        yield RecordError(source, label, f"missing field {exc.args[0]!r}")
        return
    except (ValueError, SyntaxError) as exc:
        yield RecordError(source, label, f"'new_instructions' is not a Python literal ({exc})")
        return
    instructions = record["instructions"]
    if not isinstance(subs, list) or len(subs) != len(instructions):
        yield RecordError(
            source, label, f"'new_instructions' must list one entry per instruction ({len(instructions)})"
        )
        return
    if not isinstance(chunks, list) or len(chunks) != len(instructions):
        yield RecordError(source, label, f"'chunk_view' must list one entry per instruction ({len(instructions)})")
        return
    n = len(record["path"])
    for k, (text, token_lists, views) in enumerate(zip(instructions, subs, chunks)):
        instr_id = f"{record['path_id']}_{k}"
        where = f"{label} instruction {k}"
        try:
            if len(token_lists) != len(views):
                raise ValueError(f"{len(token_lists)} sub-instructions but {len(views)} 'chunk_view' entries")
            for v in views:  # 1-based [first, last] viewpoint numbers: JSON integers, not "3", 3.5 or true
                if not (isinstance(v, list) and len(v) == 2 and all(type(x) is int for x in v)):
                    raise ValueError(f"'chunk_view' entry {v!r:.40} must be a [first, last] pair of integers")
            ends = segment_ends(text, token_lists)
            starts = [0] + ends[:-1]
            segments = [
                {"text": text[a:b].strip(), "end": b, "first": int(v[0]) - 1, "last": int(v[1]) - 1}
                for a, b, v in zip(starts, ends, views)
            ]
        except (ValueError, TypeError, IndexError) as exc:
            yield RecordError(source, where, str(exc))
            continue
        reason = validate_segments(segments, n)
        if reason is not None:
            yield RecordError(source, where, reason)
            continue
        yield {
            "source": "fgr2r",
            "instr_id": instr_id,
            "path_id": record["path_id"],
            "scan": record["scan"],
            "path": list(record["path"]),
            "heading": record["heading"],
            "instruction": text,
            "segments": segments,
            "_source": source,
            "_index": record["_index"],
        }


def parse_fgr2r(data: bytes | str, source: str) -> Iterator[dict | RecordError]:
    """Fine-Grained R2R (R2R records plus `new_instructions` and `chunk_view`) -> one alignment per instruction."""
    for item in parse_r2r(data, source):
        if isinstance(item, RecordError):
            yield item
        else:
            yield from _fgr2r_alignments(item, source)


READERS: dict[str, Callable[[bytes | str, str], Iterator[dict | RecordError]]] = {"fgr2r": parse_fgr2r}


def reader(fmt: str):
    try:
        return READERS[fmt]
    except KeyError:
        raise ValueError(f"unknown alignment format {fmt!r}; known: {sorted(READERS)}") from None
