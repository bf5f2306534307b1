"""Mergeable statistics for reports: fine-binned histograms, moments and counts, free of Beam.

A report must aggregate outputs of any size, so every statistic is a *partial*: a flat dict that
can be computed on any slice of the data and merged with any other in any order (sums, minima,
maxima). Values are counted in fixed fine bins (`bin = floor(x / width)`), which merge exactly;
the plotting step coarsens them into a few dozen display bins shared by every series it compares.

Partial keys are tuples whose first element says how to merge:
    ("hist", section, label, quantity, bin) -> count        (summed)
    ("n" | "sum" | "nulls", section, label, quantity) -> x  (summed)
    ("min" | "max", section, label, quantity) -> x          (min / max)
    ("count", section, label, name) -> count                (summed)
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter

import numpy as np

from vlnkit.counting import unique_ints
from vlnkit.hashing import stable_hash

# --------------------------------------------------------------------------- what is measured
DATASET, SCORES, PERTURBATIONS, PARAPHRASES = "dataset", "scores", "perturbations", "paraphrases"
SCORE_SUMMARY = "score_summary"
INSTRUCTION_SCORES = "instruction_scores"  # a score_instructions run's summary.json: its own pages
KINDS = (DATASET, SCORES, PERTURBATIONS, PARAPHRASES, SCORE_SUMMARY, INSTRUCTION_SCORES)

# Fine-bin width per quantity; integer quantities use width 1 (exact counts).
DATASET_QUANTITIES = {"steps": 1.0, "length_m": 0.25, "shortest_m": 0.25, "words": 1.0}
INTEGER_QUANTITIES = frozenset({"steps", "words"})
METRIC_WIDTHS = {
    "pl": 0.25,
    "ne": 0.25,
    "one": 0.25,
    "sr": 0.01,
    "osr": 0.01,
    "spl": 0.01,
    "sed": 0.01,
    "cls": 0.01,
    "dtw": 0.5,
    "ndtw": 0.01,
    "sdtw": 0.01,
    "ad": 0.25,
    "md": 0.25,
}
ALL_WIDTHS = {**DATASET_QUANTITIES, **METRIC_WIDTHS, "bleu": 0.01}
RATE_METRICS = frozenset({"sr", "osr", "spl", "sed", "cls", "ndtw", "sdtw"})
BLEU_WIDTH = 0.01
DEFAULT_KEEP_BAND = (0.25, 0.7)

QUANTITY_LABELS = {
    "steps": "steps per path (edges)",
    "length_m": "path length (m)",
    "shortest_m": "start-to-goal shortest distance (m)",
    "words": "instruction length (words)",
    "bleu": "sentence BLEU (0-1)",
}

_PARQUET_PREFIXES = {
    "paths": DATASET,
    "episodes": SCORES,
    "perturbations": PERTURBATIONS,
    "paraphrases": PARAPHRASES,
}
_COLUMNS = {
    DATASET: {"path_id", "scan", "path", "instructions"},
    SCORES: {"instr_id", "ne", "sr"},
    PERTURBATIONS: {"source_instr_id", "family", "method", "instruction"},
    PARAPHRASES: {"instr_id", "language", "bleu", "kept"},
}


class ReportInputError(ValueError):
    """An input file whose kind cannot be told from its name or columns."""


def detect_kind(path: str, columns: list[str] | None = None) -> str:
    """The kind of one input file, from its name (`<prefix>-SSSSS-of-NNNNN.parquet`, `summary.json`,
    other `.json` / `.jsonl`, also gzip or bzip2 compressed = an R2R/R4R dataset or an RxR guide file),
    confirmed or decided by Parquet columns.

    >>> detect_kind("rxr_val_unseen_guide.jsonl.gz"), detect_kind("runs/a/summary.json")
    ('dataset', 'score_summary')
    """
    name = os.path.basename(path)
    if name.endswith(".parquet"):
        prefix = re.sub(r"-\d+-of-\d+$", "", name[: -len(".parquet")])
        kind = _PARQUET_PREFIXES.get(prefix)
        if columns is not None:
            have = set(columns)
            if kind is not None and not _COLUMNS[kind] <= have:
                missing = sorted(_COLUMNS[kind] - have)
                raise ReportInputError(f"{path}: named like {kind} output but lacks columns {missing}")
            if kind is None:
                found = [k for k, need in _COLUMNS.items() if need <= have]
                if len(found) != 1:
                    raise ReportInputError(f"{path}: cannot tell the kind of Parquet file from columns {sorted(have)}")
                kind = found[0]
        if kind is None:
            raise ReportInputError(
                f"{path}: unknown Parquet output (expected paths-, episodes-, perturbations- or paraphrases-*)"
            )
        return kind
    if name == "summary.json":
        return SCORE_SUMMARY
    if _dataset_stem(name) != name:
        return DATASET
    raise ReportInputError(f"{path}: not a report input (expected .json, .jsonl (or .gz, .bz2) or .parquet)")


def _dataset_stem(name: str) -> str:
    """A dataset file's name without its `.json` / `.jsonl` suffix and compression (`.gz`, `.bz2`)."""
    for compression in ("", ".gz", ".bz2"):
        for suffix in (".json", ".jsonl"):
            if name.endswith(suffix + compression):
                return name[: -len(suffix + compression)]
    return name


