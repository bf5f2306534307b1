"""What a report reads: the files, globs and job output folders a user names, each classified.

`classify` turns `--inputs` (or `--compare`) into `ReportInput`s: each matched file with its kind
(`vlnkit.reports.stats.detect_kind`: a dataset, score episodes, perturbations, paraphrases, a score
summary) and the data set it belongs to (`input_label`). A job's output folder stands for the files a
report reads in its published version (`FOLDER_PATTERNS`, or its `summary.json` alone). Every problem is
a `ReportInputError` naming the flag or the file, for the job to refuse with.

    >>> classify(None, compare=False, taken=set())
    ([], [])
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from vlnkit.datasets.cvdn import TARGET_PATH
from vlnkit.evaluation.leaderboard import OwnMetric, own_metrics
from vlnkit.io import fileio, inputs
from vlnkit.reports.stats import (
    DEFAULT_KEEP_BAND,
    INSTRUCTION_SCORES,
    PARAPHRASES,
    SCORE_SUMMARY,
    ReportInputError,
    detect_kind,
    input_label,
)

# What a job's output folder holds that a report reads (summary.json only for score-like jobs).
FOLDER_PATTERNS = ("paths-*.parquet", "episodes-*.parquet", "perturbations-*.parquet", "paraphrases-*.parquet")
SCORE_JOBS = ("score", "random_baseline")
INSTRUCTIONS_JOB = "score_instructions"  # its summary.json stands for the run: the report makes its pages


@dataclass(frozen=True)
class ReportInput:
    """One input file: its kind, the data set it belongs to (`label`) and whether it came from --compare."""

    path: str
    kind: str
    label: str
    compare: bool = False


def parquet_columns(path: str) -> list[str]:
    import pyarrow.parquet as pq

    try:
        with fileio.open_read(path) as f:
            return pq.read_schema(f).names
    except Exception as exc:  # noqa: BLE001 -- any read error is the same structural problem
        raise ReportInputError(f"{path}: cannot read Parquet schema ({exc})") from None


def read_json(path: str):
    try:
        return json.loads(fileio.read_bytes(path))
    except (OSError, ValueError) as exc:
        raise ReportInputError(f"{path}: cannot read JSON ({exc})") from None


def expand(pattern: str) -> list[str]:
    """A file, glob or output folder -> the report inputs it names, in a stable order."""
    if not fileio.is_glob(pattern) and not pattern.endswith((".json", ".jsonl", ".parquet")):
        folder = [p for p, _ in inputs.match_current([fileio.join(pattern, f) for f in FOLDER_PATTERNS])]
        summary = fileio.join(pattern, "summary.json")
        if not folder and fileio.exists(summary):  # e.g. random_baseline without --write_episodes
            folder.append(summary)
        if folder:
            return folder
    return [p for p, _ in inputs.match_current(pattern)]


def classify(patterns: str | None, compare: bool, taken: set[str]) -> tuple[list[ReportInput], list[str]]:
    """Input files with kind and label; names of matched files that are not report inputs. Labels of
    --inputs go into `taken`, so a --compare data set of the same name is told apart."""
    items, skipped = [], []
    flag = "--compare" if compare else "--inputs"
    for pattern in [p.strip() for p in (patterns or "").split(",") if p.strip()]:
        try:
            paths = expand(pattern)
        except Exception as exc:  # noqa: BLE001 -- an unreachable filesystem, a malformed URL: one line, as a job's inputs
            raise ReportInputError(f"{flag}={pattern}: cannot list ({type(exc).__name__}: {exc})") from None
        if not paths:
            what = "matches no file" if fileio.is_glob(pattern) else "does not exist (nor a job's output folder)"
            raise ReportInputError(f"{flag}: {pattern} {what}")
        for path in paths:
            name = os.path.basename(path)
            if name in ("manifest.json", "_SUCCESS") or name.startswith(("dead_letter-", "missing_predictions-")):
                skipped.append(path)
                continue
            columns = parquet_columns(path) if path.endswith(".parquet") else None
            kind = detect_kind(path, columns)
            if kind == SCORE_SUMMARY:
                summary = read_json(path)
                if isinstance(summary, dict) and summary.get("job") == INSTRUCTIONS_JOB and "by_system" in summary:
                    kind = INSTRUCTION_SCORES
                elif not (isinstance(summary, dict) and summary.get("job") in SCORE_JOBS and "metrics" in summary):
                    skipped.append(path)
                    continue
            label = input_label(path, kind)
            if compare and label in taken:
                label = f"{label} (compare)"
            items.append(ReportInput(path, kind, label, compare))
    if not compare:
        taken.update(i.label for i in items)
    return items, skipped


def instruction_run(items: list[ReportInput]) -> dict | None:
    """The score_instructions run among --inputs (None without one): its summary, label, per-instruction
    shards and what its summary says it read (`--predictions`, `--references`, relative to where it ran).
    One run per report: its pages have fixed names."""
    runs = [i for i in items if i.kind == INSTRUCTION_SCORES]
    if not runs:
        return None
    if len(runs) > 1:
        raise ReportInputError(
            f"{len(runs)} score_instructions runs ({', '.join(i.label for i in runs)}): report one at a time"
        )
    item = runs[0]
    folder = os.path.dirname(item.path)
    shards = [p for p, _ in inputs.match_current(fileio.join(folder, "instructions-*.parquet"))]
    if not shards:
        raise ReportInputError(f"{folder}: a score_instructions run without its instructions-*.parquet")
    options = read_json(item.path).get("options") or {}
    predictions = options.get("predictions") or []
    return {
        "summary": item.path,
        "label": item.label,
        "rows": shards,
        "predictions": [predictions] if isinstance(predictions, str) else list(predictions),
        "references": options.get("references"),
    }


def keep_band(items: list[ReportInput]) -> tuple[float, float]:
    """The paraphrase job's BLEU keep band, from the summary.json beside its shards (default otherwise)."""
    for item in items:
        if item.kind == PARAPHRASES:
            path = fileio.join(os.path.dirname(item.path), "summary.json")
            if fileio.exists(path):
                s = read_json(path)
                if "min_bleu" in s and "max_bleu" in s:
                    return float(s["min_bleu"]), float(s["max_bleu"])
    return DEFAULT_KEEP_BAND


