"""Where a run writes: the one object a job's pipeline is given (`build(pipeline, out)`).

A run never writes where a reader looks (`vlnkit.runs.publication`): every output goes into the run's
own version folder, `D/versions/<id>/`, including a file a flag names outside D (`--json_output=FILE`
is written as `<id>/<basename of FILE>`). A job asks this object where to write, and never rewrites
its flags: `--output_dir` keeps meaning the published folder D.

    >>> out = Staging("out/r4r", "v1", "out/r4r/versions/v1", {"R4R.json": "out/r4r/versions/v1/R4R.json"})
    >>> out.join("paths"), out.staged("R4R.json"), out.staged("out/r4r/figures/a.png")
    ('out/r4r/versions/v1/paths', 'out/r4r/versions/v1/R4R.json', 'out/r4r/versions/v1/figures/a.png')
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vlnkit.io import fileio


@dataclass(frozen=True)
class Staging:
    """This run's version folder (`folder`, inside the published folder `root`) and, for each output a
    job names outside `root`, the file the run writes instead (`outside`)."""

    root: str
    version: str
    folder: str
    outside: dict[str, str] = field(default_factory=dict)

    def join(self, *names: str) -> str:
        """A name inside this run's folder (`out.join("summary.json")`)."""
        return fileio.join(self.folder, *names)

    def staged(self, path: str) -> str:
        """Where this run writes the output a flag names as `path` (inside the published folder or outside
        it, as the job declared it). An output the job did not declare is a programming error."""
        prefix = self.root.rstrip("/") + "/"
        if path.startswith(prefix):
            return fileio.join(self.folder, path[len(prefix) :])
        if path in self.outside:
            return self.outside[path]
        raise KeyError(f"{path}: not an output this run declared (extra_outputs)")
