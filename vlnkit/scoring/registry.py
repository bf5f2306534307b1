"""The tasks the score job knows, and which one a dataset is scored by (its records' format).

>>> task_for(["r2r"]).name, task_for(["reverie"]).name, task_for(["cvdn"]).name
('r2r', 'reverie', 'cvdn')
>>> task_for(["r2r", "reverie"])
Traceback (most recent call last):
...
ValueError: --dataset mixes tasks (r2r, reverie): score each task's files in a run of its own
"""

from __future__ import annotations

from vlnkit.datasets.reverie import REVERIE_TEST_FORMAT, TEST_SPLIT_REFUSED
from vlnkit.scoring.cvdn import CVDN
from vlnkit.scoring.reverie import REVERIE
from vlnkit.scoring.task import R2R_TASK, Task

# R2R's declaration also scores R4R (and build_r4r's paths) and RxR guide files: the distance rule. The VLN-CE
# datasets (R2R-CE, RxR-Habitat) are scored from 3-D positions by `vlnkit.continuous`, not on the graphs.
TASKS: dict[str, Task] = {t.name: t for t in (R2R_TASK, REVERIE, CVDN)}


def task_for(formats) -> Task:
    """The one task that scores dataset files of these formats (`vlnkit.datasets.rxr.record_format`);
    ValueError (one line) for a REVERIE test split, or for files of two tasks."""
    formats = set(formats)
    if REVERIE_TEST_FORMAT in formats:
        raise ValueError(TEST_SPLIT_REFUSED)
    found = sorted({t.name for t in TASKS.values() for f in formats if f in t.formats})
    if len(found) > 1:
        raise ValueError(f"--dataset mixes tasks ({', '.join(found)}): score each task's files in a run of its own")
    return TASKS[found[0]] if found else R2R_TASK
