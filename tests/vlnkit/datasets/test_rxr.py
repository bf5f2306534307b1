"""RxR guide and follower files: format detection per file, the whole-file reader, and the columnar reader,
on hand-made lines, the README's sample entries and fixtures converted from R2R val_unseen."""

import gzip
import io
import json

import numpy as np
import pytest

from tests.vlnkit.datasets.chunk_streams import VOCAB
from vlnkit.datasets.columns import ReferenceBatch, Vocabulary
from vlnkit.datasets.formats import file_format, record_format
from vlnkit.datasets.json_chunks import json_chunks
from vlnkit.datasets.r2r import parse_r2r
from vlnkit.datasets.reference_batches import FileFormat, reference_batch, reference_chunk
from vlnkit.datasets.rxr import FOLLOWER_AS_DATASET, episode_ids, instructions, parse_dataset, parse_followers
from vlnkit.fixtures.rxr import LANGUAGES, read_jsonl, rxr_instruction_id, write_rxr_fixtures
from vlnkit.io.dead_letters import RecordError

GUIDE = {
    "path_id": 11,
    "split": "val_seen",
    "scan": "s1",
    "heading": 3.1,
    "path": ["a", "b", "c"],
    "instruction_id": 26,
    "annotator_id": 19,
    "language": "en-IN",
    "instruction": "Okay, walk on",
    "timed_instruction": [{"start_time": 0.4, "word": "Okay,", "end_time": 1.0}, {"word": "walk"}],
    "edit_distance": 0.11,
}


def jsonl(items) -> bytes:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items).encode()


def columnar(data: bytes, chunk_bytes: int = 1 << 18):
    """Every reference row and read error of a stream read the way the score job reads a dataset file."""
    fmt, rows, errors = FileFormat(), [], []
    for c in json_chunks(io.BytesIO(data), "f", chunk_bytes=chunk_bytes, typed=fmt.typed):
        if isinstance(c, RecordError):
            errors.append(c)
            continue
        start, items, strict = c
        batch, errs = reference_batch(items, start, "f", 0, VOCAB, strict=strict, fmt=fmt.fmt_of(items))
        errors += errs
        batch = ReferenceBatch.concat([batch])
        for r in range(len(batch)):
            code = int(batch.language[r])
            rows.append(
                (
                    int(batch.index[r]),
                    int(batch.path_id[r]),
                    int(batch.first_k[r]),
                    int(batch.instructions[r]),
                    str(batch.scan[r]),
                    batch.languages[code] if code >= 0 else None,
                    batch.paths.viewpoints(r, VOCAB),
                )
            )
    return rows, errors


def test_a_guide_line_keeps_every_released_key():
    (record,) = parse_dataset(jsonl([GUIDE]), "g.jsonl")
    assert {k: record[k] for k in GUIDE} == GUIDE
    assert record["instr_id"] == "26" and record["_index"] == 0 and isinstance(record["heading"], float)
    assert episode_ids(record) == ["26"] and instructions(record) == ["Okay, walk on"]
    r2r = {"path_id": 4, "scan": "s1", "path": ["a"], "heading": 0, "instructions": ["x", "y"]}
    (old,) = parse_dataset(jsonl([r2r]), "r.jsonl")
    assert old == next(parse_r2r(jsonl([r2r]), "r.jsonl")) and episode_ids(old) == ["4_0", "4_1"]


BAD_GUIDES = [
    ({"instruction": None}, "'instruction' must be a string, got NoneType"),
    ({"language": ""}, "'language' must be a non-empty string (an IETF tag such as en-IN), got ''"),
    ({"instruction_id": True}, "'instruction_id' must be an integer, got True"),
    ({"instruction_id": 2**64}, "'instruction_id' must fit in a 64-bit integer, got one of 20 digits"),
    ({"path": []}, "'path' has 0 viewpoints, at least 1 required"),
    ({"heading": "north"}, "'heading' must be a number (radians, finite), got 'north'"),
    ({"annotator_id": "x"}, "'annotator_id' must be an integer, got 'x'"),
    (
        {"timed_instruction": [{"word": "go", "start_time": "0.4"}]},
        "'timed_instruction' entry 0: 'start_time' must be a finite number of seconds or null, got '0.4'",
    ),
    ({"timed_instruction": {}}, "'timed_instruction' must be a list of {word, start_time, end_time}, got dict"),
]


@pytest.mark.parametrize("change, reason", BAD_GUIDES)
def test_refusals_are_worded_the_same_on_every_path(change, reason):
    lines = [GUIDE, {**GUIDE, "instruction_id": 27, **change}, {**GUIDE, "instruction_id": 28, "language": "te-IN"}]
    whole = list(parse_dataset(jsonl(lines), "f"))
    (error,) = [e for e in whole if isinstance(e, RecordError)]
    assert error.reason.startswith(reason) and error.record.startswith("#1 (instruction_id=")
    rows, errors = columnar(jsonl(lines))
    assert errors == [error]
    assert [(r[0], r[1], r[2], r[5]) for r in rows] == [(0, 26, -1, "en-IN"), (2, 28, -1, "te-IN")]


def test_missing_fields_and_words_without_times():
    for key in ("instruction", "language", "scan", "path_id"):
        line = {k: v for k, v in GUIDE.items() if k != key}
        _, error = parse_dataset(jsonl([GUIDE, line]), "f")
        assert error.reason == f"missing field {key!r}"
    untimed = {**GUIDE, "timed_instruction": [{"word": "go", "start_time": None, "end_time": None}]}
    (record,) = parse_dataset(jsonl([untimed]), "f")
    assert record["timed_instruction"][0]["start_time"] is None
    optional = {k: v for k, v in GUIDE.items() if k not in ("annotator_id", "timed_instruction", "split")}
    assert reference_chunk([json.dumps(optional).encode()], "rxr_guide") is not None


