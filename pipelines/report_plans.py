"""What the report job's pages are made of, planned before the pipeline: the agents' comparison page
(`comparison_plan`) and a score_instructions run's pages (`instruction_plan`). Each names its files,
records them as inputs of the run and refuses in one line what cannot be reported.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pipelines.verdict import JobError, user_error
from vlnkit.io import fileio

if TYPE_CHECKING:
    from pipelines.job import Run
    from vlnkit.reports.report_inputs import ReportInput


def _agents(path: str) -> list[str]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with fileio.open_read(path) as f:
        return pc.unique(pq.read_table(f, columns=["agent"])["agent"]).to_pylist()


def comparison_plan(ctx: Run, opts, inputs: list[ReportInput]) -> dict | None:
    """What the comparison page is made of (None when no --inputs file is a score job's episodes file with
    agent, instr_id, scan and path): its episode files, agent names, dataset files and options."""
    from vlnkit.reports.comparison_inputs import is_continuous, missing_columns
    from vlnkit.reports.report_inputs import (
        agent_names,
        parquet_columns,
        scored_on,
        scored_own_metrics,
        scored_target_path,
        scored_with_ground_truth,
    )
    from vlnkit.reports.stats import INSTRUCTION_SCORES, SCORES

    scored = {i.path: (i, parquet_columns(i.path)) for i in inputs if i.kind == SCORES and not i.compare}
    continuous = [i for i, columns in scored.values() if is_continuous(columns)]
    graph = [i for i, columns in scored.values() if not is_continuous(columns) and not missing_columns(columns)]
    files = continuous or graph
    if continuous and graph:
        raise JobError(
            f"--inputs: {continuous[0].path} holds a continuous (VLN-CE) dataset's episodes and other inputs a graph "
            "dataset's: one comparison page compares agents on one dataset; report them apart"
        )
    if not files:
        instructions = any(i.kind == INSTRUCTION_SCORES for i in inputs)  # its pages draw paths of --dataset
        unused = [f for f, v in (("--dataset", opts.dataset and not instructions), ("--baseline", opts.baseline)) if v]
        if unused:
            print(
                f"No score episodes with agent, scan and path in --inputs: no comparison page ({', '.join(unused)} unused)"
            )
        return None
    from vlnkit.comparison.config import BootstrapConfig
    from vlnkit.continuous.episodes import AUTO

    with user_error():
        bootstrap = BootstrapConfig.from_flags(opts)
    by_file = {i.path: _agents(i.path) for i in files}
    names = agent_names([(i.label, by_file[i.path]) for i in files])
    agents = sorted({names[k].get(a, a) for k, i in enumerate(files) for a in by_file[i.path]})
    with user_error():
        bootstrap.check_agents(agents)
    folders = list(dict.fromkeys(os.path.dirname(i.path) for i in files))
    if opts.dataset:
        dataset = ctx.inputs("dataset", opts.dataset, accept=("episodes",) if continuous else ())
        ground_truth = [AUTO] * len(dataset)
    else:
        named = [f for folder in folders for f in scored_on(folder)]
        dataset = ctx.inputs("dataset", list(dict.fromkeys(named)), accept=("episodes",) if continuous else ())
        ground_truth = scored_with_ground_truth(folders, dataset) if continuous else []
    if continuous and any(ctx.kinds.get(f) != "episodes" for f in dataset):
        bad = next(f for f in dataset if ctx.kinds.get(f) != "episodes")
        raise JobError(f"--dataset: {bad} is not a VLN-CE episode file, but the episodes compared are continuous")
    for gt in ground_truth:
        if gt != AUTO:
            ctx.inputs("ce_gt", gt)
    options = {"bootstrap": bootstrap, "title": f"{opts.title}: agents compared"}
    if not continuous:
        options["own"] = scored_own_metrics(folders)  # the task's own metrics: their labels and units
    with user_error():
        target_path = None if continuous else scored_target_path(folders)
    plan = {"files": [i.path for i in files], "names": names, "dataset": dataset, "options": options}
    plan["target_path"] = target_path  # CVDN: each episode's reference is its target path
    return {**plan, "continuous": bool(continuous), "ground_truth": ground_truth}


def instruction_plan(ctx: Run, opts, inputs: list[ReportInput]) -> dict | None:
    """A score_instructions run's pages (None without one among --inputs): its summary and shards, the
    systems' files its summary names (references, outcomes, paths), its --references and the report's
    --dataset (paths the files do not carry). A file that has moved since the run is refused in one line."""
    from vlnkit.reports.report_inputs import instruction_run

    run = instruction_run(inputs)
    if run is None:
        return None
    try:
        systems = ctx.agents(run.pop("predictions"))
        references = ctx.inputs("references", run["references"])[0] if run["references"] else None
    except JobError as exc:
        raise JobError(
            f"{run['summary']} names a file of the run that is not there ({exc}): moved, or a path relative to "
            "where score_instructions ran; run the report from there"
        ) from None
    dataset = ctx.inputs("dataset", opts.dataset) if opts.dataset else []
    return {**run, "systems": systems, "references": references, "dataset": dataset}
