"""Stage, then publish: a run touches nothing a reader sees until it has completely succeeded.

A run of a job on `--output_dir=D` (the layout is in `vlnkit.io.layout`):

1. (the launcher) takes the lock of D (`vlnkit.io.lock`; another live run: exit 2 naming it), then
   removes what dead runs left (version folders never published, half-made links, Beam temporary
   folders of the older layout);
2. writes every output into its own version folder `D/versions/<id>/`, including files named outside D
   (`--json_output=FILE` is written there as `<id>/<basename of FILE>`);
3. (the pipeline's last step, `vlnkit.runs.ending`) when the run is judged complete, writes `_SUCCESS` into that folder and switches the pointer
   `D/current` to it in one step (on local disk a symlink renamed over the old one; on gs:// one
   object written with a generation-match precondition). Then, on local disk, `D/<name>` links are
   made for the new version's top-level names and FILE becomes a link to `D/current/<basename>`
   (on gs:// FILE is replaced by a copy: one object, atomic by itself);
4. removes versions beyond `--keep_versions` (the current one included) and releases the lock.

A run that fails, is refused or is killed at any moment leaves `D/current`, and so every published
file, exactly as it was; the next run removes its folder. A `Publication` pickles (its lock without the
launcher's heartbeat thread), so the steps after the pipeline's writes can run on a worker.
"""

from __future__ import annotations

import logging
import os

from vlnkit.io import fileio, layout
from vlnkit.io.layout import fault_point
from vlnkit.io.lock import DEFAULT_LEASE_SECONDS, LOCK, Locked, OutputLock
from vlnkit.runs.staging import Staging

log = logging.getLogger("vlnkit")
DEFAULT_KEEP_VERSIONS = 2
# Names the layout itself uses at the top of an output folder: never an output's name.
RESERVED = frozenset({layout.POINTER, layout.VERSIONS, layout.FAILED, LOCK})


class Refused(RuntimeError):
    """The run cannot start as asked (another live run holds the output, the folder cannot be made, an
    output name collides with the layout's): the job ends with this one line, exit code 2."""


