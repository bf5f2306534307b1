"""RxR-format data made from R2R: guide and follower files and pose traces, for tests, benchmarks and users.

Why in the library (not under tests/): no RxR file can be downloaded on a build machine, yet the jobs that
read RxR need realistic input of the released format at every scale, for the tests, the benchmarks (a
package of their own) and the runnable docs; and a user who wants to check an RxR evaluator can convert
an R2R split and score it both ways, instruction by instruction.

What is made (the format of the google-research-datasets/RxR README, field for field like its sample
entries in `../shared/data/rxr_sample/`):

- one **guide line** per R2R instruction: `path_id`, `split`, `scan`, `heading`, `path` as in R2R;
  `instruction_id = rxr_instruction_id(path_id, k)` = `10 * path_id + k` for instruction k of the path
  (one to one while k < 10; R2R paths have 3 or 4; `r2r_instr_id` inverts it); `annotator_id`;
  `language` one of en-IN, en-US, hi-IN, te-IN (a stable hash of the instruction id); `instruction`
  the R2R text, where for hi-IN and te-IN the English direction words (left, right, up, ...) are
  replaced word for word by that language's (`vlnkit.perturbations.direction_lexicons`), so language-aware
  perturbations have something to find; `timed_instruction` one `{start_time, word, end_time}` per
  whitespace-separated word of the text, about 3% of them without times, as in RxR; `edit_distance`.
- one **follower line** per guide line (`demonstration_id` = `instruction_id`): the guide path, a detour
  through a neighbour and back, or the path stopped two viewpoints short, with `metrics` {ne, sr, spl,
  dtw, ndtw, sdtw} computed by `vlnkit.evaluation.metrics` on the scan's graph.
- one **guide pose trace** per guide line, `pose_traces/rxr_{split}/{instruction_id:06}_guide_pose_trace.npz`:
  the guide stands at each path viewpoint in turn for a span of time and speaks that viewpoint's words
  inside it (snapshots every 0.25 s; a viewpoint can get no words, the guide then walks on silently).
  `pano`, `time`, `extrinsic_matrix` (camera at the viewpoint, looking along the direction of travel,
  with some look-around), `intrinsic_matrix` (60 degree field of view, 640 x 480), `image_mask` (the
  columns the camera saw, a band around the horizon), `feature_weights` (`image_mask` pooled onto 12
  headings x 3 elevations) and `text_mask` ([k, m], m = number of *words*, not BERT sub-words: word i is
  marked at the viewpoint it was spoken at, including the words without times), so the true
  word-to-viewpoint assignment can be read back from the trace.

Everything depends only on the R2R records, the graphs and `seed`.

>>> rxr_instruction_id(4332, 2), r2r_instr_id(43322)
(43322, '4332_2')
>>> translate_directions("Turn left and go up the stairs.", "hi-IN")
'Turn बाएं and go ऊपर the stairs.'
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
from dataclasses import dataclass

import numpy as np

from vlnkit.datasets.pose_traces import pose_trace_path
from vlnkit.evaluation.metrics import score
from vlnkit.hashing import stable_bucket, stable_rng
from vlnkit.io import fileio
from vlnkit.navigation.graph import GraphStore, NavGraph, simulator_heading
from vlnkit.perturbations.direction_lexicons import lexicon_for

LANGUAGES = ("en-IN", "en-US", "hi-IN", "te-IN")
INSTRUCTIONS_PER_PATH = 10  # instruction_id = 10 * path_id + k, so k < 10
FOLLOWER_METRICS = ("ne", "sr", "spl", "dtw", "ndtw", "sdtw")
# The released formats, field by field, in the order of the README's sample entries.
GUIDE_FIELDS = {
    "path_id": int,
    "split": str,
    "scan": str,
    "heading": float,
    "path": list,
    "instruction_id": int,
    "annotator_id": int,
    "language": str,
    "instruction": str,
    "timed_instruction": list,
    "edit_distance": float,
}
FOLLOWER_FIELDS = {"demonstration_id": int, "instruction_id": int, "annotator_id": int, "path": list, "metrics": dict}
UNTIMED_SHARE = 0.03
_SNAPSHOT_STEP = 0.25  # seconds between snapshots; spans are multiples of 0.5 s, so float32 times are exact
_WORD_STEP, _WORD_LEAD, _WORD_LENGTH = 0.5, 0.3, 0.4
_FOV = math.radians(60.0)
_WIDTH, _HEIGHT = 640, 480


def rxr_instruction_id(path_id: int, k: int) -> int:
    """The fixture's RxR `instruction_id` of R2R instruction `k` of path `path_id` (one to one for k < 10)."""
    if not 0 <= k < INSTRUCTIONS_PER_PATH:
        raise ValueError(f"path {path_id}: instruction index {k} does not fit instruction_id = 10 * path_id + k")
    return INSTRUCTIONS_PER_PATH * int(path_id) + k


