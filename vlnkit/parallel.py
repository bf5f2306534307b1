"""Splitting one compiled pass over the cores of a worker, with identical results.

Why threads inside a Beam step: the compiled kernels (the line scanners, the metric kernels, the
bootstrap's passes) release the GIL and write disjoint parts of their outputs when given disjoint
ranges, so running the ranges on threads gives the same bits as one call, and a DirectRunner job in one
process (which runs its steps one at a time) uses every core for them. Small passes stay on the
calling thread, where starting threads costs more than it saves.

>>> parts(1000, threads=3, step=128)
[(0, 256), (256, 640), (640, 1000)]
>>> run_in_parallel(lambda first, stop: None, [(0, 5)])  # one range: called on this thread
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

__all__ = ["thread_count", "parts", "run_in_parallel", "MAX_THREADS", "PARALLEL_WORK"]

MAX_THREADS = 4  # a worker process's share of the cores
PARALLEL_WORK = 1 << 24  # units of work (rows x replicates) below which one thread does it all


def thread_count(work: int) -> int:
    """Threads for a pass of `work` units: the cores this process may use (at most MAX_THREADS), one per
    PARALLEL_WORK units, at least one."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_THREADS, cores, work // PARALLEL_WORK))


def parts(n: int, threads: int, step: int = 1) -> list[tuple[int, int]]:
    """`threads` consecutive (first, stop) ranges covering range(n), cut at multiples of `step`."""
    units = -(-n // step)
    threads = max(1, min(threads, units))
    bounds = [min(n, step * (units * k // threads)) for k in range(threads + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def run_in_parallel(call, ranges: list[tuple[int, int]]) -> None:
    """call(first, stop) for every range, on threads when there are several."""
    if len(ranges) == 1:
        call(*ranges[0])
        return
    with ThreadPoolExecutor(len(ranges)) as pool:
        list(pool.map(lambda r: call(*r), ranges))
