"""The score job's compiled kernels, loaded before they are needed: `warm_up()`, run on a thread at start-up.

A process's first call of a compiled function starts numba (its imports, LLVM) and every kernel's first
call loads it from the on-disk cache: about half a second in all, spent after Beam's imports, which take
one to two seconds of the same process. Run on a thread while those imports go on, the two overlap (LLVM's
work releases the GIL), and a run on a small split, where start-up is most of the wait, ends sooner. Every
kernel is called once on a tiny input, the way the job calls it; a failure here is left for the real call
to report.

numba's start (its first compiled call in a process sets up its CPU target) imports SciPy's linear
algebra (about 0.25 s here, holding the GIL Beam's import needs too) only to choose how a compiled
`np.correlate` / `np.convolve` multiplies, and cffi (with its C parser) for cffi functions; the job's
kernels use neither. So the warm-up thread refuses both while numba starts (`NUMBA_UNUSED`): numba
goes on as without them (a compiled `np.dot` still imports SciPy when it is compiled), and every other
thread imports them as usual.
"""

from __future__ import annotations

import threading

from vlnkit.refused_imports import refused

NUMBA_UNUSED = ("scipy.linalg", "cffi")  # what numba's start imports that the job's kernels do not use


def warm_up() -> None:
    """Call each kernel of the score job once on a tiny input (loads or compiles it), numba started
    without `NUMBA_UNUSED` when this call is what starts it."""
    with refused(NUMBA_UNUSED, __name__, this_thread_only=True):
        _call_each_kernel()


def _call_each_kernel() -> None:
    import numpy as np

    from vlnkit.comparison.config import BootstrapConfig
    from vlnkit.datasets.columns import Paths, Vocabulary
    from vlnkit.datasets.line_scan import scan_records, scan_submissions
    from vlnkit.evaluation.scoring_config import ScoringConfig
    from vlnkit.io.exactsum import exact_sums_by
    from vlnkit.navigation.graph import GraphStore, NavGraph
    from vlnkit.scoring.bootstrap import bucket_sums
    from vlnkit.scoring.join import instr_ids
    from vlnkit.scoring.scans import ScanTables
    from vlnkit.scoring.score import metric_columns, score_pairs

    line = NavGraph("s", ("a", "b"), np.array([[0.0, 0, 0], [1, 0, 0]]), np.array([[0, 1]]))
    scans = ScanTables(GraphStore("", {"s": line}))
    path = Paths(np.array([0, 2]), np.array([0, 1], np.int32))
    path.take(np.array([0]))  # the batches' ragged gather (`vlnkit.datasets.ragged`)
    got = score_pairs(scans, np.array([scans.slot("s")]), path, path, ScoringConfig())
    exact_sums_by(np.zeros(1, np.int64), got.scores["ne"], 1)
    vocab = Vocabulary(["s"], [["a", "b"]])
    # The readers hand the scanners views of a reused bytearray (`json_chunks._line_blocks`): a writable
    # buffer is its own compiled signature, so the kernels are loaded for that one.
    scan_submissions(memoryview(bytearray(b'{"instr_id": "1_0", "trajectory": [["a", 0, 0]]}\n')), vocab)
    scan_records(
        memoryview(bytearray(b'{"scan": "s", "path_id": 1, "path": ["a"], "heading": 0, "instructions": ["x"]}\n')),
        vocab,
    )
    import pyarrow as pa

    table = pa.table(
        {
            "agent": ["x"],
            "instr_id": instr_ids(np.array([1]), np.array([0])),
            "scan": ["s"],
            **metric_columns(got.scores),
        }
    )
    bucket_sums(table, got.reference_length, BootstrapConfig(replicates=40), [])


def _quietly() -> None:
    try:
        warm_up()
    except Exception:  # noqa: BLE001 -- the job's own call of a kernel reports any real problem
        pass


def warm_up_in_background() -> threading.Thread:
    """Start `warm_up` on a daemon thread (a process that ends first does not wait for it)."""
    thread = threading.Thread(target=_quietly, name="vlnkit-warm-up", daemon=True)
    thread.start()
    return thread
