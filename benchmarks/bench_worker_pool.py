"""Benchmark: the score job on a Beam worker pool (2 SDK worker processes, Fn API) against in-process.

    python -m benchmarks.bench_worker_pool                    # 10x R2R val_unseen (23,490 episodes)
    python -m benchmarks.bench_worker_pool --copies=40 --modes=in-process

The input is R2R val_unseen with the random agent's predictions of `../shared/data`, replicated `--copies`
times under new path ids (the same episodes, many times: scoring cost per episode is realistic).
Both modes run in this process as the launcher, once each; the ratio is in-process wall time over
worker-pool wall time (above 1: the pool is faster). Both must give the same summary.

Peak memory: the launcher's own peak RSS (ru_maxrss, which includes the in-process run), and for
the pool the peak RSS of each SDK worker process (VmHWM from /proc, sampled every 0.2 s).

Beam 2.77's embedded job service (`--job_endpoint=embed`) builds its FnApiRunner without the
pipeline options, so it asks an EXTERNAL environment for one SDK worker whatever
`--direct_num_workers` says; this benchmark sets the runner's worker count from that flag (a patch
in the launcher only, nothing in the project) so two pool workers share the bundles, as two
Dataflow or Flink workers would.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("VLNKIT_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
AGENT = os.path.join(DATA, "agent_outputs", "rszia+rpl2024-final-group9", "val_unseen_random_agent.json")


def make_input(work: str, copies: int, split: int = 1) -> tuple[str, str, int]:
    """R2R val_unseen and its random-agent predictions, `copies` times under fresh path ids.

    With `split` > 1 both are written as that many files (returned as globs): a JSON file is read
    by one worker, so file size, not total size, bounds what one worker holds while reading.
    """
    dataset = json.load(open(os.path.join(DATA, "r2r", "R2R_val_unseen.json")))
    preds = {p["instr_id"]: p["trajectory"] for p in json.load(open(AGENT))}
    out_d, out_p = [], []
    for c in range(copies):
        for r in dataset:
            pid = (c + 1) * 10_000_000 + r["path_id"]
            out_d.append({**r, "path_id": pid})
            for k in range(len(r["instructions"])):
                traj = preds.get(f"{r['path_id']}_{k}")
                if traj is not None:
                    out_p.append({"instr_id": f"{pid}_{k}", "trajectory": traj})
    for name, rows in (("dataset", out_d), ("predictions", out_p)):
        step = -(-len(rows) // split)
        for i in range(split):
            with open(os.path.join(work, f"{name}-{i:03d}.json"), "w") as f:
                json.dump(rows[i * step : (i + 1) * step], f)
    return os.path.join(work, "dataset-*.json"), "agent=" + os.path.join(work, "predictions-*.json"), len(out_p)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    kids = [int(x) for x in out.split()]
    return kids + [g for k in kids for g in descendants(k)]


def vm_hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class PeakSampler(threading.Thread):
    """Peak RSS of every process below `root` (the pool's SDK workers), sampled until stopped."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.peaks, self.stop = root, {}, threading.Event()

    def run(self):
        while not self.stop.is_set():
            for pid in descendants(self.root):
                mb = vm_hwm_mb(pid)
                if mb is not None:
                    self.peaks[pid] = max(self.peaks.get(pid, 0.0), mb)
            time.sleep(0.2)


def patch_embedded_worker_count() -> None:
    from apache_beam.options.pipeline_options import DirectOptions
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    original = fn_runner.FnApiRunner.run_via_runner_api

    def run_via_runner_api(self, pipeline_proto, options):
        self._num_workers = int(options.view_as(DirectOptions).direct_num_workers or 1)
        return original(self, pipeline_proto, options)

    fn_runner.FnApiRunner.run_via_runner_api = run_via_runner_api


def run_score(flags: list[str]) -> tuple[float, dict]:
    from pipelines import score

    start = time.perf_counter()
    summary = score.main(flags)
    return time.perf_counter() - start, summary


def comparable(summary: dict) -> str:
    return json.dumps({k: v for k, v in summary.items() if k not in ("output_dir",)}, sort_keys=True, default=str)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--split", type=int, default=1, help="Write the input as this many files")
    parser.add_argument("--modes", default="in-process,worker-pool")
    args = parser.parse_args()
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory() as work:
        dataset, preds, n = make_input(work, args.copies, args.split)
        common = [f"--dataset={dataset}", f"--predictions={preds}", f"--connectivity_dir={DATA}/connectivity"]
        print(f"score on {n:,} episodes ({args.copies} x R2R val_unseen, {args.split} file(s) each)", flush=True)
        times, summaries = {}, {}
        if "in-process" in modes:
            times["in-process"], summaries["in-process"] = run_score(
                ["--runner=DirectRunner", *common, f"--output_dir={work}/in_process"]
            )
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"in-process: {times['in-process']:.1f} s, launcher peak RSS {rss:.0f} MB", flush=True)
        if "worker-pool" in modes:
            patch_embedded_worker_count()
            port = free_port()
            env = {**os.environ, "PYTHONPATH": ROOT}
            pool = subprocess.Popen(
                [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                time.sleep(3)
                sampler = PeakSampler(pool.pid)
                sampler.start()
                flags = [
                    "--runner=PortableRunner",
                    "--job_endpoint=embed",
                    "--environment_type=EXTERNAL",
                    f"--environment_config=localhost:{port}",
                    f"--direct_num_workers={args.workers}",
                ]
                times["worker-pool"], summaries["worker-pool"] = run_score(
                    [*flags, *common, f"--output_dir={work}/pool"]
                )
                sampler.stop.set()
                sampler.join()
            finally:
                os.killpg(pool.pid, signal.SIGTERM)
                pool.wait()
            peaks = sorted(sampler.peaks.values(), reverse=True)
            workers = ", ".join(f"{p:.0f}" for p in peaks)
            print(
                f"worker pool x{args.workers}: {times['worker-pool']:.1f} s, {len(peaks)} worker process(es), "
                f"peak RSS per worker (MB): {workers}",
                flush=True,
            )
        if len(times) == 2:
            a, b = (comparable(summaries[m]) for m in ("in-process", "worker-pool"))
            same = a.replace(f"{work}/in_process", "<out>") == b.replace(f"{work}/pool", "<out>")
            print(
                f"ratio in-process / worker pool: {times['in-process'] / times['worker-pool']:.2f}x; same summary: {same}"
            )
            if not same:
                raise SystemExit("the worker pool's summary differs from the in-process run")


if __name__ == "__main__":
    main()
