"""The jobs' Parquet writer (`transforms.write.WriteTables`) against Beam's own Parquet sink, on the score job's
episode rows.

Both write the same Arrow tables (1M score-job episode rows, cut into tables of one score bucket's size,
28,500 rows) to `<prefix>-SSSSS-of-NNNNN.parquet` in an in-process DirectRunner pipeline whose first step
makes each table (a copy of a slice, as the score step makes a bucket's rows), fused with the writer:

- Beam's sink (the baseline): `beam.io.WriteToParquetBatched(..., codec="snappy")`, dictionaries on every
  column (pyarrow's default), written on the bundle's own thread, files renamed by Beam's finalize step;
- ours: a dictionary only where values repeat (`vlnkit.io.parquet_encoding`), written on a background
  thread while the next table is made.

Each variant runs in a fresh process (`benchmarks.measure`: wall time and peak RSS of the process), in
interleaved rounds; the pipeline's own time is printed too. The rows written are checked equal.

    python -m benchmarks.bench_parquet_write /tmp/scale [--n 1000000] [--rounds 3]

The rows come from the score job's output in FOLDER/n<N>/out (made by `benchmarks.bench_score_scale`'s
inputs and one score run when missing).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import pyarrow as pa

from benchmarks.measure import ROOT, cached_bytecode, measured

ROWS = 28_500  # about one score bucket's rows at 1M predictions


def episode_rows(folder: str, n: int, data: str) -> str:
    """The score job's episode Parquet for `n` random-walk predictions (scored once, then reused)."""
    from benchmarks.bench_score_scale import job_cmd
    from benchmarks.make_scale_data import make

    where = os.path.join(folder, f"n{n}")
    pattern = os.path.join(where, "out", "current", "episodes-*-of-*.parquet")
    if not glob.glob(pattern):
        preds, dataset = make(where, n, data)
        subprocess.run(job_cmd(preds, dataset, data, os.path.join(where, "out")), cwd=ROOT, check=True)
    return pattern


def _tables(path: str):
    """The rows of one Parquet file as fresh tables of `ROWS` rows, as the score step makes a bucket's."""
    import pyarrow.parquet as pq

    from vlnkit.evaluation.schemas import EPISODE_SCORES

    for batch in pq.ParquetFile(path).iter_batches(ROWS):
        yield pa.Table.from_batches([batch]).cast(EPISODE_SCORES)


def run_variant(variant: str, source: str, out: str) -> None:
    """One pipeline writing the rows of the files `source` (a glob) matches with `variant`; prints
    {"pipeline_s", "rows", "bytes"}."""
    import apache_beam as beam
    import pyarrow.dataset as ds

    from transforms.write import WriteTables
    from vlnkit.evaluation.schemas import EPISODE_SCORES

    files = sorted(glob.glob(source))
    rows = ds.dataset(files, format="parquet").count_rows()
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    prefix = os.path.join(out, "episodes")

    if variant == "beam":
        write = beam.io.WriteToParquetBatched(
            prefix,
            schema=EPISODE_SCORES,
            codec="snappy",
            file_name_suffix=".parquet",
            shard_name_template="-SSSSS-of-NNNNN",
        )
    else:
        write = WriteTables(prefix, EPISODE_SCORES)
    start = time.perf_counter()
    with beam.Pipeline(runner="DirectRunner") as p:
        _ = p | beam.Create(files) | "Tables" >> beam.FlatMap(_tables) | "Write" >> write
    elapsed = time.perf_counter() - start
    written = ds.dataset(glob.glob(prefix + "-*-of-*.parquet"), format="parquet")
    assert written.count_rows() == rows
    sizes = sum(os.path.getsize(f) for f in glob.glob(prefix + "-*-of-*.parquet"))
    print(json.dumps({"pipeline_s": round(elapsed, 3), "rows": rows, "bytes": sizes}))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="where the score job's inputs and outputs are (made when missing)")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--variant", choices=("beam", "ours"), help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out = os.path.join(args.folder, "parquet_write")
    if args.variant:
        return run_variant(args.variant, args.source, os.path.join(out, args.variant))
    source = episode_rows(args.folder, args.n, os.path.abspath(args.data))
    cached_bytecode()
    me = [sys.executable, "-m", "benchmarks.bench_parquet_write", args.folder, f"--source={source}"]
    done = []
    for n in range(args.rounds):
        runs = {v: measured([*me, f"--variant={v}"]) for v in ("beam", "ours")}
        for r in runs.values():
            r.update(json.loads(r.pop("stdout").strip().splitlines()[-1]))
        assert runs["beam"]["rows"] == runs["ours"]["rows"]
        done.append(runs)
        print(
            f"round {n + 1}: "
            + ", ".join(f"{v} {r['wall_s']:.2f} s (pipeline {r['pipeline_s']:.2f} s)" for v, r in runs.items())
        )
    table = {}
    print(f"\n{'writer':14} {'process s':>10} {'pipeline s':>11} {'ratio':>7} {'MB written':>11} {'peak RSS MB':>12}")
    for v, name in (("beam", "Beam's sink"), ("ours", "WriteTables")):
        wall = statistics.median(r[v]["wall_s"] for r in done)
        pipe = statistics.median(r[v]["pipeline_s"] for r in done)
        ratio = statistics.median(r["beam"]["pipeline_s"] / r[v]["pipeline_s"] for r in done)
        rss = max(r[v]["peak_rss_mb"] for r in done)
        table[v] = {"wall_s": wall, "pipeline_s": pipe, "ratio": ratio, "peak_rss_mb": rss}
        mb = done[-1][v]["bytes"] / 1e6
        print(f"{name:14} {wall:10.2f} {pipe:11.2f} {ratio:6.2f}x {mb:11.1f} {rss:12.0f}")
    print(f"({done[-1]['ours']['rows']:,} rows; ratio: Beam's sink's pipeline time over this writer's, median round)")
    return table


if __name__ == "__main__":
    main()
