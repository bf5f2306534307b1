"""The Beam options a job hands its pipeline: `PipelineOptions` whose views are made once, and the flags of a
command line Beam does not know (`unknown_flags`).

Beam asks the options for a typed view (`options.view_as(TypeOptions)`, `StandardOptions`, ...) at
every transform it applies, every type check and every stage it plans, and each call builds a fresh
argparse parser over every option Beam knows (about 200 flags): on R2R val_unseen the score job asked
for 199 views while building its pipeline alone, and cutting them to one per class took its whole run
from 2.7 s to 2.35 s. A view holds no state of its own (every view of one options object reads and
writes the same `_all_options` dict, as Beam's `view_as` documents), so handing out the first view of
each class again changes no answer.

    >>> from apache_beam.options.pipeline_options import StandardOptions
    >>> options = JobOptions(["--runner=DirectRunner"])
    >>> options.view_as(StandardOptions) is options.view_as(StandardOptions)
    True
    >>> options.view_as(StandardOptions).streaming = True
    >>> options.get_all_options()["streaming"]
    True
"""

from __future__ import annotations

import functools

from pipelines.beam_import import import_beam

import_beam()  # the first import of Beam in a job's process: without the adapters no job uses

from apache_beam.options.pipeline_options import PipelineOptions, SetupOptions  # noqa: E402


class JobOptions(PipelineOptions):
    """PipelineOptions that build each class's view once (it adds no flags of its own), and that pickle
    with cloudpickle unless --pickle_library says otherwise.

    Why cloudpickle: a job run as `python -m pipelines.<job>` is `__main__`, and its steps hold functions
    defined there (an `Ending`'s `declared` lambda reads the module's `declared_outputs`). cloudpickle
    carries such a function's globals with it; dill (Beam 2.62's default pickler; Beam 2.65 and later
    default to cloudpickle) pickles them by reference to `__main__`, which on a remote worker is Beam's
    `sdk_worker_main`: the step then fails with a NameError. The launcher and every worker read the
    same option.

    >>> JobOptions([]).view_as(SetupOptions).pickle_library
    'cloudpickle'
    >>> JobOptions(["--pickle_library=dill"]).view_as(SetupOptions).pickle_library
    'dill'
    """

    def __init__(self, flags=None, **kwargs):
        super().__init__(flags, **kwargs)
        setup = self.view_as(SetupOptions)
        if setup.pickle_library == "default":
            setup.pickle_library = "cloudpickle"

    def view_as(self, cls):
        views = self.__dict__.setdefault("_views", {})  # set directly: PipelineOptions guards setattr
        view = views.get(cls)
        if view is None:
            view = views[cls] = super().view_as(cls)
        return view


@functools.cache
def beam_option_names() -> frozenset[str]:
    """Every option Beam's PipelineOptions classes declare (built once: it parses all of them)."""
    return frozenset(PipelineOptions([]).get_all_options(drop_default=False))


def unknown_flags(rest: list[str]) -> list[str]:
    """Flags in `rest` that Beam does not know either (names only: values may be secrets)."""
    if not rest:
        return []
    known = beam_option_names()
    retained = PipelineOptions(rest).get_all_options(drop_default=False, retain_unknown_options=True)
    unknown = set(retained) - known
    names = []
    for arg in rest:
        if arg.startswith("--"):
            name = arg[2:].split("=", 1)[0]
            if name in unknown and name not in names:
                names.append(name)
        elif arg.startswith("-"):
            names.append(arg.split("=", 1)[0].lstrip("-"))
    return names
