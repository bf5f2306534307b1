"""The last step of every job's pipeline: once every write has finished, judge and publish the run.

`publish(pipeline, ending)` is applied by the job's `Run` after the job's `build`: it finds every
PCollection no step consumes (the results of the writes: file names, the summary, a write's count),
reduces each to nothing where it is made, and hands them all to one step as a side input, which a runner
makes available only when every one of them is complete. That step runs `vlnkit.runs.ending.finish`:
read back, verdict, manifest, `_SUCCESS`, pointer, pruning, lock released. So the run publishes on
any runner, whether or not its launcher waits.

When the job does not run in the launcher's process, its workers keep the run's lock alive
(`vlnkit.io.lock.keep_alive`, started in the `setup` of the steps that end each write, of the last
step and of a first step, `hold_lock`), and the inputs' checksums are computed by a branch of the pipeline unless
the launcher already has them.
"""

from __future__ import annotations

from dataclasses import dataclass

import apache_beam as beam
from apache_beam.pipeline import PipelineVisitor

from transforms.gather import flatten
from vlnkit.io.lock import keep_alive
from vlnkit.provenance import describe_inputs
from vlnkit.runs.ending import Ending, Failed, finish


def unconsumed(pipeline: beam.Pipeline) -> list[beam.pvalue.PCollection]:
    """Every PCollection of the pipeline that no step reads (as main or side input), in the order made."""
    made: dict[int, beam.pvalue.PCollection] = {}
    read: set[int] = set()

    class Visitor(PipelineVisitor):
        def visit_transform(self, node) -> None:
            for pcoll in node.outputs.values():
                if isinstance(pcoll, beam.pvalue.PCollection):
                    made.setdefault(id(pcoll), pcoll)
            read.update(id(p) for p in node.main_inputs.values())
            read.update(id(s.pvalue) for s in node.side_inputs)

    pipeline.visit(Visitor())
    return [pcoll for key, pcoll in made.items() if key not in read]


@dataclass
class _RenewLock(beam.DoFn):
    """Renews the run's lock from every worker process that runs it (a thread per process, from setup); its
    input is consumed and nothing comes out."""

    ending: Ending

    def setup(self):
        keep_alive(self.ending.publication.lock)

    def process(self, element):
        return ()


def _nothing(element) -> tuple:
    return ()


@dataclass
class _Finish(beam.DoFn):
    ending: Ending
    keep_lock: bool

    def setup(self):
        if self.keep_lock:
            keep_alive(self.ending.publication.lock)

    def process(self, _, written, digests=None):
        verdict = finish(self.ending, digests)
        if verdict and not self.ending.waited:
            raise Failed(f"{self.ending.job}: run failed: {verdict} (the published output is unchanged)")
        yield verdict


def hold_lock(pipeline: beam.Pipeline, ending: Ending) -> None:
    """A first step whose workers start renewing the run's lock (before the job's own steps are applied,
    so a runner that orders independent stages as they were applied runs it first)."""
    _ = pipeline | "KeepLock" >> beam.Impulse() | "KeepLockAlive" >> beam.ParDo(_RenewLock(ending))


def publish(pipeline: beam.Pipeline, ending: Ending, keep_lock: bool, hash_inputs: bool):
    """Make publishing the run the last step of `pipeline` (after everything the job's `build` applied).
    `keep_lock`: the job's workers renew the lock; `hash_inputs`: a branch computes the inputs' checksums.
    Returns the PCollection of the verdict (None for a published run)."""
    ends = unconsumed(pipeline)

    def end_of_write():  # a write's results reduced to nothing where they are made
        return beam.ParDo(_RenewLock(ending)) if keep_lock else beam.FlatMap(_nothing)

    done = [pcoll | f"Written{n}" >> end_of_write() for n, pcoll in enumerate(ends)]
    side = {"written": beam.pvalue.AsList(flatten(done, pipeline, "AllWritten"))}
    if hash_inputs:
        inputs = ending.inputs
        digests = (
            pipeline | "InputFiles" >> beam.Create([None]) | "HashInputs" >> beam.Map(lambda _: describe_inputs(inputs))
        )
        side["digests"] = beam.pvalue.AsSingleton(digests)
    return pipeline | "Finished" >> beam.Impulse() | "Publish" >> beam.ParDo(_Finish(ending, keep_lock), **side)
