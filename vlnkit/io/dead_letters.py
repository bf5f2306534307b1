"""The dead-letter record: a record (or a whole file) that could not be used, where it was and why.

Every reader and transform reports what it cannot use as one of these, so a job's dead-letter file
has one shape whatever failed:

    >>> RecordError(source="R2R_val_seen.json", record="#12", reason="missing field 'path'").to_dict()
    {'stage': 'read', 'source': 'R2R_val_seen.json', 'record': '#12', 'reason': "missing field 'path'"}
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RecordError:
    """A record (or a whole file) that could not be used, and why."""

    source: str
    record: str  # "#<index>" or "path_id=<id>", or "" for the whole file
    reason: str
    stage: str = "read"
    # What other records find this one by, when it still says (a refused dataset record's (path_id, first_k)):
    # a prediction of a refused record is then told so, not "not in the dataset". Not part of the dead letter.
    key: tuple | None = field(default=None, compare=False)

    def message(self) -> str:
        where = f"{self.source} {self.record}".strip()
        return f"{where}: {self.reason}"

    def to_dict(self) -> dict:
        return {"stage": self.stage, "source": self.source, "record": self.record, "reason": self.reason}


class UnusableInput(ValueError):
    """An input the run's results depend on as a whole (not record by record: REVERIE's visibility files)
    cannot be read: no dead letter can stand for it, so the run fails (exit code 3) with this one line,
    which names the file."""
