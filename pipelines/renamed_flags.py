"""Old flag names and old flag values kept working for one release, each with a one-line warning naming
the new spelling (`add_renamed`, `renamed_values`): a scheduled job's command line keeps running while its
owner moves to the new name.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


class _Renamed(argparse.Action):
    """An old flag name kept for one release: it warns, naming the new flag, then acts as the new one does
    (`target`), or stores its value for the job to read with its old meaning (no `target`)."""

    def __init__(self, option_strings, dest, new: str, target: argparse.Action | None = None, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.new, self.target = new, target

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"warning: {option_string} is deprecated and goes in the next release: use {self.new}", file=sys.stderr)
        if self.target is not None:
            self.target(parser, namespace, values, self.new)
        else:
            setattr(namespace, self.dest, values)


def add_renamed(parser: argparse.ArgumentParser, old: str, new: str, dest: str | None = None) -> None:
    """Keep `old` working for one release as the flag `new` (with a warning naming it); hidden from --help.

    With `dest`, the old flag keeps its old meaning under that name instead, for the job to translate.

    >>> from pipelines.flags import job_parser
    >>> parser = job_parser("demo", "Demo.")
    >>> _ = parser.add_argument("--probe_types", default="stop")
    >>> add_renamed(parser, "--probes", "--probe_types")
    >>> from contextlib import redirect_stderr
    >>> with redirect_stderr(sys.stdout):  # (where the doctest sees it)
    ...     args = parser.parse_args(["--probes=room"])
    warning: --probes is deprecated and goes in the next release: use --probe_types
    >>> args.probe_types
    'room'
    """
    target = None if dest else parser._option_string_actions[new]
    parser.add_argument(
        old,
        dest=dest or target.dest,
        action=_Renamed,
        new=new,
        target=target,
        type=None if target is None else target.type,
        default=None if target is None else argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )


def renamed_values(renamed: dict[str, str], flag: str, convert: Callable[[str], object] = str):
    """An argparse `type` that keeps old spellings of a flag's values working for one release: an old
    value warns, naming the new one, then counts as the new one (whose `choices` check follows).

    >>> parser = argparse.ArgumentParser()
    >>> _ = parser.add_argument("--mode", choices=("fast", "exact"), type=renamed_values({"quick": "fast"}, "--mode"))
    >>> from contextlib import redirect_stderr
    >>> with redirect_stderr(sys.stdout):  # (where the doctest sees it)
    ...     args = parser.parse_args(["--mode=quick"])
    warning: --mode=quick is deprecated and goes in the next release: use --mode=fast
    >>> args.mode
    'fast'
    """

    def value(text: str):
        if text in renamed:
            new = renamed[text]
            print(
                f"warning: {flag}={text} is deprecated and goes in the next release: use {flag}={new}", file=sys.stderr
            )
            text = new
        return convert(text)

    value.__name__ = flag.lstrip("-")  # argparse names the type in its own errors
    return value
