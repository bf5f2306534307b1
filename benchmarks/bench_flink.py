"""The score job on a Flink session cluster against in-process and the plain script, and its memory as the
input grows: wall time, and peak resident memory summed over every process of the run.

One run of this script:

1. starts the session cluster of `configs/flink-cluster.yaml` (its own ports and folders under FOLDER) and
   times it (to every TaskManager registered and the job service listening);
2. for each N of `--n` (default 1M), scores N predictions (made by `benchmarks.make_scale_data`, reused when
   present) on the cluster, `--bootstrap=0`, once the previous job's SDK workers have exited (`settle`),
   and samples every 0.2 s the resident memory of the whole cluster (JobManager, TaskManagers, job
   server, every SDK worker the TaskManagers started) plus the launcher; the peak of that sum is the
   run's peak;
3. for the first N, runs the in-process job and the plain script (`benchmarks.plain_score`) on the same
   files, and checks that all three give the same means (to 1e-6) and the cluster the in-process
   summary's metrics bit for bit.

    python -m benchmarks.bench_flink /tmp/scale [--n 1000000 3000000 10000000] [--data ../shared/data]

Memory is summed because a cluster's processes are many: the peak of the largest process alone (what
`bench_score_scale` reports) would hide the rest. Sampling every 0.2 s can miss a peak shorter than that.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import yaml

from benchmarks.bench_score_scale import check as check_in_process
from benchmarks.bench_score_scale import job_cmd
from benchmarks.make_scale_data import make
from benchmarks.measure import measured

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_PROFILE = os.path.join(ROOT, "configs", "flink.yaml")  # the jobs' runner flags (and the SDK workers' cache time)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return 0.0


def _tree(roots: list[int]) -> set[int]:
    """`roots` and all their descendants (each process once)."""
    seen, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo.extend(_children(pid))
    return seen


def tree_rss_mb(roots: list[int]) -> float:
    """Resident memory of `roots` and all their descendants, in MB (each process once)."""
    return sum(_rss_mb(p) for p in _tree(roots))


def sdk_workers(roots: list[int]) -> list[int]:
    """The SDK worker processes under `roots` (`vlnkit-sdk-worker`, started by the TaskManagers)."""
    found = []
    for pid in _tree(roots):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"sdk_worker" in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def settle(pids: dict, cache_ms: int) -> tuple[float, int]:
    """Wait until the SDK workers of the cluster's last job have exited; (seconds waited, workers left).

    Why: Beam keeps a job's SDK workers for `environment_cache_millis` (configs/flink.yaml) after their last
    bundle, also once the job has ended, so a job started within that time runs beside the previous job's
    idle workers (1.3 GB for two after a 1M run), and its peak would count them. Each run is measured from a
    settled cluster; the wait is bounded by the cache time and 30 s more, and what is left is reported."""
    start = time.perf_counter()
    while (left := sdk_workers(list(pids.values()))) and time.perf_counter() - start < cache_ms / 1000 + 30:
        time.sleep(0.5)
    return time.perf_counter() - start, len(left)


class PeakSampler:
    """The peak, over time, of `tree_rss_mb(roots + extra roots)`, sampled every `every` seconds."""

    def __init__(self, roots: list[int], every: float = 0.2):
        self.roots, self.every, self.peak, self.extra = list(roots), every, 0.0, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss_mb(self.roots + self.extra))
            time.sleep(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def on_cluster(config: dict, pids: dict, preds: str, dataset: str, data: str, out: str) -> dict:
    import subprocess

    cmd = job_cmd(preds, dataset, data, out)
    cmd = [c for c in cmd if c != "--runner=DirectRunner"]
    cmd += [f"--config={RUN_PROFILE}", f"--job_endpoint=127.0.0.1:{config['job_port']}"]
    with open(RUN_PROFILE) as f:
        cache_ms = int(yaml.safe_load(f).get("environment_cache_millis", 0))
    waited, left = settle(pids, cache_ms)
    settled = tree_rss_mb(list(pids.values()))
    with PeakSampler(list(pids.values())) as sampler:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sampler.extra.append(proc.pid)
        stdout, stderr = proc.communicate()
        wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"the cluster run failed ({proc.returncode}):\n{stderr[-3000:]}")
    idle = tree_rss_mb(list(pids.values()))
    return {
        "wall_s": wall,
        "peak_mb_summed": sampler.peak,
        "idle_cluster_mb": idle,
        "settled_cluster_mb": settled,
        "settle_wait_s": waited,
        "earlier_workers_left": left,
        "stdout": stdout,
    }


def main(argv=None) -> dict:
    from vlnkit.cluster import flink as cluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="where the generated inputs, outputs and the cluster's state go")
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    parser.add_argument("--cluster_config", default=os.path.join(ROOT, "configs", "flink-cluster.yaml"))
    parser.add_argument("--skip_baselines", action="store_true", help="only the cluster runs")
    args = parser.parse_args(argv)
    data = os.path.abspath(args.data)
    config = cluster.load_config(args.cluster_config)
    config["state_dir"] = os.path.join(os.path.abspath(args.folder), "flink-cluster")
    results: dict = {}
    started = time.perf_counter()
    pids = cluster.start(config)
    results["cluster start-up"] = {"wall_s": time.perf_counter() - started, "idle_mb": tree_rss_mb(list(pids.values()))}
    print(
        f"cluster start-up: {results['cluster start-up']['wall_s']:.1f} s, "
        f"{results['cluster start-up']['idle_mb']:.0f} MB resident (4 JVMs)",
        flush=True,
    )
    try:
        for i, n in enumerate(args.n):
            folder = os.path.join(args.folder, f"n{n}")
            preds, dataset = make(folder, n, data)
            run = on_cluster(config, pids, preds, dataset, data, os.path.join(folder, "out_flink"))
            results[f"cluster {n}"] = run
            print(
                f"{n:>10,} on the cluster: {run['wall_s']:.1f} s, peak {run['peak_mb_summed']:.0f} MB summed "
                f"over every process (cluster before it {run['settled_cluster_mb']:.0f} MB, after waiting "
                f"{run['settle_wait_s']:.0f} s for the last job's SDK workers to exit, {run['earlier_workers_left']} "
                f"left; after it {run['idle_cluster_mb']:.0f} MB)",
                flush=True,
            )
            if i == 0 and not args.skip_baselines:
                out = os.path.join(folder, "out")
                plain = measured(
                    [sys.executable, "-m", "benchmarks.plain_score", preds, dataset, f"{data}/connectivity"]
                )
                local = measured(job_cmd(preds, dataset, data, out))
                check_in_process({"plain script": plain}, out, n, multi=False)
                flink_metrics = json.load(open(os.path.join(folder, "out_flink", "summary.json")))["metrics"]
                assert flink_metrics == json.load(open(os.path.join(out, "summary.json")))["metrics"]
                for name, r in (("plain script", plain), ("in-process", local)):
                    results[f"{name} {n}"] = r
                    print(
                        f"{n:>10,} {name}: {r['wall_s']:.1f} s, peak {r['peak_rss_mb']:.0f} MB; cluster/{name} "
                        f"wall {run['wall_s'] / r['wall_s']:.2f}x (speed {r['wall_s'] / run['wall_s']:.2f}x)",
                        flush=True,
                    )
        first = results.get(f"cluster {args.n[0]}")
        for n in args.n[1:]:
            ratio = results[f"cluster {n}"]["peak_mb_summed"] / first["peak_mb_summed"]
            print(f"peak at {n:,} / peak at {args.n[0]:,}: {ratio:.2f}x (goal: at most 1.3x at 10M)", flush=True)
    finally:
        cluster.stop(config)
    return results


if __name__ == "__main__":
    main()
