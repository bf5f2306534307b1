"""The tasks the score job knows, and which one a dataset is scored by (its records' format).

>>> task_for(["r2r"]).name, task_for(["reverie"]).name, task_for(["cvdn"]).name
('r2r', 'reverie', 'cvdn')
>>> task_for(["r2r", "reverie"])
Traceback (most recent call last):
...
ValueError: --dataset mixes tasks (r2r, reverie): score each task's files in a run of its own
"""

from __future__ import annotations

from vlnkit.datasets.formats import R2R, file_record, record_format
from vlnkit.datasets.reverie import REVERIE_TEST_FORMAT, TEST_SPLIT_REFUSED
from vlnkit.datasets.trajectories import is_parquet
from vlnkit.scoring.cvdn import CVDN
from vlnkit.scoring.reverie import REVERIE
from vlnkit.scoring.task import R2R_TASK, Task
from vlnkit.scoring.vlnce import VLNCE

# R2R's declaration also scores R4R (and build_r4r's paths) and RxR guide files: the distance rule. The VLN-CE
# datasets (R2R-CE, RxR-Habitat) are VLNCE's, scored from 3-D positions by `vlnkit.continuous`.
TASKS: dict[str, Task] = {t.name: t for t in (R2R_TASK, REVERIE, CVDN, VLNCE)}


def task_for(formats) -> Task:
    """The one task that scores dataset files of these formats (`vlnkit.datasets.formats.record_format`);
    ValueError (one line) for a REVERIE test split, or for files of two tasks."""
    formats = set(formats)
    if REVERIE_TEST_FORMAT in formats:
        raise ValueError(TEST_SPLIT_REFUSED)
    return _one({t.name for t in TASKS.values() for f in formats if f in t.formats})


def _one(names: set[str]) -> Task:
    """The task of these names (R2R's when none); ValueError when they are two or more."""
    if len(names) > 1:
        found = ", ".join(sorted(names))
        raise ValueError(f"--dataset mixes tasks ({found}): score each task's files in a run of its own")
    return TASKS[names.pop()] if names else R2R_TASK


def task_of_files(paths: list[str], layouts: dict[str, str | None] | None = None) -> Task:
    """The one task that scores these dataset files, told by each file's first record: a task that declares
    `detect` claims a file whose first record it recognises (before the formats; the file is read as its
    records' format), any other file goes by its format (`task_for`); build_r4r's Parquet paths are left
    out (R2R's, or paths of the task the other files name). ValueError (one line) as `task_for`.

    `layouts` ({file: its continuous layout or None}, as the job's input checks sniffed them) come first: a
    task that declares a file's layout takes the run, and no first record is read (its wiring's own checks
    name any other file)."""
    by_layout = {t.name for t in TASKS.values() for p in paths if (layouts or {}).get(p) in t.layouts}
    if by_layout:
        return _one(by_layout)
    claimed, formats = set(), []
    for path in (p for p in paths if not is_parquet(p)):
        obj = file_record(path)
        own = [t.name for t in TASKS.values() if t.detect is not None and obj is not None and t.detect(obj)]
        if own:
            claimed.add(own[0])
        else:
            formats.append(R2R if obj is None else record_format(obj))
    return _one(claimed | ({task_for(formats).name} if formats else set()))
