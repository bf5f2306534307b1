"""The declared Parquet schemas of hard negatives: perturb's `perturbations` and build_compat's `compat`."""

from __future__ import annotations

import pyarrow as pa

from vlnkit.io.schemas import versioned_schema

_CHANGE = pa.struct(
    [
        pa.field("start", pa.int64()),
        pa.field("end", pa.int64()),
        pa.field("before", pa.string()),
        pa.field("after", pa.string()),
    ]
)

PERTURBATIONS = versioned_schema(
    "perturbations",
    2,  # v2: `language`, the source instruction's language tag ("en" for R2R; RxR's en-IN, hi-IN, ...)
    [
        pa.field("source_instr_id", pa.string(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("family", pa.string(), nullable=False),
        pa.field("method", pa.string(), nullable=False),
        pa.field("operation", pa.string(), nullable=False),
        pa.field("variant", pa.int64(), nullable=False),
        pa.field("instruction", pa.string(), nullable=False),
        pa.field("path", pa.list_(pa.string()), nullable=False),
        pa.field("source_instruction", pa.string(), nullable=False),
        pa.field("source_path", pa.list_(pa.string()), nullable=False),
        # Instruction family: character spans [start, end) of the source instruction and their replacements.
        pa.field("changes", pa.list_(_CHANGE), nullable=False),
        # Trajectory family: indices into `path` whose viewpoint differs from `source_path` at that index.
        pa.field("changed_positions", pa.list_(pa.int64()), nullable=False),
    ],
    {
        "source_instr_id": "the source episode's instr_id ('<path_id>_<k>')",
        "scan": "the Matterport3D scan of the episode",
        "language": "the source instruction's language tag ('en' for R2R; RxR's en-IN, hi-IN, ...)",
        "family": "what was perturbed: 'instruction' (the text) or 'trajectory' (the path)",
        "method": "the perturbation method (e.g. direction_swap, entity_swap, phrase_swap)",
        "operation": "what the method did to this variant",
        "variant": "which variant of the source episode this is (0, 1, ...)",
        "instruction": "the instruction of the perturbed episode",
        "path": "the viewpoint ids of the perturbed episode",
        "source_instruction": "the source episode's instruction",
        "source_path": "the source episode's viewpoint ids",
        "changes": "instruction family: character spans [start, end) of the source instruction and their replacements",
        "changed_positions": "trajectory family: indices into `path` whose viewpoint differs from `source_path`",
    },
)

COMPAT = versioned_schema(
    "compat",
    2,  # v2: `language`, the instruction's language tag ("en" for R2R; RxR's en-IN, hi-IN, ...)
    [
        pa.field("instr_id", pa.string(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        pa.field("language", pa.string(), nullable=False),
        pa.field("instruction", pa.string(), nullable=False),
        pa.field("path", pa.list_(pa.string()), nullable=False),
        pa.field("label", pa.int64(), nullable=False),
        pa.field("family", pa.string(), nullable=False),
        pa.field("method", pa.string(), nullable=False),
    ],
    {
        "instr_id": "the episode's instr_id ('<path_id>_<k>')",
        "scan": "the Matterport3D scan of the episode",
        "language": "the instruction's language tag ('en' for R2R; RxR's en-IN, hi-IN, ...)",
        "instruction": "the instruction of the pair",
        "path": "the viewpoint ids of the pair",
        "label": "1 if instruction and path belong together (the original), 0 for a hard negative",
        "family": "what the negative perturbed: 'instruction' or 'trajectory' (the original's own family for label 1)",
        "method": "the perturbation method that made the negative",
    },
)