def input_label(path: str, kind: str) -> str:
    """A short name for the data set a file belongs to: a JSON file's stem, or the folder of a job's
    output (shards and summary of one run share their folder, hence one label)."""
    name = os.path.basename(path.rstrip("/"))
    if kind == DATASET and not name.endswith(".parquet"):
        return _dataset_stem(name)
    folder = os.path.dirname(path.rstrip("/"))
    if os.path.basename(os.path.dirname(folder)) == "versions":  # a published version: name its output folder
        folder = os.path.dirname(os.path.dirname(folder))
    return os.path.basename(folder) or os.path.splitext(name)[0]


# --------------------------------------------------------------------------- partials
def _fine_bins(values: np.ndarray, width: float) -> np.ndarray:
    return np.floor(values / width + 1e-9).astype(np.int64)


def partial_from_arrays(section: str, label: str, arrays: dict[str, np.ndarray], widths: dict[str, float]) -> dict:
    """One partial for many values at once (vectorized): fine histogram, count, sum, min, max, nulls.

    Non-finite values (NaN, None, inf: e.g. unreachable distances) are counted as nulls and
    nowhere else, so no statistic silently absorbs them.
    """
    out: dict = {}
    for quantity, values in arrays.items():
        v = np.asarray(values, dtype=np.float64).ravel()
        finite = np.isfinite(v)
        good = v[finite]
        key = (section, label, quantity)
        out[("n", *key)] = int(good.size)
        out[("nulls", *key)] = int(v.size - good.size)
        if good.size == 0:
            continue
        out[("sum", *key)] = float(good.sum())
        out[("min", *key)] = float(good.min())
        out[("max", *key)] = float(good.max())
        bins, counts = unique_ints(_fine_bins(good, widths[quantity]), return_counts=True)
        for b, c in zip(bins.tolist(), counts.tolist()):
            out[("hist", *key, b)] = c
    return out


def count_partial(section: str, label: str, names) -> dict:
    """Counts of names (strings or tuples joined with '/') as a partial."""
    counts = Counter("/".join(n) if isinstance(n, tuple) else str(n) for n in names)
    return {("count", section, label, name): c for name, c in counts.items()}


def merge(acc: dict, other: dict) -> dict:
    """Merge `other` into `acc` (in place; returned). Associative and commutative."""
    for key, value in other.items():
        old = acc.get(key)
        if old is None:
            acc[key] = value
        elif key[0] == "min":
            acc[key] = min(old, value)
        elif key[0] == "max":
            acc[key] = max(old, value)
        else:
            acc[key] = old + value
    return acc


# --------------------------------------------------------------------------- per-kind partials
def instruction_words(text: str) -> int:
    return len(text.split())


def dataset_partial(label: str, records: list[dict], graphs) -> tuple[dict, list[tuple[dict, str]]]:
    """Dataset statistics of records (R2R/R4R dicts or RxR guide lines) using their scans' graphs: the
    path statistics of each distinct path once (`paths_partial` of the first record of each `path_key`:
    several RxR instructions share a path) and the instructions of every record whose path is on its
    scan's graph (`instructions_partial`; a record that cannot be measured counts nowhere).

    `graphs.get(scan)` returns a NavGraph (a GraphStore). Returns the partial and the records that
    could not be measured, each with the reason (unknown scan or viewpoint).
    """
    from vlnkit.datasets.rxr import path_key

    first = {}
    for record in records:
        first.setdefault(path_key(record), record)
    partial, bad = paths_partial(label, list(first.values()), graphs)
    measured = [r for r in records if unmeasurable(r, graphs) is None]
    return merge(partial, instructions_partial(label, measured)), bad


def unmeasurable(record: dict, graphs) -> str | None:
    """Why a record's path cannot be measured on its scan's graph (unknown scan or viewpoint), or None."""
    try:
        graphs.get(record["scan"]).indices(record["path"])
    except ValueError as exc:  # GraphError
        return str(exc)
    return None