def test_the_typed_decoder_and_the_chunk_check_equal_the_whole_file_reader():
    rng = np.random.default_rng(0)
    lines = []
    for n in range(300):
        line = {
            **GUIDE,
            "instruction_id": n,
            "language": LANGUAGES[n % 4],
            "path": list(rng.choice(["a", "b", "c"], 3)),
        }
        if n % 37 == 5:
            line["heading"] = None
        if n % 53 == 7:
            line["path"] = ["a", "zz"]  # a viewpoint no scan holds: kept, resolved (and refused) when scored
        lines.append(line)
    data = jsonl(lines)
    whole = list(parse_dataset(data, "f"))
    want = [
        (r["_index"], r["instruction_id"], -1, 1, r["scan"], r["language"], r["path"])
        for r in whole
        if not isinstance(r, RecordError)
    ]
    for chunk_bytes in (1 << 18, 1500):  # one chunk, many chunks (typed chunks and re-parsed ones)
        rows, errors = columnar(data, chunk_bytes)
        assert rows == want and errors == [e for e in whole if isinstance(e, RecordError)]
    # A JSON list (parsed whole, checked as chunks of objects) gives the same rows too.
    rows, errors = columnar(json.dumps(lines).encode())
    assert [r[1:] for r in rows] == [w[1:] for w in want] and len(errors) == len(whole) - len(want)


def test_the_format_is_the_files_never_its_name(tmp_path):
    named_like_r2r = tmp_path / "R2R_val_unseen.json"
    named_like_r2r.write_bytes(jsonl([GUIDE]))
    assert file_format(str(named_like_r2r)) == "rxr_guide"
    r2r = {"path_id": 4, "scan": "s1", "path": ["a"], "heading": 0, "instructions": ["x"]}
    gz = tmp_path / "rxr_val_unseen_guide.jsonl.gz"
    gz.write_bytes(gzip.compress(json.dumps([r2r]).encode()))  # an R2R list, gzip'd, named like RxR
    assert file_format(str(gz)) == "r2r"
    # A file that starts with R2R records judges every record as R2R: its RxR lines are refused.
    rows, errors = columnar(jsonl([r2r, GUIDE]))
    assert [r[1] for r in rows] == [4] and errors[0].reason == "missing field 'instructions'"
    follower = {"demonstration_id": 26, "instruction_id": 26, "annotator_id": 43, "path": ["a"], "metrics": {}}
    assert record_format(follower) == "rxr_follower"
    assert [e.reason for e in parse_dataset(jsonl([follower]), "f")] == [FOLLOWER_AS_DATASET]
    (read,) = parse_followers(jsonl([follower]), "f")
    assert read["instr_id"] == "26" and read["path"] == ["a"]


@pytest.mark.real_data
def test_the_readme_sample_reads_on_both_paths(shared_data):
    folder = shared_data / "rxr_sample"
    guide_file = str(folder / "rxr_sample_guide.jsonl.gz")
    assert file_format(guide_file) == "rxr_guide"
    assert file_format(str(folder / "rxr_sample_follower.jsonl.gz")) == "rxr_follower"
    (record,) = parse_dataset(gzip.decompress((folder / "rxr_sample_guide.jsonl.gz").read_bytes()), guide_file)
    assert (record["instr_id"], record["language"], record["annotator_id"]) == ("26", "en-IN", 19)
    assert record["timed_instruction"] == [{"start_time": 0.4, "word": "Okay,", "end_time": 1.0}]
    rows, errors = columnar(gzip.decompress((folder / "rxr_sample_guide.jsonl.gz").read_bytes()))
    assert not errors and [(r[1], r[2], r[5], len(r[6])) for r in rows] == [(26, -1, "en-IN", 5)]
    (follower,) = parse_followers(gzip.decompress((folder / "rxr_sample_follower.jsonl.gz").read_bytes()), "f")
    assert follower["metrics"]["sr"] == 1.0 and len(follower["path"]) == 6


@pytest.mark.real_data
def test_fixtures_from_r2r_read_as_one_episode_per_instruction(r2r_dir, connectivity_dir, tmp_path):
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:60]
    files = write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp_path), pose_traces=False)
    vocab = Vocabulary.load(connectivity_dir)
    with open(files.guide, "rb") as f:
        data = gzip.decompress(f.read())
    fmt, batches = FileFormat(), []
    for start, items, strict in json_chunks(io.BytesIO(data), files.guide, typed=fmt.typed):
        assert not isinstance(items, list)  # every chunk decoded straight into columns
        batch, errors = reference_batch(items, start, files.guide, 0, vocab, strict=strict, fmt=fmt.fmt_of(items))
        assert not errors
        batches.append(batch)
    batch = ReferenceBatch.concat(batches)
    want = [(rxr_instruction_id(r["path_id"], k), r["path"]) for r in records for k in range(len(r["instructions"]))]
    assert [(int(i), batch.paths.viewpoints(n, vocab)) for n, i in enumerate(batch.path_id)] == want
    assert set(batch.languages) <= set(LANGUAGES) and (batch.language >= 0).all()
    lines = read_jsonl(files.guide)
    assert [batch.languages[c] for c in batch.language] == [x["language"] for x in lines]
    whole = list(parse_dataset(data, files.guide))
    assert [r["instr_id"] for r in whole] == [str(i) for i, _ in want]
    assert file_format(files.follower) == "rxr_follower" and file_format(files.guide) == "rxr_guide"