def r2r_instr_id(instruction_id: int) -> str:
    """The R2R address "<path_id>_<k>" of a fixture instruction id (the inverse of `rxr_instruction_id`)."""
    path_id, k = divmod(int(instruction_id), INSTRUCTIONS_PER_PATH)
    return f"{path_id}_{k}"


def _translations(language: str) -> dict[str, str]:
    lexicon = lexicon_for(language)
    out: dict[str, str] = {}
    for word in lexicon.words():  # the first form of each meaning (the lexicon lists the common form first)
        gloss = lexicon.gloss(word)
        if " " not in gloss:
            out.setdefault(gloss, word)
    return out


_TRANSLATIONS = {tag: _translations(tag) for tag in ("hi-IN", "te-IN")}
_PATTERNS = {
    tag: re.compile(r"\b(" + "|".join(sorted(table, key=len, reverse=True)) + r")\b", re.IGNORECASE)
    for tag, table in _TRANSLATIONS.items()
}


def translate_directions(text: str, language: str) -> str:
    """English direction words of `text` replaced by `language`'s (hi-IN, te-IN); English text unchanged."""
    if language not in _PATTERNS:
        return text
    table = _TRANSLATIONS[language]
    return _PATTERNS[language].sub(lambda m: table[m.group().lower()], text)


@dataclass(frozen=True)
class GuideFixture:
    """One guide line, its pose trace arrays, and the true path position of each of its words."""

    line: dict
    trace: dict[str, np.ndarray]
    word_viewpoints: np.ndarray


def _travel_headings(graph: NavGraph, path: list[str], start_heading: float) -> np.ndarray:
    xy = graph.positions[graph.indices(path), :2]
    out = np.empty(len(path))
    out[0] = start_heading
    for j in range(1, len(path)):
        dx, dy = xy[j] - xy[j - 1]
        out[j] = simulator_heading(float(dx), float(dy)) if (dx or dy) else out[j - 1]
    return out


