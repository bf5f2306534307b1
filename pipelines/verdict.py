"""How a job ends, one rule for every job: refused before it runs (`JobError`, exit code 2), or run and
judged (`RunFailed`, exit code 3: the rule itself is the core's, `vlnkit.runs.verdict`, since the
pipeline's last step judges the run on any runner).
"""

from __future__ import annotations

from contextlib import contextmanager


class JobError(RuntimeError):
    """Something structural is wrong (no input, bad flags, unusable output folder): the job cannot run.

    The job ends with one line naming the flag, the file and the reason, and exit code 2.
    """


@contextmanager
def user_error(prefix: str = "", errors: tuple[type[Exception], ...] = (ValueError,)):
    """Checks of a user's flags and files raise ValueError (or `errors`); here they become one JobError line.

    >>> with user_error("--methods=x: "):  # doctest: +IGNORE_EXCEPTION_DETAIL
    ...     raise ValueError("unknown method 'x'")
    Traceback (most recent call last):
    ...
    JobError: --methods=x: unknown method 'x'
    """
    try:
        yield
    except errors as exc:
        raise JobError(f"{prefix}{exc}") from None


class RunFailed(RuntimeError):
    """The pipeline finished, but its result does not count as a successful run (exit code 3)."""
