"""How a finished run is judged, one rule for every job: `judge` says why a run does not count as a
success (exit code 3), or None when it does.

A run fails when what it wrote does not match what it counted (`written`: a missing, short or extra
output), when nothing usable was read, or when more than `--max_failure_fraction` of the records
offered were dead-lettered (or of another part of the work a job names, e.g. translation calls).

    >>> judge(Outcome(read=4, failed=6), max_failure_fraction=0.5)  # 6 refused of 10 offered
    '6 of the 10 records offered (60.0%) were dead-lettered, more than --max_failure_fraction=0.5'
    >>> judge(Outcome(read=5, failed=5), max_failure_fraction=0.5) is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Outcome:
    """How a finished run is judged: records it read, records it could not use (dead letters)."""

    read: int
    failed: int
    reason: str | None = None  # set by a job's own rule; None means judge by the two counts
    failed_before_read: int | None = None  # dead letters not among `read` (refused while reading); None: all
    # Other parts of the work judged by the same --max_failure_fraction: (failed, total, what failed), e.g.
    # (30, 30, "translations failed") for a paraphrase run whose translation calls all failed.
    shares: tuple[tuple[int, int, str], ...] = ()


BEFORE_READ = ("read", "dedupe")  # dead-letter stages whose records a job's "records read" never counts


def default_outcome(summary: dict) -> Outcome:
    return with_stages(
        Outcome(int(summary.get("records_read", 0) or 0), int(summary.get("dead_letters", 0) or 0)), summary
    )


def with_stages(outcome: Outcome, summary: dict) -> Outcome:
    """Tell apart the dead letters refused while reading or as duplicates (never counted as read) from
    later ones (already among the records read), so each record offered counts once."""
    stages = summary.get("dead_letters_by_stage")
    if stages is not None and outcome.failed_before_read is None:
        outcome.failed_before_read = sum(int(stages.get(s, 0)) for s in BEFORE_READ)
    return outcome


def judge(outcome: Outcome, max_failure_fraction: float) -> str | None:
    """Why the run does not count as successful, or None when it does."""
    if outcome.reason:
        return outcome.reason
    before = outcome.failed if outcome.failed_before_read is None else outcome.failed_before_read
    total = outcome.read + before
    if outcome.read <= 0:
        return (
            f"nothing usable was read ({outcome.failed} record(s) dead-lettered)"
            if outcome.failed
            else "nothing was read: the inputs hold no records"
        )
    for failed, of, what in outcome.shares:
        if of and failed / of > max_failure_fraction:
            return f"{failed} of {of} {what}"
    fraction = min(1.0, outcome.failed / total)
    if fraction > max_failure_fraction:
        return (
            f"{outcome.failed} of the {total} records offered ({fraction:.1%}) were dead-lettered, more than "
            f"--max_failure_fraction={max_failure_fraction}"
        )
    return None


def written(problems: list) -> str | None:
    """One line for the problems found reading back a run's outputs (`vlnkit.io.integrity.check`), or None.

    The first problem names its file and both counts; the manifest lists them all.

        >>> from vlnkit.io.integrity import Problem
        >>> written([Problem("v/paths-00000-of-00001.parquet", 44, 5026, "holds 44 row(s), the run counted 5026")])
        'an output does not hold what the run counted: v/paths-00000-of-00001.parquet: holds 44 row(s), the run counted 5026'
    """
    if not problems:
        return None
    more = f" (and {len(problems) - 1} more problem(s): see manifest.json)" if len(problems) > 1 else ""
    return f"an output does not hold what the run counted: {problems[0].line()}{more}"


# An OSError with one of these numbers means the output's storage is full (or a file size limit).
OUT_OF_SPACE = {28: "no space left on the device", 27: "file too large for the file size limit", 122: "disk quota"}


def out_of_space(exc: BaseException) -> str | None:
    """One line when an error (or an error it wraps, or Beam's text of a worker's error) says the
    output's storage is full; None for any other error."""
    seen = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in OUT_OF_SPACE:
            return f"{OUT_OF_SPACE[seen.errno]} ({seen.filename or seen})"
        seen = seen.__cause__ or seen.__context__
    text = str(exc)
    for errno, what in OUT_OF_SPACE.items():
        if f"[Errno {errno}]" in text:
            return what
    return None