def _summary_of(folder: str) -> dict:
    """A score folder's summary.json ({} when it has none)."""
    path = fileio.join(folder, "summary.json")
    return read_json(path) if fileio.exists(path) else {}


def scored_on(folder: str) -> list[str]:
    """The dataset files a score job's output folder was scored on, as its summary.json names them."""
    path = fileio.join(folder, "summary.json")
    named = read_json(path).get("dataset") if fileio.exists(path) else None
    if not named:
        raise ReportInputError(
            f"{folder}: no summary.json naming the dataset its episodes were scored on; pass --dataset"
        )
    gone = [f for f in named if not fileio.exists(f)]
    if gone:
        raise ReportInputError(
            f"{path}: names the dataset {gone[0]}, which does not exist (moved, or a path relative to where the "
            "score job ran); pass --dataset"
        )
    return named


def scored_target_path(folders: list[str]) -> str | None:
    """The target path CVDN episodes were scored against (the score job's `--target_path`, in its
    summary.json's options), or None when no folder holds a CVDN score run; ReportInputError when two folders
    say different paths (one comparison page, one reference per episode)."""
    found = set()
    for folder in folders:
        options = _summary_of(folder).get("options") or {}
        if TARGET_PATH in options:  # a score run of a task whose episodes have a target path
            found.add(options[TARGET_PATH])
    if len(found) > 1:
        raise ReportInputError(
            f"CVDN score runs against different target paths ({', '.join(sorted(found))}): compare agents scored "
            "against one target path"
        )
    return found.pop() if found else None


def scored_own_metrics(folders: list[str]) -> dict[str, OwnMetric]:
    """The own metrics of the task the score folders were scored by, as their summary.json declare them
    (`vlnkit.evaluation.leaderboard.own_metrics`: labels, units, which the leaderboard shows); {} when none
    does (a task without own metrics, or episode files without their summary)."""
    found: dict[str, OwnMetric] = {}
    for folder in folders:
        for metric, own in own_metrics(_summary_of(folder)).items():
            found.setdefault(metric, own)
    return found


def scored_with_ground_truth(folders: list[str], dataset: list[str]) -> list[str]:
    """The ground-truth file of each continuous episode file in `dataset`, as the score folders' summary.json
    name them (`ground_truth`, in the order of their `dataset`); "auto" (VLN-CE's name beside the episode
    file) where none says."""
    found: dict[str, str] = {}
    for folder in folders:
        summary = _summary_of(folder)
        named, truth = summary.get("dataset") or [], summary.get("ground_truth") or []
        if len(truth) == len(named):
            found.update(zip(named, truth))
    return [found.get(f, "auto") for f in dataset]


def agent_names(agents_by_file: list[tuple[str, list[str]]]) -> list[dict[str, str]]:
    """(label, agents) of each episodes file -> {agent: its name on the page} per file. From several score
    folders an agent is named by its folder too: a folder of one agent by the folder's name, else
    "<folder>/<agent>"; from one folder, agents keep their names.

    >>> agent_names([("run1", ["a"]), ("run2", ["a", "b"])])
    [{'a': 'run1'}, {'a': 'run2/a', 'b': 'run2/b'}]
    >>> agent_names([("run1", ["a", "b"])])
    [{}]
    """
    if len({label for label, _ in agents_by_file}) <= 1:
        return [{} for _ in agents_by_file]
    per_label: dict[str, set] = {}
    for label, agents in agents_by_file:
        per_label.setdefault(label, set()).update(agents)
    return [
        {a: label if len(per_label[label]) == 1 else f"{label}/{a}" for a in agents} for label, agents in agents_by_file
    ]