class Publication:
    """The version folder of one run, the lock that makes it the only writer, and its publication."""

    def __init__(
        self,
        output_dir: str,
        keep_versions: int = DEFAULT_KEEP_VERSIONS,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        in_process: bool = True,
    ):
        if keep_versions < 1:
            raise Refused(f"--keep_versions={keep_versions}: must be 1 or more (the current version)")
        self.root = output_dir.rstrip("/") if fileio.is_remote(output_dir) else output_dir
        self.keep = keep_versions
        self.version = layout.new_version_id()
        self.folder = layout.version_folder(self.root, self.version)
        self.lock = OutputLock(self.root, self.version, lease_seconds, in_process=in_process)
        self.generation = 0
        self.outside: dict[str, str] = {}  # a file named outside the folder -> where this run writes it
        self.locked = False

    # ---------------------------------------------------------------- staging
    def begin(self) -> None:
        """Take the lock, clean what dead runs left, make this run's folder."""
        try:
            self.lock.acquire()
        except Locked as exc:
            raise Refused(str(exc)) from None
        self.locked = True
        fault_point("locked")
        try:
            layout.remove_versions(self.root, layout.stale_versions(self.root, self.keep))
            _remove_beam_temp(self.root)
            self.generation = layout.pointer_generation(self.root)
            if not fileio.is_remote(self.root):
                os.makedirs(self.folder)
        except OSError as exc:  # e.g. versions/ is a file, or a folder this process cannot write
            self.end()
            where = fileio.join(self.root, layout.VERSIONS)
            raise Refused(
                f"--output_dir={self.root}: cannot make this run's folder in {where} ({exc.strerror or exc})"
            ) from None
        fault_point("staged")

    def stage(self, path: str) -> str:
        """Where this run writes an output the job names as `path` (inside or outside the output folder)."""
        prefix = self.root.rstrip("/") + "/"
        if path.startswith(prefix):
            return fileio.join(self.folder, path[len(prefix) :])
        name = os.path.basename(path.rstrip("/"))
        if name in RESERVED or name in (layout.SUCCESS, layout.MANIFEST, "summary.json"):
            raise Refused(f"{path}: an output named {name!r} would collide with the output folder's own files")
        staged = fileio.join(self.folder, name)
        self.outside[path] = staged
        return staged

    def staging(self, outputs=()) -> Staging:
        """What a job's pipeline is told about where it writes: this run's folder and, for each output the
        job names outside the output folder, the file this run writes for it."""
        for path in outputs:
            self.stage(path)
        return Staging(self.root, self.version, self.folder, dict(self.outside))

    # ---------------------------------------------------------------- ending
    def publish(self, owned: list[str]) -> None:
        """Make this run's folder the published version (its `_SUCCESS` is already written), then tidy."""
        self.lock.check()
        fault_point("publishing")
        layout.point(self.root, self.version, self.generation)
        fault_point("pointed")
        if not fileio.is_remote(self.root):
            layout.link_top_level(self.root, self.version, owned)
        else:
            _remove_matching(self.root, owned)  # outputs of the older layout, directly in the folder
        fault_point("linked")
        for final, staged in self.outside.items():
            _place_outside(self.root, final, staged)
        fault_point("placed")
        layout.remove_versions(self.root, layout.stale_versions(self.root, self.keep, running=self.version))
        fault_point("pruned")

    def fail(self) -> str:
        """Keep a failed run's folder for inspection (until the next run); where it is."""
        layout.mark_failed(self.root, self.version)
        return self.folder

    def abandon(self) -> None:
        """A run that stops before it is judged leaves nothing of its own behind (a version the pointer
        already names is published, whatever happened after)."""
        if layout.current_version(self.root) == self.version:
            return
        try:
            fileio.remove_tree(self.folder)
        except Exception as exc:  # noqa: BLE001 -- the next run removes it; the run's own error goes on
            log.warning("could not remove %s (%s: %s)", self.folder, type(exc).__name__, exc)

    def end(self) -> None:
        if self.locked:
            self.lock.release()
            self.locked = False

    def hand_over(self) -> None:
        """The launcher stops renewing the lock and leaves it held: the run's job, which renews it from
        its workers, releases it when it publishes (or its lease runs out if the job dies)."""
        self.lock.stop_heartbeat()
        self.locked = False


def _place_outside(root: str, final: str, staged: str) -> None:
    """Make a file named outside the output folder show the published version's copy."""
    name = os.path.basename(staged.rstrip("/"))
    if fileio.is_remote(final) or fileio.is_remote(root):
        fileio.copy(staged, final)  # one object replaced whole: a reader sees the old or the new one
        return
    folder = os.path.dirname(os.path.abspath(final))
    target = os.path.relpath(os.path.join(os.path.abspath(root), layout.POINTER, name), folder)
    tmp = os.path.join(folder, f".{os.path.basename(final)}.{os.getpid()}.tmp")
    if os.path.lexists(tmp):
        os.remove(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, final)


def _remove_matching(root: str, patterns: list[str]) -> None:
    found = [path for path, _ in fileio.match([fileio.join(root, p) for p in patterns])]
    found = [p for p in found if "/" not in p[len(root.rstrip("/")) + 1 :]]  # top-level objects only
    fileio.delete(found)


def _remove_beam_temp(root: str) -> None:
    """Beam's temporary folders a run of the older layout left directly in the output folder."""
    if fileio.is_remote(root):
        fileio.delete([path for path, _ in fileio.match([fileio.join(root, "beam-temp-*") + "/**"])])
        return
    import glob

    for folder in glob.glob(os.path.join(glob.escape(root), "beam-temp-*")):
        fileio.remove_tree(folder)


def remove_fragments(paths) -> None:
    """The JSON writer's `<file>.fragments-*` folders beside files named outside the output folder,
    as a killed run of the older layout left them (`transforms.write.WriteJsonFile`)."""
    import glob

    for path in paths:
        if fileio.is_remote(path) or fileio.is_glob(path):
            continue
        for folder in glob.glob(glob.escape(path) + ".fragments-*"):
            fileio.remove_tree(folder)
