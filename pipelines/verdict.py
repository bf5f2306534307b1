"""How a job ends, one rule for every job: refused before it runs (`JobError`, exit code 2: `user_error`
and `refused` turn the core's refusals into one), or run and judged (`RunFailed`, exit code 3: the rule
itself is the core's, `vlnkit.runs.verdict`, since the pipeline's last step judges the run on any runner;
`failure_of` says what a run that stopped on an exception ends with).
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


def failure_of(exc: BaseException) -> BaseException:
    """What a run that stopped on `exc` ends with: an unusable input (`UnusableInput`), a full disk or a
    failed job is a RunFailed (one line, exit code 3); anything else as it was."""
    from pipelines.runners import JobFailed
    from vlnkit.io.dead_letters import UnusableInput
    from vlnkit.runs.verdict import out_of_space

    if isinstance(exc, UnusableInput) or f"{UnusableInput.__name__}: " in str(exc):  # in a worker's report too
        line = str(exc).split(f"{UnusableInput.__name__}: ")[-1].split(" [while running")[0].splitlines()[0]
        return RunFailed(f"{line}; the published output is unchanged")
    full = out_of_space(exc)
    if full:
        return RunFailed(f"the output ran out of space: {full}; the published output is unchanged")
    if isinstance(exc, JobFailed):
        return RunFailed(f"{exc}; the published output is unchanged")
    return exc


@contextmanager
def refused():
    """A run the publication refuses to start (the lock, the folder, a colliding name): one line, exit 2."""
    from vlnkit.runs.publication import Refused

    try:
        yield
    except Refused as exc:
        raise JobError(str(exc)) from None