def paths_partial(label: str, records: list[dict], graphs) -> tuple[dict, list[tuple[dict, str]]]:
    """Path statistics (steps, length, start-to-goal distance, the count of paths) of records, one path
    each, and the records that could not be measured with the reason."""
    steps, length, shortest, bad = [], [], [], []
    for record in records:
        try:
            graph = graphs.get(record["scan"])
            idx = graph.indices(record["path"])
        except ValueError as exc:  # GraphError
            bad.append((record, str(exc)))
            continue
        dist = graph.distances
        steps.append(len(idx) - 1)
        length.append(float(dist[idx[:-1], idx[1:]].sum()) if len(idx) > 1 else 0.0)
        shortest.append(float(dist[idx[0], idx[-1]]))
    arrays = {"steps": steps, "length_m": length, "shortest_m": shortest}
    partial = partial_from_arrays(DATASET, label, arrays, DATASET_QUANTITIES)
    partial[("count", DATASET, label, "paths")] = len(steps)
    return partial, bad


def instructions_partial(label: str, records: list[dict]) -> dict:
    """Instruction statistics of records: words per instruction and the counts `instructions` and
    `instructions.<language tag>` (`vlnkit.datasets.languages`: R2R's are "en", RxR's their own tag).

    >>> p = instructions_partial("d", [{"instruction_id": 1, "instruction": "a b c", "language": "hi-IN"}])
    >>> p[("count", "dataset", "d", "instructions.hi-IN")], p[("max", "dataset", "d", "words")]
    (1, 3.0)
    """
    from vlnkit.datasets.languages import language_counts, record_instructions

    words = [instruction_words(text) for record in records for _, text, _ in record_instructions(record)]
    partial = partial_from_arrays(DATASET, label, {"words": words}, DATASET_QUANTITIES)
    partial[("count", DATASET, label, "instructions")] = 0
    for record in records:
        for name, n in language_counts(record).items():
            merge(partial, {("count", DATASET, label, name): n})
    return partial


def scores_partial(label: str, columns: dict[str, np.ndarray]) -> dict:
    """Per-metric statistics of a table of episode scores (null / NaN scores count as nulls)."""
    arrays = {m: columns[m] for m in METRIC_WIDTHS if m in columns}
    partial = partial_from_arrays(SCORES, label, arrays, METRIC_WIDTHS)
    n = len(next(iter(columns.values()))) if columns else 0
    partial[("count", SCORES, label, "episodes")] = n
    return partial


def perturbations_partial(label: str, families, methods) -> dict:
    return count_partial(PERTURBATIONS, label, zip(families, methods))


def paraphrases_partial(label: str, languages, kept, bleu) -> dict:
    """Rows and kept paraphrases per pivot language, and the BLEU histogram (kept or not)."""
    languages = [str(x) for x in languages]
    kept = np.asarray(kept, dtype=bool)
    partial = count_partial(PARAPHRASES, label, ((lang, "rows") for lang in languages))
    merge(partial, count_partial(PARAPHRASES, label, ((lang, "kept") for lang, k in zip(languages, kept) if k)))
    merge(partial, partial_from_arrays(PARAPHRASES, label, {"bleu": bleu}, {"bleu": BLEU_WIDTH}))
    return partial


# --------------------------------------------------------------------------- final tables
def finalize(partial: dict, widths: dict[str, float] | None = None) -> dict:
    """A merged partial as nested, JSON-ready tables:
    {section: {label: {"quantities": {q: {n, nulls, mean, min, max, median, width, hist}}, "counts": {...}}}}.
    `hist` is a sorted list of [fine bin, count]; `median` is read from the fine bins (within one width).
    `widths` gives the fine-bin width of quantities other than the report's own (`ALL_WIDTHS`).
    """
    widths = {**ALL_WIDTHS, **(widths or {})}
    tables: dict = {}

    def slot(section, label):
        return tables.setdefault(section, {}).setdefault(label, {"quantities": {}, "counts": {}})

    hists: dict = {}
    for key, value in partial.items():
        kind = key[0]
        if kind == "count":
            slot(key[1], key[2])["counts"][key[3]] = value
        elif kind == "hist":
            hists.setdefault(key[1:4], []).append([key[4], value])
        else:
            q = slot(key[1], key[2])["quantities"].setdefault(key[3], {})
            q[kind] = value
    for (section, label, quantity), bins in hists.items():
        slot(section, label)["quantities"][quantity]["hist"] = sorted(bins)
    for labels in tables.values():
        for entry in labels.values():
            for quantity, q in entry["quantities"].items():
                q.setdefault("hist", [])
                q.setdefault("nulls", 0)
                q["width"] = widths[quantity]
                n = q.get("n", 0)
                q["mean"] = q["sum"] / n if n else None
                q["median"] = hist_quantile(q["hist"], q["width"], 0.5) if n else None
                q.pop("sum", None)
            entry["counts"] = dict(sorted(entry["counts"].items()))
    return tables


