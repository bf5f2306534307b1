"""score_instructions --outcomes: the score job's episode rows joined to the scored instructions.

    python -m benchmarks.bench_outcome_join [--rows=1000000] [--repeat=3]

Synthetic: 10 systems x rows/10 instructions, one episode row each but 1% missing (dead letters). Times
reading the Parquet file in Arrow batches (`episode_batches`) and the join with each system's means
(`join_outcomes`, `system_means`: one full outer hash join, takes by row number) against the simple
alternative, a Python dict keyed by (system, instr_id) over `to_pylist()` rows; both must give the same
outcome for every instruction (checked before timing). Prints best-of-N wall time, the ratio, and the peak
traced memory of one join (tracemalloc: Arrow's buffers are not traced; the RSS line counts them).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.measure import best
from vlnkit.captioning.outcomes import episode_batches, join_outcomes, system_means

METRICS = ("sr", "spl", "ndtw", "sdtw", "ne")


def data(rows: int, folder: str) -> tuple[pa.Table, str]:
    rng = np.random.default_rng(0)
    systems = np.repeat(np.array([f"sys{k}" for k in range(10)]), rows // 10)
    ids = np.tile(np.array([f"{p}_0" for p in range(rows // 10)]), 10)
    scored = pa.table(
        {
            "system": systems,
            "instr_id": ids,
            "path_id": np.tile(np.arange(rows // 10).astype(str), 10),
            "bleu_4": rng.random(len(ids)),
        }
    )
    keep = rng.random(len(ids)) >= 0.01
    path = os.path.join(folder, "episodes-00000-of-00001.parquet")
    episodes = {"agent": systems[keep], "instr_id": ids[keep], **{m: rng.random(int(keep.sum())) for m in METRICS}}
    pq.write_table(pa.table(episodes), path)
    return scored, path


def arrow_join(scored: pa.Table, path: str):
    episodes = pa.concat_tables(list(episode_batches(path, None, METRICS)))
    joined, lost = join_outcomes(scored, episodes)
    return joined, lost, system_means(joined)


def dict_join(scored: pa.Table, path: str) -> dict:
    table = {(r["agent"], r["instr_id"]): r for r in pq.read_table(path).to_pylist()}
    return {
        (r["system"], r["instr_id"]): table[(r["system"], r["instr_id"])]["ndtw"]
        for r in scored.select(["system", "instr_id"]).to_pylist()
        if (r["system"], r["instr_id"]) in table
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        scored, path = data(args.rows, folder)
        joined, lost, _ = arrow_join(scored, path)
        plain = dict_join(scored, path)
        ours = dict(
            zip(zip(joined["system"].to_pylist(), joined["instr_id"].to_pylist()), joined["episode_ndtw"].to_pylist())
        )
        assert ours == plain and len(lost) == args.rows - len(plain), "the two joins disagree"
        tracemalloc.start()
        arrow_join(scored, path)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        a = best(lambda: arrow_join(scored, path), args.repeat)
        b = best(lambda: dict_join(scored, path), args.repeat)
    print(f"{args.rows} instructions, {len(plain)} joined, {len(lost)} dead letters")
    print(f"read + join + means (Arrow): {a:.2f} s   dict join over to_pylist rows: {b:.2f} s   ratio {b / a:.1f}x")
    print(
        f"peak traced Python memory of one Arrow join: {peak / 2**20:.0f} MiB; process peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