def _pose_arrays(graph, path, heading, at_word, rng) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The trace arrays and each word's start time (NaN not yet applied)."""
    k, m = len(path), len(at_word)
    counts = np.bincount(at_word, minlength=k)
    spans = 0.5 + _WORD_STEP * counts
    span_start = np.concatenate(([0.0], np.cumsum(spans)[:-1]))
    rank = np.arange(m) - np.concatenate(([0], np.cumsum(counts)[:-1]))[at_word]
    word_start = np.round(span_start[at_word] + _WORD_LEAD + _WORD_STEP * rank, 2)
    per_view = np.ceil(spans / _SNAPSHOT_STEP).astype(np.int64)
    view = np.repeat(np.arange(k), per_view)
    offset = np.arange(len(view)) - np.repeat(np.cumsum(per_view) - per_view, per_view)
    time = span_start[view] + _SNAPSHOT_STEP * offset
    look = _travel_headings(graph, path, heading)[view] + rng.uniform(-0.6, 0.6, len(view))
    position = graph.positions[graph.indices(path)][view]
    cos, sin = np.cos(look), np.sin(look)
    extrinsic = np.zeros((len(view), 4, 4))
    # World-from-camera: heading turns clockwise from +y (simulator convention), camera looks along +y.
    extrinsic[:, 0, 0], extrinsic[:, 0, 1], extrinsic[:, 1, 0], extrinsic[:, 1, 1] = cos, sin, -sin, cos
    extrinsic[:, 2, 2] = extrinsic[:, 3, 3] = 1.0
    extrinsic[:, :3, 3] = position
    focal = (_WIDTH / 2) / math.tan(_FOV / 2)
    intrinsic = np.array([[focal, 0, _WIDTH / 2, 0], [0, focal, _HEIGHT / 2, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    # Equirectangular masks, heading 0 at the centre column, increasing to the right.
    column_heading = ((np.arange(256) + 0.5) / 256) * 2 * np.pi - np.pi
    seen = np.abs((column_heading[None, :] - look[:, None] + np.pi) % (2 * np.pi) - np.pi) <= _FOV / 2
    columns = np.zeros((k, 256), dtype=bool)
    np.logical_or.at(columns, view, seen)
    row_elevation = 90.0 - (np.arange(128) + 0.5) / 128 * 180.0
    rows = np.abs(row_elevation) <= 30.0
    image_mask = rows[None, :, None] & columns[:, None, :]
    heading_bin = np.round(np.degrees(column_heading) / 30.0).astype(np.int64) % 12
    elevation_bin = np.digitize(row_elevation, [-15.0, 15.0])  # 0 below, 1 level, 2 above
    labels = (elevation_bin[:, None] * 12 + heading_bin[None, :]).ravel()
    onehot = np.zeros((labels.size, 36))
    onehot[np.arange(labels.size), labels] = 1.0
    feature_weights = image_mask.reshape(k, -1).astype(np.float64) @ onehot / onehot.sum(axis=0)
    text_mask = np.zeros((k, m), dtype=bool)
    text_mask[at_word, np.arange(m)] = True
    arrays = {
        "pano": np.asarray(path, dtype=str)[view].reshape(-1, 1),
        "time": time.astype(np.float32).reshape(-1, 1),
        "extrinsic_matrix": extrinsic.reshape(-1, 16).astype(np.float32),
        "intrinsic_matrix": np.tile(intrinsic.reshape(1, 16), (len(view), 1)).astype(np.float32),
        "image_mask": image_mask,
        "text_mask": text_mask,
        "feature_weights": feature_weights.astype(np.float32),
    }
    return arrays, word_start


def guide_fixture(record: dict, k: int, split: str, graph: NavGraph, seed: int = 0) -> GuideFixture:
    """The guide line and pose trace of R2R instruction `k` of `record` (see the module doc)."""
    instruction_id = rxr_instruction_id(record["path_id"], k)
    rng = stable_rng("rxr-guide", instruction_id, seed=seed)
    language = LANGUAGES[stable_bucket(instruction_id, buckets=len(LANGUAGES), seed=seed)]
    text = translate_directions(record["instructions"][k], language)
    words = text.split()
    if not words:
        raise ValueError(f"path {record['path_id']} instruction {k} is empty")
    path = list(record["path"])
    at_word = np.sort(rng.integers(0, len(path), len(words)))
    arrays, start = _pose_arrays(graph, path, float(record["heading"]), at_word, rng)
    untimed = rng.random(len(words)) < UNTIMED_SHARE
    untimed[rng.integers(len(words))] = False  # at least one word keeps its times
    timed_instruction = [
        {"word": w} if off else {"start_time": float(t), "word": w, "end_time": float(round(t + _WORD_LENGTH, 2))}
        for w, t, off in zip(words, start.tolist(), untimed.tolist())
    ]
    line = {
        "path_id": int(record["path_id"]),
        "split": split,
        "scan": record["scan"],
        "heading": float(record["heading"]),
        "path": path,
        "instruction_id": instruction_id,
        "annotator_id": int(stable_bucket("guide-annotator", instruction_id, buckets=1000, seed=seed)),
        "language": language,
        "instruction": text,
        "timed_instruction": timed_instruction,
        "edit_distance": float(round(rng.uniform(0.0, 0.3), 6)),
    }
    return GuideFixture(line=line, trace=arrays, word_viewpoints=at_word)


def follower_line(guide: dict, graph: NavGraph, seed: int = 0) -> dict:
    """A follower annotation of a guide line: the guide path, a detour through a neighbour, or stopped short."""
    instruction_id = guide["instruction_id"]
    rng = stable_rng("rxr-follower", instruction_id, seed=seed)
    path = list(guide["path"])
    walked, kind = path, int(rng.integers(3))
    if kind == 1:
        i = int(rng.integers(len(path)))
        off_path = [
            graph.viewpoints[x] for x in graph.neighbours[graph.idx(path[i])] if graph.viewpoints[x] not in path
        ]
        if off_path:
            walked = path[: i + 1] + [off_path[int(rng.integers(len(off_path)))]] + path[i:]
    elif kind == 2 and len(path) > 2:
        walked = path[:-2]
    metrics = score(path, walked, graph, metrics=FOLLOWER_METRICS)
    return {
        "demonstration_id": instruction_id,
        "instruction_id": instruction_id,
        "annotator_id": int(stable_bucket("follower-annotator", instruction_id, buckets=1000, seed=seed)),
        "path": walked,
        "metrics": {name: float(metrics[name]) for name in FOLLOWER_METRICS},
    }


@dataclass(frozen=True)
class RxrFixtureFiles:
    guide: str
    follower: str
    pose_traces: str  # the `pose_traces` folder (holding rxr_{split}/)
    instructions: int


def write_jsonl_gz(path: str, lines: list[dict]) -> None:
    """gzip JSON Lines with a fixed gzip timestamp, so the same lines always make the same bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz:
        for line in lines:
            gz.write((json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8"))
    with fileio.open_write(path) as f:
        f.write(buffer.getvalue())


def read_jsonl(path: str) -> list[dict]:
    """Every line of a (gzip) JSON Lines file, as dicts: how the tests read fixtures and RxR's own samples."""
    with fileio.open_read(path) as f:
        return [json.loads(line) for line in io.TextIOWrapper(f, encoding="utf-8") if line.strip()]


def write_rxr_fixtures(
    r2r_records: list[dict],
    split: str,
    connectivity_dir: str,
    out_dir: str,
    *,
    seed: int = 0,
    pose_traces: bool = True,
) -> RxrFixtureFiles:
    """Write `rxr_{split}_guide.jsonl.gz`, `rxr_{split}_follower.jsonl.gz` and (unless `pose_traces` is
    False) `pose_traces/rxr_{split}/*.npz` for every instruction of `r2r_records` (parsed R2R records)."""
    graphs = GraphStore(connectivity_dir)
    trace_dir = os.path.join(out_dir, "pose_traces")
    guides, followers = [], []
    for record in r2r_records:
        graph = graphs.get(record["scan"])
        for k in range(len(record["instructions"])):
            fixture = guide_fixture(record, k, split, graph, seed)
            guides.append(fixture.line)
            followers.append(follower_line(fixture.line, graph, seed))
            if pose_traces:
                path = pose_trace_path(trace_dir, split, fixture.line["instruction_id"])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                np.savez_compressed(path, **fixture.trace)
    files = RxrFixtureFiles(
        guide=os.path.join(out_dir, f"rxr_{split}_guide.jsonl.gz"),
        follower=os.path.join(out_dir, f"rxr_{split}_follower.jsonl.gz"),
        pose_traces=trace_dir,
        instructions=len(guides),
    )
    write_jsonl_gz(files.guide, guides)
    write_jsonl_gz(files.follower, followers)
    return files
