"""Files and formats: local or any Beam filesystem (`fileio`), what a user names as input files
(`inputs`: globs, published output folders), declared Parquet schemas (`schemas`),
dead-letter records (`dead_letters`), exact order-independent sums (`exactsum`), secret redaction (`redact`),
JSON text parsed by orjson with the standard library's answers (`json_text`), the layout of a job's
output folder and the one way to read its published version (`layout`: `published(D)`), the lock of
an output folder (`lock`), what a run wrote read back and a published version re-checked against its
manifest (`integrity`: `verify(D)`), which Parquet columns get a dictionary (`parquet_encoding`), the
dataset card `README.md` of a published version (`dataset_card`).

>>> from vlnkit.io.redact import redact
>>> redact({"api_key": "abc", "seed": 0})
{'api_key': '<redacted>', 'seed': 0}
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "fileio": ("open_read", "open_write", "read_bytes", "exists", "join", "match", "remove_tree", "is_remote"),
        "inputs": ("expand_inputs", "match_current"),
        "schemas": ("versioned_schema", "schema_version", "row"),
        "dead_letters": ("RecordError",),
        "exactsum": ("exact_sum", "exact_mean"),
        "redact": ("redact", "REDACTED"),
        "json_text": ("loads_exact",),
        "layout": ("published", "current_version", "NothingPublished"),
        "lock": ("OutputLock", "Locked"),
        "integrity": ("verify", "Problem"),
        "parquet_encoding": ("parquet_writer", "dictionary_columns"),
        "dataset_card": ("card_text", "write_card"),
    },
)
