"""Declared, versioned pyarrow schemas: how every Parquet output says which layout it has.

A schema's name and version are stored in the file's metadata; bump the version whenever a column is
added, removed or changes meaning, so downstream readers can tell which layout they have. Each
package declares the schemas of the outputs it describes, in its own `schemas` module, with
`versioned_schema`: `vlnkit.datasets.schemas` (R4R paths), `vlnkit.evaluation.schemas` (episode
scores), `vlnkit.perturbations.schemas` (perturbations, compatibility sets), `vlnkit.probes.schemas`
and `vlnkit.paraphrases.schemas`.

Each column says what it means (`meanings`: a field's `description` metadata), so the files describe
themselves to any Parquet reader and the dataset card of a published version lists them
(`vlnkit.io.dataset_card`).

>>> import pyarrow as pa
>>> demo = versioned_schema("demo", 2, [pa.field("x", pa.int64())], {"x": "a number"})
>>> schema_version(demo), row(demo, {"x": 1, "y": 2}), meaning(demo.field("x"))
('2', {'x': 1}, 'a number')
"""

from __future__ import annotations

import pyarrow as pa

DESCRIPTION = b"description"


def versioned_schema(
    name: str, version: int, fields: list[pa.Field], meanings: dict[str, str] | None = None
) -> pa.Schema:
    """A schema named `name` at `version`; with `meanings`, every column's meaning (all of them, no other)."""
    fields = list(fields)
    if meanings is not None:
        names = [f.name for f in fields]
        if set(meanings) != set(names):
            missing, extra = sorted(set(names) - set(meanings)), sorted(set(meanings) - set(names))
            raise ValueError(f"schema {name}: meanings missing for {missing}, given for unknown columns {extra}")
        fields = [f.with_metadata({DESCRIPTION: meanings[f.name].encode()}) for f in fields]
    return pa.schema(
        fields, metadata={b"vlnkit.schema": name.encode(), b"vlnkit.schema_version": str(version).encode()}
    )


def meaning(field: pa.Field) -> str | None:
    """A column's declared meaning, or None."""
    found = (field.metadata or {}).get(DESCRIPTION)
    return found.decode() if found else None


def schema_version(schema: pa.Schema) -> str:
    return (schema.metadata or {}).get(b"vlnkit.schema_version", b"?").decode()


def row(schema: pa.Schema, record: dict) -> dict:
    """The record restricted to the schema's columns (what a Parquet writer expects)."""
    return {name: record[name] for name in schema.names}
