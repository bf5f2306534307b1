"""The benchmarks the score job knows, and which one a dataset is scored by (its records' format).

>>> benchmark_for(["r2r"]).name, benchmark_for(["reverie"]).name, benchmark_for(["cvdn"]).name
('r2r', 'reverie', 'cvdn')
>>> benchmark_for(["r2r", "reverie"])
Traceback (most recent call last):
...
ValueError: --dataset mixes benchmarks (r2r, reverie): score each benchmark's files in a run of its own
"""

from __future__ import annotations

from vlnkit.datasets.reverie import REVERIE_TEST_FORMAT, TEST_SPLIT_REFUSED
from vlnkit.scoring.benchmark import R2R_BENCHMARK, Benchmark
from vlnkit.scoring.cvdn import CVDN
from vlnkit.scoring.reverie import REVERIE

BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (R2R_BENCHMARK, REVERIE, CVDN)}


def benchmark_for(formats) -> Benchmark:
    """The one benchmark that scores dataset files of these formats (`vlnkit.datasets.rxr.record_format`);
    ValueError (one line) for a REVERIE test split, or for files of two benchmarks."""
    formats = set(formats)
    if REVERIE_TEST_FORMAT in formats:
        raise ValueError(TEST_SPLIT_REFUSED)
    found = sorted({b.name for b in BENCHMARKS.values() for f in formats if f in b.formats})
    if len(found) > 1:
        raise ValueError(
            f"--dataset mixes benchmarks ({', '.join(found)}): score each benchmark's files in a run of its own"
        )
    return BENCHMARKS[found[0]] if found else R2R_BENCHMARK