def hist_quantile(hist: list, width: float, q: float) -> float:
    """The q-quantile of fine-binned values, as the centre of the bin holding it (exact for integers)."""
    bins = np.asarray([b for b, _ in hist], dtype=np.float64)
    counts = np.asarray([c for _, c in hist], dtype=np.float64)
    cum = np.cumsum(counts)
    k = int(np.searchsorted(cum, q * cum[-1], side="left"))
    b = bins[min(k, len(bins) - 1)]
    return float(b * width if width == 1.0 else (b + 0.5) * width)


def display_bins(hists: list[list], width: float, integer: bool = False, max_bins: int = 40):
    """Coarsen fine histograms of several series onto one shared set of display bins.

    Returns (edges, [counts per series]); every fine bin falls wholly into one display bin, so the
    counts are exact sums of fine counts. Integer quantities keep unit-wide bins centred on values.
    """
    present = [b for h in hists for b, _ in h]
    if not present:
        return np.array([0.0, width]), [np.zeros(1, dtype=np.int64) for _ in hists]
    lo, hi = min(present), max(present)
    group = max(1, math.ceil((hi - lo + 1) / max_bins))
    n_display = (hi - lo) // group + 1
    edges = (lo + group * np.arange(n_display + 1)) * width
    if integer:
        edges = edges - 0.5
    out = []
    for h in hists:
        counts = np.zeros(n_display, dtype=np.int64)
        if h:
            b = np.asarray([x for x, _ in h], dtype=np.int64)
            c = np.asarray([x for _, x in h], dtype=np.int64)
            np.add.at(counts, (b - lo) // group, c)
        out.append(counts)
    return edges, out


# --------------------------------------------------------------------------- sampling
def sample_key(seed: int, *ids) -> int:
    """A deterministic pseudo-random rank from the seed and a record's own ids (never run order):
    the N records with the smallest keys are the sample, whatever the runner or sharding."""
    return stable_hash(*ids, seed=seed) >> 1  # fits Beam's 64-bit signed ints


# --------------------------------------------------------------------------- drawings
def infer_connector(graph, path: list[str], join_distance: float, tol: float = 1e-6) -> list[str] | None:
    """The connecting segment of a joined R4R path when its source paths are not at hand.

    C is a shortest path of length `join_distance` lying inside the joined path, so it is the
    sub-path [i..j] whose walked length and shortest distance both equal it. Returns it only when
    exactly one such sub-path exists (otherwise the drawing shows the joined path alone).
    """
    idx = graph.indices(path)
    if len(idx) < 2 or not join_distance > tol:
        return None
    dist = graph.distances
    cum = np.concatenate([[0.0], np.cumsum(dist[idx[:-1], idx[1:]])])
    walked = cum[None, :] - cum[:, None]
    direct = dist[np.ix_(idx, idx)]
    upper = np.triu(np.ones_like(walked, dtype=bool), k=1)
    hits = np.argwhere(upper & (np.abs(walked - join_distance) < tol) & (np.abs(direct - join_distance) < tol))
    if len(hits) != 1:
        return None
    i, j = hits[0]
    return list(path[i : j + 1])


def drawing_spec(episode: dict, graph) -> dict:
    """What `vlnkit.reports.plots.path_figure` draws for one sampled episode.

    `episode`: {"reference": lite dataset record, "score": scored candidate or None, "sources":
    [first, second] R2R records or None}. R4R paths with sources get the two source paths and the
    exact connector (shortest path from the first's end to the second's start, docs/design.md "R4R").
    """
    ref = episode["reference"]
    path = list(ref["path"])
    idx = graph.indices(path)
    length = float(graph.distances[idx[:-1], idx[1:]].sum()) if len(idx) > 1 else 0.0
    spec = {"scan": ref["scan"], "path": path}
    score = episode.get("score")
    if score:
        spec["title"] = f"{score['label']}: {score['instr_id']} ({ref['scan']})"
        spec["metrics"] = score.get("metrics") or {}
        if score.get("agent"):
            spec["agent"] = list(score["agent"])
    else:
        spec["title"] = f"{ref['label']}: path {ref['path_id']} ({ref['scan']})"
    spec["title"] += f"\nreference: {len(path) - 1} steps, {length:.1f} m"
    sources = episode.get("sources")
    if sources:
        first, second = list(sources[0]["path"]), list(sources[1]["path"])
        spec["first"], spec["second"] = first, second
        spec["connector"] = graph.shortest_path(first[-1], second[0])
        spec["title"] += f"; joins {ref['first_path_id']} + {ref['second_path_id']}"
    elif "join_distance" in ref:
        spec["connector"] = infer_connector(graph, path, float(ref["join_distance"]))
    return spec
