"""The declared Parquet schema of build_crafty's instructions (`instructions-*.parquet`)."""

from __future__ import annotations

import pyarrow as pa

from vlnkit.io.schemas import versioned_schema

CRAFTY_INSTRUCTIONS = versioned_schema(
    "crafty_instructions",
    1,
    [
        pa.field("instr_id", pa.string(), nullable=False),
        pa.field("path_id", pa.int64(), nullable=False),
        pa.field("scan", pa.string(), nullable=False),
        pa.field("draw", pa.int64(), nullable=False),
        pa.field("path", pa.list_(pa.string()), nullable=False),
        pa.field("heading", pa.float64(), nullable=False),
        pa.field("instruction", pa.string(), nullable=False),
        pa.field("words", pa.int64(), nullable=False),
        pa.field("moves", pa.list_(pa.string()), nullable=False),
        pa.field("landmarks", pa.list_(pa.int64()), nullable=False),
        pa.field("categories", pa.list_(pa.string()), nullable=False),
        pa.field("fallback", pa.bool_(), nullable=False),
    ],
    {
        "instr_id": "<path_id>_<draw>, as R2R names an instruction",
        "path_id": "the path's path_id in the input file",
        "scan": "the Matterport3D scan of the path",
        "draw": "which of the path's --num_instructions instructions (0-based); seeds the template choices",
        "path": "the path's viewpoint ids",
        "heading": "the starting heading in radians (the input's)",
        "instruction": "the generated instruction",
        "words": "its number of whitespace-separated words",
        "moves": "per motion (2 per viewpoint but the last, which has 1): STOP first, then the direction wheel's "
        "class (STRAIGHT, SLIGHT_LEFT, LEFT, SLIGHT_RIGHT, RIGHT, AROUND) or UP/DOWN",
        "landmarks": "per motion, the objId (the .house / REVERIE object index) the guide looked at; -1 when the "
        "path sees no object (fallback)",
        "categories": "per motion, that object's clean Matterport3D category ('' for the fallback)",
        "fallback": "true when no object is seen along the path, so the instruction names no landmark",
    },
)

R2R_JSON_KEYS = ("distance", "heading", "instructions", "path", "path_id", "scan")
