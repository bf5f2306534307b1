"""Flags and checks that perturb and build_compat share (declared once here; neither job imports the other)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.flags import add_shared
from pipelines.verdict import JobError, user_error
from vlnkit.perturbations.compat import (
    ALL_METHODS,
    INSTRUCTION_METHODS,
    TRAJECTORY_METHODS,
    parse_methods,
)

if TYPE_CHECKING:
    from pipelines.job import Run


def declare_perturbation_flags(parser) -> None:
    add_shared(
        parser,
        "dataset",
        "connectivity_dir",
        "seed",
        "spacy_model",
        "num_shards",
    )
    parser.add_argument(
        "--methods",
        default=",".join(ALL_METHODS),
        help=f"Comma-separated subset of {','.join(ALL_METHODS)}; the trajectory methods need --connectivity_dir",
    )


def check_perturbation_flags(ctx: Run) -> tuple[list[str], tuple[str, ...]]:
    """Structural checks before anything runs: inputs exist, methods are known and can run here.

    Returns the dataset files and the parsed methods.
    """
    from vlnkit.perturbations.nlp import load_pipeline, resolve_model

    opts = ctx.args
    with user_error(f"--methods={opts.methods}: "):
        methods = parse_methods(opts.methods)
    if getattr(opts, "per_instruction", 1) < 1:
        raise JobError("--per_instruction must be at least 1")
    files = ctx.inputs("dataset", opts.dataset)
    if any(m in TRAJECTORY_METHODS for m in methods):
        if not opts.connectivity_dir:
            raise JobError("--connectivity_dir is required by the trajectory methods")
        ctx.graphs(opts.connectivity_dir)
    if any(m in INSTRUCTION_METHODS for m in methods):
        opts.spacy_model = resolve_model(opts.spacy_model)  # the summary records the one used
        with user_error("--spacy_model: "):  # fail here, once, with the reason, rather than in every worker
            load_pipeline(opts.spacy_model, methods)
    return files, methods
