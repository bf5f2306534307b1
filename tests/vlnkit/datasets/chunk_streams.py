"""What the chunked readers of a stream give, row by row: shared by the prediction and reference tests."""

import io

from vlnkit.datasets.columns import Vocabulary
from vlnkit.datasets.json_chunks import json_chunks
from vlnkit.io.dead_letters import RecordError

VOCAB = Vocabulary(["s1", "s2"], [["a", "b", "c"], ["d", "e"]])


def read_stream(data: bytes, chunk_bytes: int, typed, what: str, read_chunk):
    """Every batch row and read error of a stream (and, for predictions, unknown ids), and how many
    chunks `typed` took; `read_chunk(items, start, strict)` -> (rows, errors, unknown)."""
    rows, errors, unknown, typed_chunks = [], [], [], 0
    for c in json_chunks(io.BytesIO(data), "f", what, chunk_bytes=chunk_bytes, typed=typed):
        if isinstance(c, RecordError):
            errors.append(c)
            continue
        start, items, strict = c
        typed_chunks += not isinstance(items, list)  # a SubmissionChunk or ReferenceChunk
        r, e, u = read_chunk(items, start, strict)
        rows += r
        errors += e
        unknown += u
    return (rows, errors, unknown), typed_chunks
