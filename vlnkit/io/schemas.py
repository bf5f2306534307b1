"""Declared, versioned pyarrow schemas: how every Parquet output says which layout it has.

A schema's name and version are stored in the file's metadata; bump the version whenever a column is
added, removed or changes meaning, so downstream readers can tell which layout they have. Each
package declares the schemas of the outputs it describes, in its own `schemas` module, with
`versioned_schema`: `vlnkit.datasets.schemas` (R4R paths), `vlnkit.evaluation.schemas` (episode
scores), `vlnkit.perturbations.schemas` (perturbations, compatibility sets), `vlnkit.probes.schemas`
and `vlnkit.paraphrases.schemas`.

>>> import pyarrow as pa
>>> demo = versioned_schema("demo", 2, [pa.field("x", pa.int64())])
>>> schema_version(demo), row(demo, {"x": 1, "y": 2})
('2', {'x': 1})
"""

from __future__ import annotations

import pyarrow as pa


def versioned_schema(name: str, version: int, fields: list[pa.Field]) -> pa.Schema:
    return pa.schema(
        fields, metadata={b"vlnkit.schema": name.encode(), b"vlnkit.schema_version": str(version).encode()}
    )


def schema_version(schema: pa.Schema) -> str:
    return (schema.metadata or {}).get(b"vlnkit.schema_version", b"?").decode()


def row(schema: pa.Schema, record: dict) -> dict:
    """The record restricted to the schema's columns (what a Parquet writer expects)."""
    return {name: record[name] for name in schema.names}
